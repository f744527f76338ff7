import type { Kysely } from 'kysely';
import type { Database, DatasetTable } from '../store/schema.js';
import { inBatches } from '../store/statement-batches.js';
import type { TagStore } from './documents/tag-store.js';
import { containsIgnoringCase } from '../store/like.js';

/** A dataset as stored (the `datasets` row; the services and the wire read it in this shape). */
export type Dataset = DatasetTable;

/** What an update of a dataset may change. */
export type DatasetChange = Partial<Omit<DatasetTable, 'id' | 'workspace_id' | 'created_by' | 'created_at' | 'index_version'>>;

/** Knowledge bases (`datasets`). */
export class DatasetStore {
  readonly #db: Kysely<Database>;

  constructor(db: Kysely<Database>) {
    this.#db = db;
  }

  async insert(ds: Dataset): Promise<void> {
    await this.#db.insertInto('datasets').values(ds).execute();
  }

  async find(workspaceId: string, id: string): Promise<Dataset | undefined> {
    return this.#db.selectFrom('datasets').selectAll().where('id', '=', id).where('workspace_id', '=', workspaceId).executeTakeFirst();
  }

  async exists(workspaceId: string, id: string): Promise<boolean> {
    const row = await this.#db.selectFrom('datasets').select('id').where('id', '=', id).where('workspace_id', '=', workspaceId).executeTakeFirst();
    return row !== undefined;
  }

  /** The workspace's datasets among `ids` (any order). */
  async findMany(workspaceId: string, ids: readonly string[]): Promise<Dataset[]> {
    if (ids.length === 0) return [];
    return this.#db.selectFrom('datasets').selectAll().where('id', 'in', [...ids]).where('workspace_id', '=', workspaceId).execute();
  }

  /** The ids among `ids` that name a dataset of the workspace. */
  async existing(workspaceId: string, ids: readonly string[]): Promise<Set<string>> {
    const found = new Set<string>();
    for (const batch of inBatches([...new Set(ids)])) {
      const rows = await this.#db.selectFrom('datasets').select('id').where('workspace_id', '=', workspaceId).where('id', 'in', batch).execute();
      for (const r of rows) found.add(r.id);
    }
    return found;
  }

  /** Each dataset's `indexing_technique` (any workspace). */
  async techniques(ids: readonly string[]): Promise<{ id: string; indexingTechnique: string | null }[]> {
    const rows = await this.#db.selectFrom('datasets').select(['id', 'indexing_technique']).where('id', 'in', [...ids]).execute();
    return rows.map((r) => ({ id: r.id, indexingTechnique: r.indexing_technique }));
  }

  async nameTaken(workspaceId: string, name: string, exceptId?: string): Promise<boolean> {
    let q = this.#db.selectFrom('datasets').select('id').where('workspace_id', '=', workspaceId).where('name', '=', name);
    if (exceptId !== undefined) q = q.where('id', '<>', exceptId);
    return (await q.executeTakeFirst()) !== undefined;
  }

  /** A page of the workspace's datasets, newest first; with `tagIds`, only datasets bound to any of them. */
  async page(workspaceId: string, page: number, limit: number, keyword: string | undefined, tagged: { tags: TagStore; tagIds: readonly string[] } | undefined): Promise<{ rows: Dataset[]; total: number }> {
    let q = this.#db.selectFrom('datasets').where('workspace_id', '=', workspaceId);
    if (tagged !== undefined && tagged.tagIds.length > 0) q = q.where('id', 'in', tagged.tags.taggedDatasetIds(workspaceId, tagged.tagIds));
    if (keyword) q = q.where(containsIgnoringCase('name', keyword));
    const total = Number((await q.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);
    const rows = await q.selectAll().orderBy('created_at', 'desc').orderBy('id').limit(limit).offset((page - 1) * limit).execute();
    return { rows, total };
  }

  async update(id: string, set: DatasetChange): Promise<void> {
    await this.#db.updateTable('datasets').set(set).where('id', '=', id).execute();
  }

  /** Sets the technique (and its embedding model) of a dataset that has none yet. */
  async setTechniqueIfUnset(id: string, set: Pick<DatasetTable, 'indexing_technique' | 'embedding_model' | 'embedding_model_provider' | 'updated_at'>): Promise<void> {
    await this.#db.updateTable('datasets').set(set).where('id', '=', id).where('indexing_technique', 'is', null).execute();
  }

  /** Bumps `index_version` after a swap or delete of served rows (inside the caller's transaction when given one). */
  async bumpIndexVersion(id: string, db: Kysely<Database> = this.#db): Promise<void> {
    await db.updateTable('datasets').set((eb) => ({ index_version: eb('index_version', '+', 1) })).where('id', '=', id).execute();
  }

  async indexVersion(id: string): Promise<number | undefined> {
    const ds = await this.#db.selectFrom('datasets').select('index_version').where('id', '=', id).executeTakeFirst();
    return ds?.index_version;
  }

  /** Which of these datasets have the built-in metadata fields enabled. */
  async builtInEnabled(ids: readonly string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const rows = await this.#db.selectFrom('datasets').select('id').where('id', 'in', [...ids]).where('built_in_field_enabled', '=', 1).execute();
    return new Set(rows.map((r) => r.id));
  }

  async delete(id: string, db: Kysely<Database> = this.#db): Promise<void> {
    await db.deleteFrom('datasets').where('id', '=', id).execute();
  }
}
