import type { Kysely } from 'kysely';
import type { Database, DocumentTable } from '../../store/schema.js';
import { inBatches } from '../../store/statement-batches.js';
import { containsIgnoringCase } from '../../store/like.js';

/** A document's (and an indexing run's) indexing status. */
export const INDEXING_STATUSES = ['waiting', 'parsing', 'cleaning', 'splitting', 'indexing', 'completed', 'error', 'paused'] as const;
export type IndexingStatus = (typeof INDEXING_STATUSES)[number];
/** Statuses in which a document is being indexed (or paused mid-way). */
export const INDEXING_STATES: readonly IndexingStatus[] = ['waiting', 'parsing', 'cleaning', 'splitting', 'indexing', 'paused'];

/** A document as stored (the `documents` row, its status typed; the services and the wire read it in this shape). */
export type Document = Omit<DocumentTable, 'indexing_status'> & { indexing_status: IndexingStatus };

/** What an update of a document may change. */
export type DocumentChange = Partial<Omit<Document, 'id' | 'dataset_id' | 'created_at'>>;

const toDocument = (r: DocumentTable): Document => r as Document;

/** What a dataset's documents add up to. */
export interface DocumentTotals {
  readonly documents: number;
  readonly words: number;
  /** Documents with indexed content being served. */
  readonly available: number;
  /** The `doc_form` they share. */
  readonly docForm: string | null;
}

/** Documents of knowledge bases (`documents`). */
export class DocumentStore {
  readonly #db: Kysely<Database>;

  constructor(db: Kysely<Database>) {
    this.#db = db;
  }

  async hasAny(datasetId: string): Promise<boolean> {
    return (await this.#db.selectFrom('documents').select('id').where('dataset_id', '=', datasetId).executeTakeFirst()) !== undefined;
  }

  /** Document count, words, served documents and form of each dataset that has documents. */
  async totals(datasetIds: readonly string[]): Promise<Map<string, DocumentTotals>> {
    const out = new Map<string, DocumentTotals>();
    if (datasetIds.length === 0) return out;
    const rows = await this.#db
      .selectFrom('documents')
      .select((eb) => [
        'dataset_id',
        eb.fn.countAll<number>().as('n'),
        eb.fn.sum<number>('word_count').as('w'),
        eb.fn.sum<number>(eb.case().when('active_generation', '>', 0).then(1).else(0).end()).as('a'),
        eb.fn.max<string>('doc_form').as('f'),
      ])
      .where('dataset_id', 'in', datasetIds)
      .groupBy('dataset_id')
      .execute();
    for (const r of rows) out.set(r.dataset_id, { documents: Number(r.n), words: Number(r.w ?? 0), available: Number(r.a ?? 0), docForm: r.f ?? null });
    return out;
  }

  /** The `doc_form` of a dataset's first document, null while it has none. */
  async firstDocForm(datasetId: string): Promise<string | null> {
    const row = await this.#db.selectFrom('documents').select('doc_form').where('dataset_id', '=', datasetId).orderBy('position').limit(1).executeTakeFirst();
    return row?.doc_form ?? null;
  }

  /** The ids among `ids` that name a document of the dataset. */
  async existing(datasetId: string, ids: readonly string[]): Promise<Set<string>> {
    const found = new Set<string>();
    for (const part of inBatches([...new Set(ids)])) {
      for (const r of await this.#db.selectFrom('documents').select('id').where('dataset_id', '=', datasetId).where('id', 'in', part).execute()) found.add(r.id);
    }
    return found;
  }

  /**
   * Takes the rows of these documents of the dataset inside the caller's transaction (a no-op
   * write, so concurrent writers of the same documents serialize); answers how many it took.
   */
  async lock(db: Kysely<Database>, datasetId: string, ids: readonly string[]): Promise<number> {
    let locked = 0;
    for (const part of inBatches([...new Set(ids)])) {
      const r = await db.updateTable('documents').set((eb) => ({ enabled: eb.ref('enabled') })).where('dataset_id', '=', datasetId).where('id', 'in', part).executeTakeFirst();
      locked += Number(r.numUpdatedRows);
    }
    return locked;
  }

  async findMany(datasetId: string, ids: readonly string[]): Promise<Document[]> {
    if (ids.length === 0) return [];
    return (await this.#db.selectFrom('documents').selectAll().where('dataset_id', '=', datasetId).where('id', 'in', [...new Set(ids)]).execute()).map(toDocument);
  }

  /** The served documents (enabled, not archived, with an indexed version) of these datasets. */
  async served(datasetIds: readonly string[]): Promise<Document[]> {
    if (datasetIds.length === 0) return [];
    const rows = await this.#db
      .selectFrom('documents')
      .selectAll()
      .where('dataset_id', 'in', [...datasetIds])
      .where('enabled', '=', 1)
      .where('archived', '=', 0)
      .where('active_generation', '>', 0)
      .execute();
    return rows.map(toDocument);
  }

  async find(datasetId: string, id: string): Promise<Document | undefined> {
    const r = await this.#db.selectFrom('documents').selectAll().where('id', '=', id).where('dataset_id', '=', datasetId).executeTakeFirst();
    return r ? toDocument(r) : undefined;
  }

  /** A document by id alone (the indexer's view). */
  async byId(id: string): Promise<Document | undefined> {
    const r = await this.#db.selectFrom('documents').selectAll().where('id', '=', id).executeTakeFirst();
    return r ? toDocument(r) : undefined;
  }

  async status(db: Kysely<Database>, id: string): Promise<IndexingStatus | undefined> {
    return (await db.selectFrom('documents').select('indexing_status').where('id', '=', id).executeTakeFirst())?.indexing_status as IndexingStatus | undefined;
  }

  /** A page of a dataset's documents, newest position first. */
  async page(datasetId: string, page: number, limit: number, keyword?: string): Promise<{ rows: Document[]; total: number }> {
    let q = this.#db.selectFrom('documents').where('dataset_id', '=', datasetId);
    if (keyword) q = q.where(containsIgnoringCase('name', keyword));
    const total = Number((await q.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);
    const rows = await q.selectAll().orderBy('position', 'desc').limit(limit).offset((page - 1) * limit).execute();
    return { rows: rows.map(toDocument), total };
  }

  async idsOf(datasetId: string): Promise<string[]> {
    return (await this.#db.selectFrom('documents').select('id').where('dataset_id', '=', datasetId).execute()).map((r) => r.id);
  }

  /** The `data_source_type` of each of these documents. */
  async sourceTypes(ids: readonly string[]): Promise<Map<string, string>> {
    if (ids.length === 0) return new Map();
    const rows = await this.#db.selectFrom('documents').select(['id', 'data_source_type']).where('id', 'in', [...new Set(ids)]).execute();
    return new Map(rows.map((d) => [d.id, d.data_source_type]));
  }

  /** Inserts a document at the end of its dataset (inside the caller's transaction); answers its position. */
  async insertLast(db: Kysely<Database>, doc: Omit<Document, 'position'>): Promise<Document> {
    const max = await db.selectFrom('documents').select((eb) => eb.fn.max<number>('position').as('p')).where('dataset_id', '=', doc.dataset_id).executeTakeFirst();
    const row: Document = { ...doc, position: Number(max?.p ?? 0) + 1 };
    await db.insertInto('documents').values(row).execute();
    return row;
  }

  /**
   * Accepts a new version (inside the caller's transaction): a compare-and-set on
   * `latest_generation` of a `completed` or `error` document; false when another won.
   */
  async acceptVersion(db: Kysely<Database>, id: string, expectedGeneration: number, set: DocumentChange): Promise<boolean> {
    const res = await db
      .updateTable('documents')
      .set(set)
      .where('id', '=', id)
      .where('latest_generation', '=', expectedGeneration)
      .where('indexing_status', 'in', ['completed', 'error'])
      .executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }

  /** Sets what a stage of the document's latest version reports (nothing when `generation` is no longer the latest). */
  async setLatestStatus(db: Kysely<Database>, id: string, generation: number, set: { indexing_status: IndexingStatus; error?: string | null; updated_at: number }): Promise<void> {
    await db.updateTable('documents').set(set).where('id', '=', id).where('latest_generation', '=', generation).execute();
  }

  /** Serves `generation` (still the latest) as completed (inside the caller's transaction); false when superseded. */
  async activate(db: Kysely<Database>, id: string, generation: number, set: { tokens: number; word_count: number; updated_at: number }): Promise<boolean> {
    const res = await db
      .updateTable('documents')
      .set({ ...set, active_generation: generation, indexing_status: 'completed', error: null })
      .where('id', '=', id)
      .where('latest_generation', '=', generation)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }

  /**
   * Takes the document row for a segment edit (inside the caller's transaction): true when it is
   * still `completed`, serving `generation`, with no newer version accepted.
   */
  async takeForEdit(db: Kysely<Database>, id: string, generation: number, now: number): Promise<boolean> {
    const res = await db
      .updateTable('documents')
      .set({ updated_at: now })
      .where('id', '=', id)
      .where('indexing_status', '=', 'completed')
      .where('active_generation', '=', generation)
      .whereRef('latest_generation', '=', 'active_generation')
      .executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }

  async setTotals(db: Kysely<Database>, id: string, totals: { word_count: number; tokens: number }): Promise<void> {
    await db.updateTable('documents').set(totals).where('id', '=', id).execute();
  }

  /** Applies a status action to these documents unless they are in `column`'s target already or being indexed. */
  async setFlags(ids: readonly string[], set: DocumentChange, column: 'enabled' | 'archived', target: number): Promise<void> {
    await this.#db
      .updateTable('documents')
      .set(set)
      .where('id', 'in', [...ids])
      .where(column, '<>', target)
      .where('indexing_status', 'not in', INDEXING_STATES)
      .execute();
  }

  /** Deletes a document row (inside the caller's transaction). */
  async delete(db: Kysely<Database>, id: string): Promise<void> {
    await db.deleteFrom('documents').where('id', '=', id).execute();
  }
}
