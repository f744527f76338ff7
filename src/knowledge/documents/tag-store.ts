import type { Kysely } from 'kysely';
import type { Database } from '../../store/schema.js';
import { newId } from '../../infra/ids.js';
import { inBatches } from '../../store/statement-batches.js';

/** The only tag type Dovetail serves (Dify also has `app` tags, which the Service API does not expose). */
export const KNOWLEDGE = 'knowledge';

/** A knowledge tag of a workspace. */
export interface Tag {
  readonly id: string;
  readonly workspaceId: string;
  readonly type: string;
  readonly name: string;
  readonly createdBy: string;
  readonly createdAt: number;
}

/** A tag with the number of datasets bound to it. */
export interface TagCount {
  readonly id: string;
  readonly name: string;
  readonly type: string;
  readonly bindings: number;
}

/** A tag bound to a dataset. */
export interface BoundTag {
  readonly datasetId: string;
  readonly id: string;
  readonly name: string;
  readonly type: string;
}

/** Knowledge tags (`tags`) and their bindings to datasets (`tag_bindings`). */
export class TagStore {
  readonly #db: Kysely<Database>;

  constructor(db: Kysely<Database>) {
    this.#db = db;
  }

  async nameTaken(workspaceId: string, name: string): Promise<boolean> {
    const row = await this.#db.selectFrom('tags').select('id').where('workspace_id', '=', workspaceId).where('type', '=', KNOWLEDGE).where('name', '=', name).executeTakeFirst();
    return row !== undefined;
  }

  async find(workspaceId: string, id: string): Promise<Tag | undefined> {
    const r = await this.#db.selectFrom('tags').selectAll().where('id', '=', id).where('workspace_id', '=', workspaceId).where('type', '=', KNOWLEDGE).executeTakeFirst();
    return r ? { id: r.id, workspaceId: r.workspace_id, type: r.type, name: r.name, createdBy: r.created_by, createdAt: r.created_at } : undefined;
  }

  async bindingCount(tagId: string): Promise<number> {
    const r = await this.#db.selectFrom('tag_bindings').select((eb) => eb.fn.countAll<number>().as('n')).where('tag_id', '=', tagId).executeTakeFirstOrThrow();
    return Number(r.n);
  }

  /** Every knowledge tag of the workspace with its binding count, newest first. */
  async listWithCounts(workspaceId: string): Promise<TagCount[]> {
    const rows = await this.#db
      .selectFrom('tags as t')
      .leftJoin('tag_bindings as b', 'b.tag_id', 't.id')
      .select((eb) => ['t.id', 't.name', 't.type', 't.created_at', eb.fn.count<number>('b.id').as('n')])
      .where('t.workspace_id', '=', workspaceId)
      .where('t.type', '=', KNOWLEDGE)
      .groupBy(['t.id', 't.name', 't.type', 't.created_at'])
      .orderBy('t.created_at', 'desc')
      .orderBy('t.id')
      .execute();
    return rows.map((r) => ({ id: r.id, name: r.name, type: r.type, bindings: Number(r.n) }));
  }

  async insert(t: Tag): Promise<void> {
    await this.#db.insertInto('tags').values({ id: t.id, workspace_id: t.workspaceId, type: t.type, name: t.name, created_by: t.createdBy, created_at: t.createdAt }).execute();
  }

  async rename(id: string, name: string): Promise<void> {
    await this.#db.updateTable('tags').set({ name }).where('id', '=', id).execute();
  }

  /** Deletes a tag and its bindings, in one transaction. */
  async delete(id: string): Promise<void> {
    await this.#db.transaction().execute(async (trx) => {
      await trx.deleteFrom('tag_bindings').where('tag_id', '=', id).execute();
      await trx.deleteFrom('tags').where('id', '=', id).execute();
    });
  }

  /** Binds the workspace's knowledge tags among `tagIds` to a dataset; unknown ids and existing pairs are skipped. */
  async bind(workspaceId: string, tagIds: readonly string[], datasetId: string, createdBy: string, now: number): Promise<void> {
    await this.#db.transaction().execute(async (trx) => {
      for (const part of inBatches([...new Set(tagIds)])) {
        const known = await trx.selectFrom('tags').select('id').where('workspace_id', '=', workspaceId).where('type', '=', KNOWLEDGE).where('id', 'in', part).execute();
        for (const rows of inBatches(known)) {
          await trx
            .insertInto('tag_bindings')
            .values(rows.map((t) => ({ id: newId(), workspace_id: workspaceId, tag_id: t.id, target_id: datasetId, created_by: createdBy, created_at: now })))
            .onConflict((oc) => oc.columns(['tag_id', 'target_id']).doNothing())
            .execute();
        }
      }
    });
  }

  async unbind(workspaceId: string, tagIds: readonly string[], datasetId: string): Promise<void> {
    await this.#db.transaction().execute(async (trx) => {
      for (const part of inBatches([...new Set(tagIds)])) {
        await trx.deleteFrom('tag_bindings').where('workspace_id', '=', workspaceId).where('target_id', '=', datasetId).where('tag_id', 'in', part).execute();
      }
    });
  }

  /** Removes every binding of a dataset (inside the caller's transaction when given one). */
  async unbindDataset(datasetId: string, db: Kysely<Database> = this.#db): Promise<void> {
    await db.deleteFrom('tag_bindings').where('target_id', '=', datasetId).execute();
  }

  /**
   * A subquery for the ids of datasets bound to any of those knowledge tags (Dify's
   * `get_target_ids_by_tag_ids`), for a dataset listing to filter on.
   */
  taggedDatasetIds(workspaceId: string, tagIds: readonly string[]) {
    return this.#db
      .selectFrom('tag_bindings as b')
      .innerJoin('tags as t', 't.id', 'b.tag_id')
      .select('b.target_id')
      .where('b.workspace_id', '=', workspaceId)
      .where('t.workspace_id', '=', workspaceId)
      .where('t.type', '=', KNOWLEDGE)
      .where('b.tag_id', 'in', [...new Set(tagIds)]);
  }

  /** The knowledge tags bound to these datasets, in name order. */
  async boundTo(datasetIds: readonly string[]): Promise<BoundTag[]> {
    if (datasetIds.length === 0) return [];
    const rows = await this.#db
      .selectFrom('tag_bindings as b')
      .innerJoin('tags as t', (j) => j.onRef('t.id', '=', 'b.tag_id').onRef('t.workspace_id', '=', 'b.workspace_id'))
      .select(['b.target_id', 't.id', 't.name', 't.type'])
      .where('b.target_id', 'in', [...new Set(datasetIds)])
      .where('t.type', '=', KNOWLEDGE)
      .orderBy('t.name')
      .orderBy('t.id')
      .execute();
    return rows.map((r) => ({ datasetId: r.target_id, id: r.id, name: r.name, type: r.type }));
  }
}
