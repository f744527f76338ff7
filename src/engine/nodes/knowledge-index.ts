import { NodeFailure, isStop, type GraphNode, type NodeHandler } from '../types.js';
import { selectorOf } from './shared.js';

/** Dify's chunk structures: general chunks, parent-child chunks, question-answer pairs. */
export const CHUNK_STRUCTURES = ['text_model', 'hierarchical_model', 'qa_model'] as const;

function settingsOf(node: GraphNode): { selector: string[]; chunkStructure: string; indexingTechnique: string | undefined } {
  const d = node.data;
  const selector = selectorOf(d.index_chunk_variable_selector);
  if (!selector) throw new Error('index_chunk_variable_selector must be a variable selector (a list of at least 2 names)');
  const cs = d.chunk_structure;
  if (typeof cs !== 'string' || !(CHUNK_STRUCTURES as readonly string[]).includes(cs)) throw new Error(`chunk_structure must be one of ${CHUNK_STRUCTURES.join(', ')}, got ${JSON.stringify(cs)}`);
  const t = d.indexing_technique;
  if (t !== undefined && t !== null && t !== 'economy' && t !== 'high_quality') throw new Error(`indexing_technique must be economy or high_quality, got ${JSON.stringify(t)}`);
  return { selector, chunkStructure: cs, indexingTechnique: typeof t === 'string' ? t : undefined };
}

/**
 * Dify's `knowledge-index` node, the end of a knowledge pipeline: the chunks a chunker made
 * (`index_chunk_variable_selector`) go into the run's document of the pipeline's dataset through
 * the pipeline port, which indexes them as any document; outputs Dify's `dataset_id`,
 * `dataset_name`, `batch`, `document_id`, `document_name`, `created_at`, `display_status`.
 */
export const knowledgeIndexNode: NodeHandler = {
  validate(node) {
    settingsOf(node);
  },
  async run(ctx) {
    const s = settingsOf(ctx.node);
    const chunks = ctx.pool.get(s.selector);
    const inputs = { chunks: chunks ?? null };
    if (chunks === undefined || chunks === null || (Array.isArray(chunks) && chunks.length === 0)) throw new NodeFailure('Chunks is required.', 'KnowledgeIndexNodeError', false);
    const port = ctx.ports.pipeline;
    if (!port) throw new NodeFailure(`knowledge-index node "${ctx.node.title}" (${ctx.node.id}) runs only in knowledge pipelines`, 'KnowledgeIndexNodeError', false);
    try {
      const outputs = await port.index(chunks, { chunkStructure: s.chunkStructure, indexingTechnique: s.indexingTechnique }, ctx.signal);
      return { type: 'succeeded', inputs, outputs };
    } catch (err) {
      if (isStop(err, ctx.signal)) throw err;
      throw new NodeFailure((err as Error).message, 'KnowledgeIndexNodeError', false, { cause: err });
    }
  },
};
