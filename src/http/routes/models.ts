import type { FastifyPluginAsync } from 'fastify';
import { appLanguageModels, availableModels, MODEL_TYPES, type ModelRef, type ModelType } from '../../apps/available-models.js';
import { invalidParam } from '../../infra/errors.js';
import type { Runtime } from '../../runtime.js';
import { requireKey } from '../auth.js';

/**
 * `GET /workspaces/current/models/model-types/{model_type}` (knowledge keys): the models this
 * server can use, in Dify's shape. Dovetail has no model catalogue: `text-embedding` is the
 * embedding model knowledge bases index with; `llm` the language models the workspace's apps name
 * whose provider is configured; the other types none.
 */
export const modelRoutes: FastifyPluginAsync<{ runtime: Runtime }> = async (app, { runtime }) => {
  app.get<{ Params: { model_type: string } }>('/workspaces/current/models/model-types/:model_type', async (request) => {
    const type = request.params.model_type;
    if (!(MODEL_TYPES as readonly string[]).includes(type)) throw invalidParam(`model_type must be one of ${MODEL_TYPES.join(', ')}.`);
    const { workspaceId } = requireKey(request);
    let refs: ModelRef[] = [];
    if (type === 'text-embedding') refs = [{ provider: runtime.embedder.provider, name: runtime.embedder.model }];
    if (type === 'llm') {
      const configured = (provider: string) => {
        try {
          runtime.providers.get(provider);
          return true;
        } catch {
          return false;
        }
      };
      refs = (await runtime.apps.list()).filter((a) => a.workspaceId === workspaceId).flatMap(appLanguageModels).filter((r) => configured(r.provider));
    }
    return { data: availableModels(type as ModelType, refs, workspaceId) };
  });
};
