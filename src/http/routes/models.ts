import type { FastifyPluginAsync } from 'fastify';
import { Type, type Static } from '@sinclair/typebox';
import { appLanguageModels, availableModels, MODEL_TYPES, type ModelRef, type ModelType } from '../../apps/available-models.js';
import { invalidParam } from '../../infra/errors.js';
import { splitModelRef, type ModelProvider } from '../../llm/model-provider.js';
import type { Runtime } from '../../runtime.js';
import { requireKey } from '../auth.js';

/** The runtime members these routes use (server.ts hands them nothing else). */
export type ModelRouteDeps = Pick<Runtime, 'apps' | 'config' | 'embedder' | 'providers'>;

/**
 * The model type is a plain string to Ajv: the handler checks it is one of `MODEL_TYPES` with
 * Dify's message (Ajv's `enum` message would quote and list them differently).
 */
const ModelTypeParams = Type.Object({ model_type: Type.String({ description: `One of ${MODEL_TYPES.join(', ')}.` }) });

/**
 * `GET /workspaces/current/models/model-types/{model_type}` (knowledge keys): the models this
 * server can use, in Dify's shape. Dovetail has no model catalogue: `text-embedding` is the
 * embedding model knowledge bases index with; `llm` the language models the workspace's apps name
 * whose provider is configured; `tts` / `speech2text` the audio models (`TEXT_TO_SPEECH_MODEL`,
 * `SPEECH_TO_TEXT_MODEL`) when their provider is configured; the other types none.
 */
export const modelRoutes: FastifyPluginAsync<{ runtime: ModelRouteDeps }> = async (app, { runtime }) => {
  app.get<{ Params: Static<typeof ModelTypeParams> }>('/workspaces/current/models/model-types/:model_type', { schema: { params: ModelTypeParams } }, async (request) => {
    const type = request.params.model_type;
    if (!(MODEL_TYPES as readonly string[]).includes(type)) throw invalidParam(`model_type must be one of ${MODEL_TYPES.join(', ')}.`);
    const { workspaceId } = requireKey(request);
    /** The provider, when it has credentials. */
    const configured = (provider: string): ModelProvider | undefined => {
      try {
        return runtime.providers.get(provider);
      } catch {
        return undefined;
      }
    };
    /** An audio model setting (`provider/model`), when its provider is configured and has the capability. */
    const audio = (ref: string, can: 'speak' | 'transcribe'): ModelRef[] => {
      const m = splitModelRef(ref);
      return m && configured(m.provider)?.[can] ? [{ provider: m.provider, name: m.model }] : [];
    };
    let refs: ModelRef[] = [];
    if (type === 'text-embedding') refs = [{ provider: runtime.embedder.provider, name: runtime.embedder.model }];
    if (type === 'tts') refs = audio(runtime.config.audio.textToSpeechModel, 'speak');
    if (type === 'speech2text') refs = audio(runtime.config.audio.speechToTextModel, 'transcribe');
    if (type === 'llm') {
      refs = (await runtime.apps.list()).filter((a) => a.workspaceId === workspaceId).flatMap(appLanguageModels).filter((r) => configured(r.provider));
    }
    return { data: availableModels(type as ModelType, refs, workspaceId) };
  });
};
