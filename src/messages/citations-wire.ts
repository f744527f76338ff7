import type { RetrieverResource } from '../engine/retriever-resources.js';
import type { Message, StoredRetrieverResource } from './message-store.js';

/** A stored message's citations as `metadata.retriever_resources` of a blocking answer (Dify's `RetrievalSourceMetadata`). */
export function answerCitations(stored: readonly StoredRetrieverResource[]): RetrieverResource[] {
  return stored.map(({ id: _id, ...r }) => r);
}

/**
 * A message's citations as `GET /messages` lists them: Dify's `RetrieverResource` of its message
 * list (an id, the message's id and time, and the citation's fields), in position order.
 */
export function listedCitations(m: Pick<Message, 'id' | 'createdAt' | 'retrieverResources'>): Record<string, unknown>[] {
  return [...m.retrieverResources]
    .sort((a, b) => a.position - b.position)
    .map((r) => ({
      id: r.id,
      message_id: m.id,
      position: r.position,
      dataset_id: r.dataset_id,
      dataset_name: r.dataset_name,
      document_id: r.document_id,
      document_name: r.document_name,
      data_source_type: r.data_source_type,
      segment_id: r.segment_id,
      score: r.score,
      hit_count: r.hit_count,
      word_count: r.word_count,
      segment_position: r.segment_position,
      index_node_hash: r.index_node_hash,
      content: r.content,
      created_at: Math.floor(m.createdAt / 1000),
    }));
}
