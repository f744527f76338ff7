import type { DocumentTable, ParentChunkTable, SegmentTable } from '../../store/schema.js';
import { toSeconds } from '../../infra/clock.js';

/**
 * What the segment API calls a segment: a `segments` row of a text or Q&A document, or a parent
 * chunk of a parent-child document with its children (ordinary `segments` rows with `parent_id`).
 */
export type Chunk = { readonly kind: 'segment'; readonly row: SegmentTable } | { readonly kind: 'parent'; readonly row: ParentChunkTable; readonly children: readonly SegmentTable[] };

const s = (ms: number | null) => (ms === null ? null : toSeconds(ms));

/** Dify's child chunk object. */
export function childChunkToWire(c: SegmentTable): Record<string, unknown> {
  return {
    id: c.id,
    segment_id: c.parent_id,
    content: c.content,
    position: c.position,
    word_count: c.word_count,
    type: c.chunk_type ?? 'automatic',
    created_at: toSeconds(c.created_at),
    updated_at: toSeconds(c.updated_at ?? c.created_at),
  };
}

/** Dify's segment object (`segment_fields`); a chunk made by indexing was created by the document's creator. */
export function segmentToWire(c: Chunk, doc: DocumentTable): Record<string, unknown> {
  const r = c.row;
  const createdBy = r.created_by ?? doc.created_by;
  return {
    id: r.id,
    position: r.position,
    document_id: r.document_id,
    content: r.content,
    sign_content: r.content,
    answer: c.kind === 'segment' ? c.row.answer : null,
    word_count: r.word_count,
    tokens: r.tokens,
    keywords: r.keywords === null ? [] : (JSON.parse(r.keywords) as string[]),
    index_node_id: r.id,
    index_node_hash: r.hash,
    hit_count: r.hit_count,
    enabled: r.enabled === 1,
    disabled_at: s(r.disabled_at),
    disabled_by: r.disabled_by,
    status: c.kind === 'segment' ? c.row.status : 'completed',
    created_by: createdBy,
    created_at: toSeconds(r.created_at),
    updated_at: toSeconds(r.updated_at ?? r.created_at),
    updated_by: r.updated_by ?? createdBy,
    indexing_at: toSeconds(r.created_at),
    completed_at: s(r.completed_at),
    error: null,
    stopped_at: null,
    child_chunks: c.kind === 'parent' ? c.children.map(childChunkToWire) : [],
    attachments: [],
    summary: null,
  };
}
