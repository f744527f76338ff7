import { invalidParam } from '../../infra/errors.js';
import { parseMetadataFilter, type MetadataFilter } from './metadata-filter.js';
import { isObject } from '../../infra/objects.js';
import { RERANK_MODES, RERANK_OFF, type RerankConfig, type RerankMode } from './rerank.js';

export const SEARCH_METHODS = ['keyword_search', 'semantic_search', 'full_text_search', 'hybrid_search'] as const;
export type SearchMethod = (typeof SEARCH_METHODS)[number];

export interface RetrievalModel {
  readonly searchMethod: SearchMethod;
  readonly topK: number;
  readonly scoreThresholdEnabled: boolean;
  readonly scoreThreshold: number;
  /** Hybrid weights (Dify's defaults 0.7 / 0.3). */
  readonly vectorWeight: number;
  readonly keywordWeight: number;
  /** `reranking_enable` / `reranking_mode` / `reranking_model` (weights: `vectorWeight` / `keywordWeight`). */
  readonly rerank: RerankConfig;
  /** `metadata_filtering_conditions` of a request (never stored with a dataset). */
  readonly metadataFilter?: MetadataFilter;
}

/** Validates Dify's `retrieval_model`; missing fields take Dify's defaults (top_k 4 … ). */
export function parseRetrievalModel(raw: unknown, topKMax: number, defaultMethod: SearchMethod): RetrievalModel {
  if (raw === undefined || raw === null) {
    return { searchMethod: defaultMethod, topK: 4, scoreThresholdEnabled: false, scoreThreshold: 0, vectorWeight: 0.7, keywordWeight: 0.3, rerank: RERANK_OFF };
  }
  if (!isObject(raw)) throw invalidParam('retrieval_model must be an object.');
  const method = raw.search_method ?? defaultMethod;
  if (!SEARCH_METHODS.includes(method as SearchMethod)) throw invalidParam(`retrieval_model.search_method must be one of ${SEARCH_METHODS.join(', ')}.`);
  const topK = raw.top_k ?? 4;
  if (typeof topK !== 'number' || !Number.isInteger(topK) || topK < 1 || topK > topKMax) {
    throw invalidParam(`retrieval_model.top_k must be an integer between 1 and ${topKMax}.`);
  }
  const enabled = raw.score_threshold_enabled ?? false;
  if (typeof enabled !== 'boolean') throw invalidParam('retrieval_model.score_threshold_enabled must be a boolean.');
  const threshold = raw.score_threshold ?? 0;
  if (threshold !== null && (typeof threshold !== 'number' || threshold < 0 || threshold > 1)) {
    throw invalidParam('retrieval_model.score_threshold must be a number between 0 and 1.');
  }
  let vectorWeight = 0.7;
  let keywordWeight = 0.3;
  if (isObject(raw.weights)) {
    const v = (raw.weights.vector_setting as Record<string, unknown> | undefined)?.vector_weight;
    const k = (raw.weights.keyword_setting as Record<string, unknown> | undefined)?.keyword_weight;
    if (typeof v === 'number') vectorWeight = v;
    if (typeof k === 'number') keywordWeight = k;
  }
  const metadataFilter = parseMetadataFilter(raw.metadata_filtering_conditions);
  const rerank = parseRerank(raw, { vector: vectorWeight, keyword: keywordWeight });
  return { searchMethod: method as SearchMethod, topK, scoreThresholdEnabled: enabled, scoreThreshold: threshold ?? 0, vectorWeight, keywordWeight, rerank, ...(metadataFilter ? { metadataFilter } : {}) };
}

/** `reranking_enable`, `reranking_mode` and `reranking_model` of a `retrieval_model`. */
function parseRerank(raw: Readonly<Record<string, unknown>>, weights: { vector: number; keyword: number }): RerankConfig {
  const enabled = raw.reranking_enable ?? false;
  if (typeof enabled !== 'boolean') throw invalidParam('retrieval_model.reranking_enable must be a boolean.');
  const mode = raw.reranking_mode ?? 'reranking_model';
  if (!RERANK_MODES.includes(mode as RerankMode)) throw invalidParam(`retrieval_model.reranking_mode must be one of ${RERANK_MODES.join(', ')}.`);
  const m = raw.reranking_model ?? null;
  if (m !== null && !isObject(m)) throw invalidParam('retrieval_model.reranking_model must be an object.');
  const provider = m?.reranking_provider_name ?? '';
  const model = m?.reranking_model_name ?? '';
  if (typeof provider !== 'string') throw invalidParam('retrieval_model.reranking_model.reranking_provider_name must be a string.');
  if (typeof model !== 'string') throw invalidParam('retrieval_model.reranking_model.reranking_model_name must be a string.');
  return { enabled, mode: mode as RerankMode, model: provider !== '' || model !== '' ? { provider, model } : null, weights: isObject(raw.weights) ? weights : null };
}

export function retrievalModelToWire(m: RetrievalModel): Record<string, unknown> {
  return {
    search_method: m.searchMethod,
    reranking_enable: m.rerank.enabled,
    reranking_mode: m.rerank.enabled ? m.rerank.mode : null,
    reranking_model: { reranking_provider_name: m.rerank.model?.provider ?? '', reranking_model_name: m.rerank.model?.model ?? '' },
    weights:
      m.searchMethod === 'hybrid_search' || (m.rerank.enabled && m.rerank.mode === 'weighted_score')
        ? { vector_setting: { vector_weight: m.vectorWeight }, keyword_setting: { keyword_weight: m.keywordWeight } }
        : null,
    top_k: m.topK,
    score_threshold_enabled: m.scoreThresholdEnabled,
    score_threshold: m.scoreThreshold,
  };
}
