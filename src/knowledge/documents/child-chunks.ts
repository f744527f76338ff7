import type { Kysely } from 'kysely';
import type { Database, DatasetTable, DocumentTable, SegmentTable } from '../../store/schema.js';
import { sha256 } from '../../infra/ids.js';
import { invalidParam, notFound } from '../../infra/errors.js';
import { countTokens } from '../../text/tokenizer.js';
import type { Embedder } from '../ingest/embedder.js';
import type { KeywordIndex } from '../index/keyword-index.js';
import type { VectorIndex } from '../index/vector-index.js';
import type { SegmentService } from './segments.js';
import { segmentNotFound } from '../errors.js';
import { SegmentStore } from './segment-store.js';

export const childChunkNotFound = () => notFound('Child chunk not found.');

/**
 * Child chunks of a parent chunk (`hierarchical_model` documents): Dify's child-chunk API. A child
 * chunk is an ordinary `segments` row with `parent_id`, indexed like any segment; writes go through
 * the segment service's checked transaction, so they follow the same rules as segment edits.
 */
export class ChildChunkService {
  readonly #db: Kysely<Database>;
  readonly #store: SegmentStore;
  readonly #segments: SegmentService;
  readonly #embedder: Embedder;
  readonly #keyword: KeywordIndex;
  readonly #vectors: VectorIndex;

  constructor(deps: { db: Kysely<Database>; segments: SegmentService; embedder: Embedder; keyword: KeywordIndex; vectors: VectorIndex }) {
    this.#db = deps.db;
    this.#store = new SegmentStore(deps.db);
    this.#segments = deps.segments;
    this.#embedder = deps.embedder;
    this.#keyword = deps.keyword;
    this.#vectors = deps.vectors;
  }

  /** The parent chunk's id, or 404 "Segment not found." (a segment of a document of another form has no children). */
  async #parent(doc: DocumentTable, segmentId: string): Promise<string | undefined> {
    const c = await this.#segments.find(this.#db, doc, segmentId);
    if (!c) throw segmentNotFound();
    return c.kind === 'parent' ? c.row.id : undefined;
  }

  async list(doc: DocumentTable, segmentId: string, q: { page: number; limit: number; keyword: string | undefined }): Promise<{ rows: SegmentTable[]; total: number }> {
    const parent = await this.#parent(doc, segmentId);
    if (!parent) return { rows: [], total: 0 };
    return this.#store.pageChildren(parent, { keyword: q.keyword, limit: q.limit, offset: (q.page - 1) * q.limit });
  }

  /** Adds a child chunk after the parent's last one (`type: customized`), indexed at once. */
  async create(ds: DatasetTable, doc: DocumentTable, segmentId: string, content: string, by: string): Promise<SegmentTable> {
    this.#segments.checkEditable(doc);
    const parent = await this.#parent(doc, segmentId);
    if (!parent) throw invalidParam('Child chunks exist only in documents with doc_form hierarchical_model.');
    const vectors = await this.#segments.embed(ds, [content]);
    const id = await this.#segments.write(doc, async (trx, now) => {
      const p = await this.#segments.find(trx, doc, segmentId);
      if (!p) throw segmentNotFound();
      const row = this.#segments.segmentRow(doc, content, (await this.#store.lastChildPosition(trx, parent)) + 1, now, by, {
        parent_id: parent,
        chunk_type: 'customized',
        // A child of a disabled parent is disabled with it (retrieval filters children).
        enabled: p.row.enabled,
        disabled_at: p.row.disabled_at,
        disabled_by: p.row.disabled_by,
      });
      await this.#segments.insertIndexed(trx, [row], vectors);
      return row.id;
    });
    return this.#stored(id);
  }

  async #child(doc: DocumentTable, segmentId: string, childId: string): Promise<string> {
    const parent = await this.#parent(doc, segmentId);
    if (!parent) throw childChunkNotFound();
    const row = await this.#store.findChild(this.#db, parent, childId);
    if (!row) throw childChunkNotFound();
    return parent;
  }

  /** New content for a child chunk (it becomes `customized`), re-indexed in the same transaction. */
  async update(ds: DatasetTable, doc: DocumentTable, segmentId: string, childId: string, content: string, by: string): Promise<SegmentTable> {
    this.#segments.checkEditable(doc);
    const parent = await this.#child(doc, segmentId, childId);
    const vectors = await this.#segments.embed(ds, [content]);
    await this.#segments.write(doc, async (trx, now) => {
      const row = await this.#store.findChild(trx, parent, childId);
      if (!row) throw childChunkNotFound();
      // The keyword index forgets the old text before the row changes (FTS5 needs the indexed text).
      await this.#keyword.removeSegments(trx, [childId]);
      await this.#vectors.removeSegments(trx, [childId]);
      await this.#store.update(trx, [childId], { content, word_count: content.length, tokens: countTokens(content), hash: sha256(content), chunk_type: 'customized', updated_at: now, updated_by: by, completed_at: now });
      await this.#keyword.addSegments(trx, [childId]);
      if (vectors.length > 0) await this.#vectors.add(trx, this.#embedder.model, [{ segmentId: childId, datasetId: row.dataset_id, documentId: row.document_id, vector: vectors[0]! }]);
    });
    return this.#stored(childId);
  }

  async delete(doc: DocumentTable, segmentId: string, childId: string): Promise<void> {
    this.#segments.checkEditable(doc);
    const parent = await this.#child(doc, segmentId, childId);
    await this.#segments.write(doc, async (trx) => {
      const row = await this.#store.findChild(trx, parent, childId);
      if (!row) throw childChunkNotFound();
      await this.#segments.deleteIndexed(trx, [childId]);
    });
  }

  /** A child chunk just written (it exists unless deleted since: then a 500, as before the store). */
  async #stored(id: string): Promise<SegmentTable> {
    const row = await this.#store.byId(id);
    if (!row) throw new Error(`child chunk ${id} vanished after its write`);
    return row;
  }
}
