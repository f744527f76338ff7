import { NodeFailure, type GraphNode, type KnowledgeHit, type KnowledgeRetrieveOptions, type NodeHandler } from '../types.js';
import { isObject, selectorOf } from './shared.js';

interface RetrievalSpec {
  readonly selector: string[];
  readonly datasetIds: string[];
  readonly mode: 'single' | 'multiple';
  readonly topK: number | undefined;
  readonly scoreThreshold: number | null | undefined;
  readonly weights: { vector: number; keyword: number } | undefined;
}

function weightsOf(raw: unknown): { vector: number; keyword: number } | undefined {
  if (!isObject(raw)) return undefined;
  const v = isObject(raw.vector_setting) ? raw.vector_setting.vector_weight : undefined;
  const k = isObject(raw.keyword_setting) ? raw.keyword_setting.keyword_weight : undefined;
  if (typeof v !== 'number' || typeof k !== 'number') return undefined;
  return { vector: v, keyword: k };
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
  }
  return { selector, datasetIds: ids as string[], mode, topK, scoreThreshold, weights };
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
      doc_metadata: null,
      ...(hit.childChunks ? { child_chunks: hit.childChunks.map((c) => ({ id: c.id, content: c.content, position: c.position, score: c.score })) } : {}),
    },
    title: hit.documentName,
    content: hit.content,
  };
}

/**
 * Searches knowledge bases with the query variable; output `result` is Dify's list of retrieval
 * result objects, best first. `single` mode has no model router: see docs/decisions.md.
 */
export const knowledgeRetrievalNode: NodeHandler = {
  validate(node) {
    specOf(node);
  },
  async run(ctx) {
    const spec = specOf(ctx.node);
    const query = ctx.pool.get(spec.selector);
    const inputs = { query: query ?? null };
    if (query !== undefined && query !== null && typeof query !== 'string') {
      throw new NodeFailure('Query variable is not string type.', 'KnowledgeRetrievalNodeError', false);
    }
    if (!query) throw new NodeFailure('Query is required.', 'KnowledgeRetrievalNodeError', false);
    const knowledge = ctx.ports.knowledge;
    if (!knowledge) throw new NodeFailure('no knowledge retrieval is configured on this server', 'KnowledgeRetrievalNodeError', false);
    const opts: KnowledgeRetrieveOptions = {
      appId: ctx.appId,
      ...(spec.topK !== undefined ? { topK: spec.topK } : {}),
      ...(spec.scoreThreshold !== undefined ? { scoreThreshold: spec.scoreThreshold } : {}),
      ...(spec.weights ? { weights: spec.weights } : {}),
    };
    let found;
    try {
      found = await knowledge.retrieve(spec.datasetIds, query, opts, ctx.signal);
    } catch (err) {
      if (ctx.signal.aborted) throw err;
      throw new NodeFailure((err as Error).message || 'knowledge retrieval failed', 'KnowledgeRetrievalNodeError', true, { cause: err });
    }
    if (found.missing.length > 0) {
      const s = found.missing.length === 1 ? '' : 's';
      throw new NodeFailure(`Dataset${s} not found: ${found.missing.join(', ')}`, 'KnowledgeRetrievalNodeError', false);
    }
    return {
      type: 'succeeded',
      inputs,
      processData: null,
      outputs: { result: found.hits.map((h, i) => toResult(h, i + 1)) },
    };
  },
};
