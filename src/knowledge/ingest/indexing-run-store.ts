import type { Kysely } from 'kysely';
import type { Database, IndexingRunTable } from '../../store/schema.js';
import type { IndexingStatus } from '../documents/document-store.js';
import { inBatches } from '../../store/statement-batches.js';

/** One indexing run (a create or update of a document being indexed), its status typed. */
export type IndexingRun = Omit<IndexingRunTable, 'status'> & { status: IndexingStatus };

/** What a stage change of a run may set besides its status. */
export type RunChange = Partial<Omit<IndexingRunTable, 'id' | 'status'>>;

/** Statuses from which a run can still be claimed and indexed. */
const ACTIVE: readonly IndexingStatus[] = ['waiting', 'parsing', 'cleaning', 'splitting', 'indexing'];

const toRun = (r: IndexingRunTable): IndexingRun => r as IndexingRun;

/** Indexing runs (`indexing_runs`). Writes by an execution are fenced by its `owner`. */
export class IndexingRunStore {
  readonly #db: Kysely<Database>;

  constructor(db: Kysely<Database>) {
    this.#db = db;
  }

  /** Inserts a run (inside the caller's transaction). */
  async insert(db: Kysely<Database>, run: IndexingRun): Promise<void> {
    await db.insertInto('indexing_runs').values(run).execute();
  }

  async find(id: string): Promise<IndexingRun | undefined> {
    const r = await this.#db.selectFrom('indexing_runs').selectAll().where('id', '=', id).executeTakeFirst();
    return r ? toRun(r) : undefined;
  }

  async owner(id: string): Promise<string | null | undefined> {
    return (await this.#db.selectFrom('indexing_runs').select('owner').where('id', '=', id).executeTakeFirst())?.owner;
  }

  /** Runs by id (those that exist). */
  async findMany(ids: readonly string[]): Promise<IndexingRun[]> {
    const out: IndexingRun[] = [];
    for (const batch of inBatches(ids)) out.push(...(await this.#db.selectFrom('indexing_runs').selectAll().where('id', 'in', batch).execute()).map(toRun));
    return out;
  }

  /** The runs of a batch (one per document accepted with it), oldest first. */
  async ofBatch(datasetId: string, batch: string): Promise<IndexingRun[]> {
    const rows = await this.#db.selectFrom('indexing_runs').selectAll().where('dataset_id', '=', datasetId).where('batch', '=', batch).orderBy('created_at').execute();
    return rows.map(toRun);
  }

  /** Gives an active run a new owner; false when it is finished, failed, paused or gone. */
  async claim(id: string, owner: string): Promise<boolean> {
    const res = await this.#db.updateTable('indexing_runs').set({ owner }).where('id', '=', id).where('status', 'in', ACTIVE).executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }

  /**
   * Updates the run if `run.owner` still owns it (inside `db`'s transaction when given one);
   * false when it does not.
   */
  async updateOwned(run: Pick<IndexingRun, 'id' | 'owner'>, set: RunChange & { status?: IndexingStatus }, db: Kysely<Database> = this.#db): Promise<boolean> {
    const res = await db
      .updateTable('indexing_runs')
      .set(set)
      .where('id', '=', run.id)
      .where((eb) => (run.owner === null ? eb('owner', 'is', null) : eb('owner', '=', run.owner)))
      .executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }

  /**
   * Clears the "parsing" mark `owner` set (see `parsing_owner`), whoever owns the run now; a mark
   * a pause already cleared (or another execution's) is left alone.
   */
  async clearParsing(id: string, owner: string): Promise<void> {
    await this.#db.updateTable('indexing_runs').set({ parsing_owner: null }).where('id', '=', id).where('parsing_owner', '=', owner).execute();
  }

  /**
   * Moves a run from one of `from` to `status` (inside the caller's transaction), clearing its
   * owner and its parsing mark (an execution paused mid-parse is still alive: the resumed run must
   * not take its mark for a dead one); false when it was in none of them.
   */
  async transition(db: Kysely<Database>, id: string, from: readonly IndexingStatus[], set: { status: IndexingStatus; paused_at: number | null; updated_at: number }): Promise<boolean> {
    const res = await db
      .updateTable('indexing_runs')
      .set({ ...set, owner: null, parsing_owner: null })
      .where('id', '=', id)
      .where('status', 'in', [...from])
      .executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }

  /** Removes a document's runs (inside the caller's transaction). */
  async deleteForDocument(db: Kysely<Database>, documentId: string): Promise<void> {
    await db.deleteFrom('indexing_runs').where('document_id', '=', documentId).execute();
  }
}
