import type { DslDocument } from './dsl.js';
import { isObject } from '../infra/objects.js';

// The datasets of a model-config app (`chat`, `completion`, `agent-chat`), as Dify's
// `DatasetConfigManager.convert` reads them. Apart from the engine: reading, mapping and checking
// apps needs no engine code.

/** One dataset the app names, with where (`model_config.…`) for messages. */
export interface AppDatasetRef {
  readonly id: string;
  readonly where: string;
}

/** `reranking_enable` / `reranking_mode` / `reranking_model` / `weights` of `dataset_configs`. */
export interface RerankSettings {
  readonly enabled: boolean;
  readonly mode: 'reranking_model' | 'weighted_score';
  /** `reranking_model` (`reranking_provider_name`, `reranking_model_name`); null when unset. */
  readonly model: { readonly provider: string; readonly name: string } | null;
  /** `weights` (vector / keyword); null when unset. */
  readonly weights: { readonly vector: number; readonly keyword: number } | null;
}

/** Dify's `DatasetEntity`: the datasets and how the app retrieves from them. */
export interface AppDatasetConfig {
  readonly datasets: readonly AppDatasetRef[];
  /** `dataset_configs.retrieval_model`: `single` (a model picks one dataset) or `multiple`. */
  readonly strategy: 'single' | 'multiple';
  /** `dataset_query_variable` (completion apps: the input whose value is the query). */
  readonly queryVariable: string | null;
  /** `multiple`: `top_k` (default 4). */
  readonly topK: number;
  /** `multiple`: `score_threshold` when `score_threshold_enabled`, else null. */
  readonly scoreThreshold: number | null;
  readonly rerank: RerankSettings;
}

/** A tool entry in Dify's old standard: `{"dataset": {"enabled", "id"}}` (a dataset, not a tool). */
export function isDatasetToolEntry(entry: unknown): entry is { dataset: Record<string, unknown> } {
  return isObject(entry) && Object.keys(entry).length === 1 && isObject(entry.dataset);
}

/** Every dataset id field of a model-config app, enabled or not, with the object holding it. */
function datasetSlots(doc: DslDocument): { holder: Record<string, unknown>; where: string; enabled: boolean }[] {
  const mc = doc.model_config;
  if (!isObject(mc)) return [];
  const out: { holder: Record<string, unknown>; where: string; enabled: boolean }[] = [];
  const dc = mc.dataset_configs;
  const list = isObject(dc) && isObject(dc.datasets) && Array.isArray(dc.datasets.datasets) ? dc.datasets.datasets : [];
  list.forEach((d: unknown, i: number) => {
    if (isDatasetToolEntry(d)) out.push({ holder: d.dataset, where: `model_config.dataset_configs.datasets.datasets[${i}].dataset.id`, enabled: d.dataset.enabled === true });
  });
  const am = mc.agent_mode;
  const tools = isObject(am) && Array.isArray(am.tools) ? am.tools : [];
  const agentOn = isObject(am) && am.enabled === true;
  tools.forEach((t: unknown, i: number) => {
    if (isDatasetToolEntry(t)) out.push({ holder: t.dataset, where: `model_config.agent_mode.tools[${i}].dataset.id`, enabled: agentOn && t.dataset.enabled === true });
  });
  return out;
}

/** The enabled datasets of a model-config app, in Dify's order (`dataset_configs` first, then `agent_mode.tools`). */
export function appDatasetRefs(doc: DslDocument): AppDatasetRef[] {
  return datasetSlots(doc)
    .filter((s) => s.enabled && typeof s.holder.id === 'string' && s.holder.id !== '')
    .map((s) => ({ id: s.holder.id as string, where: s.where }));
}

const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

/** The app's dataset settings, or undefined when it names no enabled dataset (as Dify). */
export function appDatasetConfig(doc: DslDocument): AppDatasetConfig | undefined {
  const datasets = appDatasetRefs(doc);
  if (datasets.length === 0) return undefined;
  const mc = doc.model_config ?? {};
  const dc = isObject(mc.dataset_configs) ? mc.dataset_configs : { retrieval_model: 'multiple' };
  const strategy = dc.retrieval_model === 'single' ? 'single' : 'multiple';
  const qv = mc.dataset_query_variable;
  const queryVariable = typeof qv === 'string' && qv !== '' ? qv : null;
  const topK = num(dc.top_k);
  const threshold = num(dc.score_threshold);
  const rm = isObject(dc.reranking_model) ? dc.reranking_model : undefined;
  const provider = rm && typeof rm.reranking_provider_name === 'string' ? rm.reranking_provider_name : '';
  const name = rm && typeof rm.reranking_model_name === 'string' ? rm.reranking_model_name : '';
  const w = isObject(dc.weights) ? dc.weights : undefined;
  const vector = w && isObject(w.vector_setting) ? num(w.vector_setting.vector_weight) : undefined;
  const keyword = w && isObject(w.keyword_setting) ? num(w.keyword_setting.keyword_weight) : undefined;
  return {
    datasets,
    strategy,
    queryVariable,
    topK: topK !== undefined && Number.isInteger(topK) && topK > 0 ? topK : 4,
    scoreThreshold: dc.score_threshold_enabled === true && threshold !== undefined ? threshold : null,
    rerank: {
      // Dify reads `reranking_enabled` here (default true); the console writes `reranking_enable`
      enabled: (dc.reranking_enable ?? dc.reranking_enabled ?? true) !== false,
      mode: dc.reranking_mode === 'weighted_score' ? 'weighted_score' : 'reranking_model',
      model: provider && name ? { provider, name } : null,
      weights: vector !== undefined && keyword !== undefined ? { vector, keyword } : null,
    },
  };
}

/**
 * A copy of a model-config app's DSL with dataset ids replaced per `map` (`--dataset OLD=NEW`),
 * and the old ids it replaced.
 */
export function mapAppDatasets(doc: DslDocument, map: ReadonlyMap<string, string>): { doc: DslDocument; used: Set<string> } {
  const used = new Set<string>();
  if (!isObject(doc.model_config)) return { doc, used };
  // a deep copy: the slots are edited in place
  const copy = structuredClone(doc) as DslDocument;
  for (const s of datasetSlots(copy)) {
    const next = typeof s.holder.id === 'string' ? map.get(s.holder.id) : undefined;
    if (next === undefined) continue;
    used.add(s.holder.id as string);
    s.holder.id = next;
  }
  return { doc: used.size > 0 ? copy : doc, used };
}
