import { newId, sha256 } from '../../infra/ids.js';
import type { DocumentTable, ParentChunkTable, SegmentTable } from '../../store/schema.js';
import { countTokens } from '../../text/tokenizer.js';

/** Where a new chunk goes: its document's version and its place in it. */
export interface ChunkPlace {
  readonly datasetId: string;
  readonly documentId: string;
  readonly generation: number;
  readonly position: number;
  /** Epoch ms: created and completed. */
  readonly now: number;
}

/** The editing columns of a chunk nobody has edited: enabled, no author, no keywords. */
const UNEDITED = { enabled: 1, disabled_at: null, disabled_by: null, keywords: null, created_by: null, updated_at: null, updated_by: null } as const;

function counted(p: ChunkPlace, content: string, counts: string, tokens: number | undefined) {
  return {
    id: newId(),
    dataset_id: p.datasetId,
    document_id: p.documentId,
    generation: p.generation,
    position: p.position,
    content,
    word_count: counts.length,
    tokens: tokens ?? countTokens(counts),
    hash: sha256(content),
    hit_count: 0,
    created_at: p.now,
    completed_at: p.now,
    ...UNEDITED,
  };
}

/**
 * A searchable segment row, indexed and completed; a Q&A answer counts towards its words and
 * tokens. `edit` sets the editing columns of one made through the segment API; an `edit.tokens`
 * counted beforehand (off the event loop) is taken as it is.
 */
export function segmentRow(p: ChunkPlace, content: string, answer: string | null, parentId: string | null, edit: Partial<SegmentTable> = {}): SegmentTable {
  return { ...counted(p, content, answer === null ? content : content + answer, edit.tokens), status: 'completed', parent_id: parentId, answer, chunk_type: null, ...edit };
}

/** A parent chunk row (parent-child documents): what a search of its children returns. */
export function parentChunkRow(p: ChunkPlace, content: string, edit: Partial<ParentChunkTable> = {}): ParentChunkTable {
  return { ...counted(p, content, content, edit.tokens), ...edit };
}

/** Where a chunk of the document's served version goes (the segment API edits that one). */
export const docPlace = (doc: DocumentTable, position: number, now: number): ChunkPlace => ({ datasetId: doc.dataset_id, documentId: doc.id, generation: doc.active_generation, position, now });
