import type { Kysely } from 'kysely';
import type { Database, DocumentTable } from '../../store/schema.js';
import { inBatches } from '../../store/statement-batches.js';

/** A document as stored (the `documents` row; the services and the wire read it in this shape). */
export type Document = DocumentTable;

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
    return this.#db.selectFrom('documents').selectAll().where('dataset_id', '=', datasetId).where('id', 'in', [...new Set(ids)]).execute();
  }

  /** The served documents (enabled, not archived, with an indexed version) of these datasets. */
  async served(datasetIds: readonly string[]): Promise<Document[]> {
    if (datasetIds.length === 0) return [];
    return this.#db
      .selectFrom('documents')
      .selectAll()
      .where('dataset_id', 'in', [...datasetIds])
      .where('enabled', '=', 1)
      .where('archived', '=', 0)
      .where('active_generation', '>', 0)
      .execute();
  }
}
