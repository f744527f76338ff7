import type { GraphNode, NodeHandler } from '../types.js';
import { runRetrieval, type RetrievalSpec } from './knowledge-retrieval.js';
import { isObject, selectorOf } from './shared.js';

/** Dify's `top_n` when the node does not set it. */
const DEFAULT_TOP_N = 4;

function specOf(node: GraphNode): RetrievalSpec {
  const d = node.data;
  const selector = selectorOf(d.query_variable_selector);
  if (!selector) throw new Error('query_variable_selector must be a list of at least 2 names');
  const ids = d.control_space_ids;
  if (!Array.isArray(ids) || ids.length === 0 || !ids.every((x) => typeof x === 'string' && x !== '')) {
    throw new Error('control_space_ids must be a non-empty list of dataset ids');
  }
  const topN = d.top_n ?? DEFAULT_TOP_N;
  if (typeof topN !== 'number' || !Number.isInteger(topN) || topN < 1) throw new Error('top_n must be a positive integer');
  if (d.metadata_filters !== undefined && d.metadata_filters !== null && !isObject(d.metadata_filters)) throw new Error('metadata_filters must be a mapping');
  return { selector, datasetIds: ids as string[], mode: 'multiple', topK: topN, scoreThreshold: undefined, weights: undefined, metadata: { mode: 'disabled' } };
}

/** The filter keys the node names that have a non-empty value. */
function filterKeys(node: GraphNode): string[] {
  const f = node.data.metadata_filters;
  if (!isObject(f)) return [];
  return Object.keys(f).filter((k) => {
    const v = f[k];
    return v !== null && v !== undefined && !(Array.isArray(v) && v.length === 0);
  });
}

/**
 * `knowledge-retrieval-v2` (Dify's KnowledgeFS node): searches the datasets named by
 * `control_space_ids` (this server's dataset ids) with the query variable, `top_n` best hits,
 * with the same retrieval and `result` output as `knowledge-retrieval`. `metadata_filters`
 * (`node_kinds`, `tags`) have no counterpart in Dovetail's datasets: they are not applied, and the
 * import says so (docs/compatibility.md).
 */
export const knowledgeRetrievalV2Node: NodeHandler = {
  validate(node) {
    specOf(node);
  },
  importWarnings(node) {
    const keys = filterKeys(node);
    if (keys.length === 0) return [];
    return [
      {
        node_id: node.id,
        node_type: node.type,
        part: `metadata_filters (${keys.join(', ')})`,
        setting: 'metadata_filters',
        message: `node ${node.id} (${node.type}): metadata_filters ${keys.join(', ')} are not applied (Dovetail datasets have no KnowledgeFS node kinds or tags); remove them or use a knowledge-retrieval node with metadata filtering`,
      },
    ];
  },
  run: (ctx) => runRetrieval(ctx, specOf(ctx.node)),
};
