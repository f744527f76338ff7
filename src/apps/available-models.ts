import type { App } from './app-service.js';
import { isObject } from '../infra/objects.js';
import { builtinProvider, normaliseProviderName } from '../llm/provider-table.js';

/** Dify's model types (`GET /workspaces/current/models/model-types/{model_type}`). */
export const MODEL_TYPES = ['text-embedding', 'rerank', 'llm', 'tts', 'speech2text', 'moderation'] as const;
export type ModelType = (typeof MODEL_TYPES)[number];

/** A model a provider serves here. */
export interface ModelRef {
  readonly provider: string;
  readonly name: string;
}

/** A provider's label: the built-in table's (plugin ids and aliases too), the offline embedder's, else its name. */
function providerLabel(provider: string): string {
  if (provider === 'dovetail') return 'Dovetail (offline, built in)';
  return builtinProvider(normaliseProviderName(provider))?.label ?? provider;
}

function modelRef(raw: unknown): ModelRef | undefined {
  return isObject(raw) && typeof raw.provider === 'string' && typeof raw.name === 'string' && raw.name !== '' ? { provider: raw.provider, name: raw.name } : undefined;
}

/** The language models an app's DSL names: its `model_config.model` and every `llm` node's `model`. */
export function appLanguageModels(app: App): ModelRef[] {
  const dsl = app.dsl as Record<string, unknown> & { model_config?: Record<string, unknown> };
  const out: ModelRef[] = [];
  const own = modelRef(dsl.model_config?.model);
  if (own) out.push(own);
  const graph = isObject(dsl.workflow) && isObject(dsl.workflow.graph) ? dsl.workflow.graph : undefined;
  for (const node of Array.isArray(graph?.nodes) ? graph.nodes : []) {
    const data = isObject(node) && isObject(node.data) ? node.data : undefined;
    const ref = data?.type === 'llm' ? modelRef(data.model) : undefined;
    if (ref) out.push(ref);
  }
  return out;
}

/**
 * Dify's available-models answer: one entry per provider (first seen first), each with its models
 * (each once), all `active` (only models a configured provider serves are passed in).
 */
export function availableModels(type: ModelType, refs: readonly ModelRef[], workspaceId: string): Record<string, unknown>[] {
  const byProvider = new Map<string, string[]>();
  for (const r of refs) {
    const list = byProvider.get(r.provider) ?? [];
    if (!list.includes(r.name)) list.push(r.name);
    byProvider.set(r.provider, list);
  }
  const label = (text: string) => ({ en_US: text, zh_Hans: text });
  return [...byProvider].map(([provider, models]) => ({
    provider,
    label: label(providerLabel(provider)),
    status: 'active',
    models: models.map((model) => ({
      model,
      label: label(model),
      model_type: type,
      features: null,
      fetch_from: 'customizable-model',
      model_properties: {},
      status: 'active',
      deprecated: false,
      load_balancing_enabled: false,
      has_invalid_load_balancing_configs: false,
    })),
    tenant_id: workspaceId,
  }));
}
