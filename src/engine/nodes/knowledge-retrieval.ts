import { NodeFailure, type GraphNode, type ImportWarning, type KnowledgeHit, type KnowledgeReranking, type KnowledgeMetadataFilter, type KnowledgeRetrieveOptions, type KnowledgeRetriever, type NodeContext, type NodeHandler, type NodeOutcome, type NodeUsage } from '../types.js';
import { templateSegments } from '../variable-pool.js';
import { metadataFilterMessages, parseMetadataMap } from './metadata-filter-prompt.js';
import { callModel, modelSpecOf, providerOf, type ModelSpec } from './model-call.js';
import { isObject, selectorOf } from './shared.js';

/** `metadata_filtering_mode` and what it needs. */
type MetadataFiltering =
  | { readonly mode: 'disabled' }
  | { readonly mode: 'manual'; readonly logical: 'and' | 'or'; readonly conditions: readonly { name: string; comparison_operator: unknown; value: unknown }[] }
  /** `model` is checked when the node runs (Dify imports an automatic node without one and fails the run). */
  | { readonly mode: 'automatic'; readonly logical: 'and' | 'or'; readonly model: unknown };

/** What one retrieval searches (`knowledge-retrieval` and `knowledge-retrieval-v2` nodes). */
export interface RetrievalSpec {
  readonly selector: string[];
  readonly datasetIds: string[];
  readonly mode: 'single' | 'multiple';
  readonly topK: number | undefined;
  readonly scoreThreshold: number | null | undefined;
  readonly weights: { vector: number; keyword: number } | undefined;
  readonly metadata: MetadataFiltering;
  /** `multiple_retrieval_config`'s reranking (multiple mode only). */
  readonly reranking?: KnowledgeReranking;
}

const MODES = ['disabled', 'automatic', 'manual'];

/** Reads `metadata_filtering_mode` / `metadata_filtering_conditions` / `metadata_model_config`. */
function metadataFilteringOf(d: Readonly<Record<string, unknown>>): MetadataFiltering {
  const mode = d.metadata_filtering_mode ?? 'disabled';
  if (typeof mode !== 'string' || !MODES.includes(mode)) throw new Error('metadata_filtering_mode must be "disabled", "automatic" or "manual"');
  if (mode === 'disabled') return { mode };
  const mfc = d.metadata_filtering_conditions ?? null;
  if (mfc !== null && !isObject(mfc)) throw new Error('metadata_filtering_conditions must be a mapping');
  // Without conditions an automatic filter joins what the model finds with "or", as Dify.
  const logical = mfc ? (mfc.logical_operator ?? 'and') : mode === 'automatic' ? 'or' : 'and';
  if (logical !== 'and' && logical !== 'or') throw new Error('metadata_filtering_conditions.logical_operator must be "and" or "or"');
  if (mode === 'automatic') return { mode, logical, model: d.metadata_model_config };
  const list = mfc?.conditions ?? [];
  if (!Array.isArray(list)) throw new Error('metadata_filtering_conditions.conditions must be a list');
  const conditions = list.map((c, i) => {
    if (!isObject(c) || typeof c.name !== 'string' || c.name === '') throw new Error(`metadata_filtering_conditions.conditions[${i}].name must be a metadata field name`);
    return { name: c.name, comparison_operator: c.comparison_operator, value: c.value };
  });
  return { mode: 'manual', logical, conditions };
}

/**
 * A manual condition's value as Dify resolves it: a string is a template; one variable holding a
 * number gives that number, any other template its text with line breaks and tabs made spaces,
 * trimmed. Numbers and lists stay as they are; `empty` / `not empty` take no value.
 */
function resolveValue(ctx: NodeContext, c: { comparison_operator: unknown; value: unknown }, i: number): unknown {
  if (c.value === undefined || c.value === null || c.comparison_operator === 'empty' || c.comparison_operator === 'not empty') return c.value ?? null;
  if (typeof c.value !== 'string') return c.value;
  const segments = templateSegments(c.value);
  if (segments.length === 1 && 'selector' in segments[0]!) {
    const v = ctx.pool.get(segments[0].selector);
    if (typeof v === 'number') return v;
    if (typeof v !== 'string') {
      throw new NodeFailure(`metadata_filtering_conditions.conditions[${i}].value: ${c.value} is not a string or a number`, 'KnowledgeRetrievalNodeError', false);
    }
  }
  return ctx.pool.render(c.value).replace(/[\r\n\t]+/g, ' ').trim();
}

/**
 * The filter for this run: the node's conditions with their values resolved, or (automatic) the
 * conditions the metadata model finds in the query. Also the model's token counts.
 */
async function metadataFilterFor(
  ctx: NodeContext,
  knowledge: KnowledgeRetriever,
  spec: RetrievalSpec,
  query: string,
): Promise<{ filter: KnowledgeMetadataFilter | undefined; usage: NodeUsage | undefined }> {
  const m = spec.metadata;
  if (m.mode === 'disabled') return { filter: undefined, usage: undefined };
  if (m.mode === 'manual') {
    if (m.conditions.length === 0) return { filter: undefined, usage: undefined };
    const conditions = m.conditions.map((c, i) => ({ ...c, value: resolveValue(ctx, c, i) }));
    return { filter: { source: 'manual', logical_operator: m.logical, conditions }, usage: undefined };
  }
  if (m.model === undefined || m.model === null) throw new NodeFailure('metadata_model_config is required for automatic metadata filtering', 'KnowledgeRetrievalNodeError', false);
  let model: ModelSpec;
  try {
    model = modelSpecOf(m.model, 'metadata_model_config');
  } catch (err) {
    throw new NodeFailure((err as Error).message, 'KnowledgeRetrievalNodeError', false);
  }
  providerOf(ctx, model);
  const { fields, missing } = await knowledge.metadataFields(spec.datasetIds, ctx.appId);
  // An unknown dataset fails the node below; the model is not asked first.
  if (fields.length === 0 || missing.length > 0) return { filter: undefined, usage: undefined };
  let answer;
  try {
    answer = await callModel(ctx, model, metadataFilterMessages(query, fields));
  } catch (err) {
    // As Dify: a failed model call leaves the search unfiltered.
    if (ctx.signal.aborted) throw err;
    return { filter: undefined, usage: undefined };
  }
  const conditions = parseMetadataMap(answer.text, new Set(fields.map((f) => f.name)));
  return { filter: conditions.length > 0 ? { source: 'automatic', logical_operator: m.logical, conditions } : undefined, usage: answer.usage };
}

function weightsOf(raw: unknown): { vector: number; keyword: number } | undefined {
  if (!isObject(raw)) return undefined;
  const v = isObject(raw.vector_setting) ? raw.vector_setting.vector_weight : undefined;
  const k = isObject(raw.keyword_setting) ? raw.keyword_setting.keyword_weight : undefined;
  if (typeof v !== 'number' || typeof k !== 'number') return undefined;
  return { vector: v, keyword: k };
}

/**
 * `reranking_enable` (Dify's default: true), `reranking_mode` (default `reranking_model`),
 * `reranking_model {provider, model}` and `weights` of `multiple_retrieval_config`.
 */
function rerankingOf(cfg: Readonly<Record<string, unknown>>): KnowledgeReranking {
  const enabled = cfg.reranking_enable ?? true;
  if (typeof enabled !== 'boolean') throw new Error('multiple_retrieval_config.reranking_enable must be a boolean');
  const mode = cfg.reranking_mode ?? 'reranking_model';
  if (mode !== 'reranking_model' && mode !== 'weighted_score') throw new Error('multiple_retrieval_config.reranking_mode must be "reranking_model" or "weighted_score"');
  const m = cfg.reranking_model ?? null;
  if (m !== null && !isObject(m)) throw new Error('multiple_retrieval_config.reranking_model must be a mapping (provider, model)');
  const provider = m?.provider ?? '';
  const model = m?.model ?? '';
  if (typeof provider !== 'string' || typeof model !== 'string') throw new Error('multiple_retrieval_config.reranking_model.provider and .model must be strings');
  return { enabled, mode, model: provider !== '' && model !== '' ? { provider, model } : null, weights: weightsOf(cfg.weights) ?? null };
}

/** Reads a node's DSL data; throws a message naming the field when it cannot run. */
function specOf(node: GraphNode): RetrievalSpec {
  const d = node.data;
  const selector = selectorOf(d.query_variable_selector);
  if (!selector) throw new Error('query_variable_selector must be a list of at least 2 names');
  const ids = d.dataset_ids;
  if (!Array.isArray(ids) || ids.length === 0 || !ids.every((x) => typeof x === 'string' && x !== '')) {
    throw new Error('dataset_ids must be a non-empty list of dataset ids');
  }
  const mode = d.retrieval_mode ?? 'multiple';
  if (mode !== 'single' && mode !== 'multiple') throw new Error('retrieval_mode must be "single" or "multiple"');
  let topK: number | undefined;
  let scoreThreshold: number | null | undefined;
  let weights: RetrievalSpec['weights'];
  let reranking: KnowledgeReranking | undefined;
  if (mode === 'multiple') {
    const cfg = d.multiple_retrieval_config ?? {};
    if (!isObject(cfg)) throw new Error('multiple_retrieval_config must be a mapping');
    const k = cfg.top_k ?? 4;
    if (typeof k !== 'number' || !Number.isInteger(k) || k < 1) throw new Error('multiple_retrieval_config.top_k must be a positive integer');
    topK = k;
    const t = cfg.score_threshold ?? null;
    if (t !== null && (typeof t !== 'number' || t < 0 || t > 1)) throw new Error('multiple_retrieval_config.score_threshold must be a number between 0 and 1 or null');
    scoreThreshold = t;
    weights = weightsOf(cfg.weights);
    reranking = rerankingOf(cfg);
  }
  return { selector, datasetIds: ids as string[], mode, topK, scoreThreshold, weights, metadata: metadataFilteringOf(d), ...(reranking ? { reranking } : {}) };
}

/** Dify's retrieval result object (`metadata._source: "knowledge"`); `position` counts from 1. */
function toResult(hit: KnowledgeHit, position: number): Record<string, unknown> {
  return {
    metadata: {
      _source: 'knowledge',
      position,
      dataset_id: hit.datasetId,
      dataset_name: hit.datasetName,
      document_id: hit.documentId,
      document_name: hit.documentName,
      data_source_type: hit.dataSourceType,
      segment_id: hit.segmentId,
      retriever_from: 'workflow',
      score: hit.score,
      segment_hit_count: hit.hitCount,
      segment_word_count: hit.wordCount,
      segment_position: hit.segmentPosition,
      segment_index_node_hash: hit.indexNodeHash,
      doc_metadata: hit.docMetadata,
      ...(hit.childChunks ? { child_chunks: hit.childChunks.map((c) => ({ id: c.id, content: c.content, position: c.position, score: c.score })) } : {}),
    },
    title: hit.documentName,
    content: hit.content,
  };
}

function rerankWarning(node: GraphNode, part: string, setting: string | null, message: string): ImportWarning {
  return { node_id: node.id, node_type: node.type, part, setting, message: `node ${node.id} (${node.type}): ${message}` };
}

/**
 * Searches knowledge bases with the query variable; output `result` is Dify's list of retrieval
 * result objects, best first. `single` mode has no model router: see docs/decisions.md.
 */
export const knowledgeRetrievalNode: NodeHandler = {
  validate(node) {
    specOf(node);
  },
  importWarnings(node, ctx) {
    const r = specOf(node).reranking;
    if (!r?.enabled || r.mode !== 'reranking_model' || !ctx.rerankProblem) return [];
    const part = 'multiple_retrieval_config.reranking_model';
    const fallback = 'retrieval runs with reranking off (hits ordered by score) until one is configured';
    if (!r.model) {
      // An older DSL without reranking settings gets Dify's default (reranking on) with no model: nothing to configure.
      const cfg = node.data.multiple_retrieval_config;
      if (!isObject(cfg) || cfg.reranking_enable !== true) return [];
      return [rerankWarning(node, part, null, `reranking is enabled but names no rerank model: ${fallback}`)];
    }
    const problem = ctx.rerankProblem(r.model.provider);
    if (!problem) return [];
    const setting = /\b([A-Z][A-Z0-9_]*_(?:API_KEY|BASE_URL))\b/.exec(problem)?.[1] ?? null;
    return [rerankWarning(node, `rerank model ${r.model.provider}/${r.model.model}`, setting, `${problem} Until then ${fallback}`)];
  },
  run: (ctx) => runRetrieval(ctx, specOf(ctx.node)),
};

/** Searches `spec.datasetIds` with the query variable; outputs `result` (Dify's retrieval result objects). */
export async function runRetrieval(ctx: NodeContext, spec: RetrievalSpec): Promise<NodeOutcome> {
  const query = ctx.pool.get(spec.selector);
  const inputs = { query: query ?? null };
  if (query !== undefined && query !== null && typeof query !== 'string') {
    throw new NodeFailure('Query variable is not string type.', 'KnowledgeRetrievalNodeError', false);
  }
  if (!query) throw new NodeFailure('Query is required.', 'KnowledgeRetrievalNodeError', false);
  const knowledge = ctx.ports.knowledge;
  if (!knowledge) throw new NodeFailure('no knowledge retrieval is configured on this server', 'KnowledgeRetrievalNodeError', false);
  const { filter, usage } = await metadataFilterFor(ctx, knowledge, spec, query);
  const opts: KnowledgeRetrieveOptions = {
    appId: ctx.appId,
    ...(filter ? { metadataFilter: filter } : {}),
    ...(spec.topK !== undefined ? { topK: spec.topK } : {}),
    ...(spec.scoreThreshold !== undefined ? { scoreThreshold: spec.scoreThreshold } : {}),
    ...(spec.weights ? { weights: spec.weights } : {}),
    ...(spec.reranking ? { reranking: spec.reranking } : {}),
  };
  let found;
  try {
    found = await knowledge.retrieve(spec.datasetIds, query, opts, ctx.signal);
  } catch (err) {
    if (ctx.signal.aborted) throw err;
    // A rerank model that failed names Dify's invoke error (InvokeServerUnavailableError, …).
    const named = (err as { errorType?: unknown }).errorType;
    const type = typeof named === 'string' && named !== '' ? named : 'KnowledgeRetrievalNodeError';
    throw new NodeFailure((err as Error).message || 'knowledge retrieval failed', type, true, { cause: err });
  }
  if (found.missing.length > 0) {
    const s = found.missing.length === 1 ? '' : 's';
    const ids = found.missing.join(', ');
    throw new NodeFailure(`Dataset${s} not found: ${ids} (node ${ctx.node.id}: import the app with --dataset ${found.missing[0]}=NEW_ID, or create the dataset)`, 'KnowledgeRetrievalNodeError', false);
  }
  return {
    type: 'succeeded',
    inputs,
    // As Dify when reranking cannot run (no rerank model): hits by score; process_data says so.
    processData: found.rerankingNote || found.externalNote ? { ...(found.rerankingNote ? { reranking: found.rerankingNote } : {}), ...(found.externalNote ? { external_knowledge: found.externalNote } : {}) } : null,
    outputs: { result: found.hits.map((h, i) => toResult(h, i + 1)) },
    ...(usage ? { usage } : {}),
  };
}
