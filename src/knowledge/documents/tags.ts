import type { Kysely } from 'kysely';
import type { Database, TagTable } from '../../store/schema.js';
import type { Clock } from '../../infra/clock.js';
import { newId } from '../../infra/ids.js';
import { invalidParam, notFound } from '../../infra/errors.js';
import { inBatches } from '../../store/statement-batches.js';

/** The only tag type Dovetail serves (Dify also has `app` tags, which the Service API does not expose). */
const KNOWLEDGE = 'knowledge';

/** A tag as Dify's list answers it: `binding_count` is a string (Dify's `fields.String`). */
export interface TagWithCount {
  readonly id: string;
  readonly name: string;
  readonly type: string;
  readonly binding_count: string;
}

/** A tag as a dataset object reports it. */
export interface DatasetTag {
  readonly id: string;
  readonly name: string;
  readonly type: string;
}

function tagNotFound() {
  return notFound('Tag not found');
}

function strings(v: unknown, field: string): string[] {
  if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) throw invalidParam(`${field} must be a list of strings.`);
  return v as string[];
}

function requiredString(v: unknown, field: string): string {
  if (typeof v !== 'string' || v === '') throw invalidParam(`${field} is required.`);
  return v;
}

/**
 * Knowledge tags of a workspace and their bindings to datasets (Dify's `TagService` for type
 * `knowledge`). Names are unique per workspace, at most `nameMax` characters (`KNOWLEDGE_TAG_NAME_MAX_LENGTH`, default 50).
 */
export class TagService {
  readonly #db: Kysely<Database>;
  readonly #clock: Clock;
  readonly #nameMax: number;

  constructor(db: Kysely<Database>, clock: Clock, nameMax: number) {
    this.#db = db;
    this.#clock = clock;
    this.#nameMax = nameMax;
  }

  #name(v: unknown): string {
    if (typeof v !== 'string' || v.length < 1 || v.length > this.#nameMax) throw invalidParam(`name must be between 1 and ${this.#nameMax} characters.`);
    return v;
  }

  async #nameTaken(workspaceId: string, name: string): Promise<boolean> {
    const row = await this.#db.selectFrom('tags').select('id').where('workspace_id', '=', workspaceId).where('type', '=', KNOWLEDGE).where('name', '=', name).executeTakeFirst();
    return row !== undefined;
  }

  async #find(workspaceId: string, tagId: unknown): Promise<TagTable> {
    const id = requiredString(tagId, 'tag_id');
    const row = await this.#db.selectFrom('tags').selectAll().where('id', '=', id).where('workspace_id', '=', workspaceId).where('type', '=', KNOWLEDGE).executeTakeFirst();
    if (!row) throw tagNotFound();
    return row;
  }

  async #count(tagId: string): Promise<number> {
    const r = await this.#db.selectFrom('tag_bindings').select((eb) => eb.fn.countAll<number>().as('n')).where('tag_id', '=', tagId).executeTakeFirstOrThrow();
    return Number(r.n);
  }

  /** Every knowledge tag of the workspace with its binding count, newest first (as Dify). */
  async list(workspaceId: string): Promise<TagWithCount[]> {
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
    return rows.map((r) => ({ id: r.id, name: r.name, type: r.type, binding_count: String(Number(r.n)) }));
  }

  /** Creates a tag; 400 `Tag name already exists` when the workspace has one of that name. */
  async create(workspaceId: string, rawName: unknown, createdBy: string): Promise<TagWithCount> {
    const name = this.#name(rawName);
    if (await this.#nameTaken(workspaceId, name)) throw invalidParam('Tag name already exists');
    const row: TagTable = { id: newId(), workspace_id: workspaceId, type: KNOWLEDGE, name, created_by: createdBy, created_at: this.#clock.now() };
    try {
      await this.#db.insertInto('tags').values(row).execute();
    } catch (err) {
      // The unique index settles a concurrent create of the same name.
      if (await this.#nameTaken(workspaceId, name)) throw invalidParam('Tag name already exists');
      throw err;
    }
    return { id: row.id, name, type: KNOWLEDGE, binding_count: '0' };
  }

  /** Renames a tag. As Dify, any tag of that name (the tag itself included) is a conflict. */
  async rename(workspaceId: string, tagId: unknown, rawName: unknown): Promise<TagWithCount> {
    const name = this.#name(rawName);
    const tag = await this.#find(workspaceId, tagId);
    if (await this.#nameTaken(workspaceId, name)) throw invalidParam('Tag name already exists');
    try {
      await this.#db.updateTable('tags').set({ name }).where('id', '=', tag.id).execute();
    } catch (err) {
      if (await this.#nameTaken(workspaceId, name)) throw invalidParam('Tag name already exists');
      throw err;
    }
    return { id: tag.id, name, type: tag.type, binding_count: String(await this.#count(tag.id)) };
  }

  /** Deletes a tag and its bindings (the datasets stay). */
  async delete(workspaceId: string, tagId: unknown): Promise<void> {
    const tag = await this.#find(workspaceId, tagId);
    await this.#db.transaction().execute(async (trx) => {
      await trx.deleteFrom('tag_bindings').where('tag_id', '=', tag.id).execute();
      await trx.deleteFrom('tags').where('id', '=', tag.id).execute();
    });
  }

  async #target(workspaceId: string, targetId: unknown): Promise<string> {
    const id = requiredString(targetId, 'target_id');
    const ds = await this.#db.selectFrom('datasets').select('id').where('id', '=', id).where('workspace_id', '=', workspaceId).executeTakeFirst();
    if (!ds) throw notFound('Dataset not found');
    return ds.id;
  }

  /** Binds tags to a dataset. Unknown tag ids and existing bindings are skipped (as Dify). */
  async bind(workspaceId: string, rawTagIds: unknown, rawTargetId: unknown, createdBy: string): Promise<void> {
    const tagIds = strings(rawTagIds ?? [], 'tag_ids');
    if (tagIds.length === 0) throw invalidParam('Tag IDs is required.');
    const target = await this.#target(workspaceId, rawTargetId);
    const now = this.#clock.now();
    await this.#db.transaction().execute(async (trx) => {
      for (const part of inBatches([...new Set(tagIds)])) {
        const known = await trx.selectFrom('tags').select('id').where('workspace_id', '=', workspaceId).where('type', '=', KNOWLEDGE).where('id', 'in', part).execute();
        for (const rows of inBatches(known)) {
          await trx
            .insertInto('tag_bindings')
            .values(rows.map((t) => ({ id: newId(), workspace_id: workspaceId, tag_id: t.id, target_id: target, created_by: createdBy, created_at: now })))
            .onConflict((oc) => oc.columns(['tag_id', 'target_id']).doNothing())
            .execute();
        }
      }
    });
  }

  /** Unbinds tags (`tag_ids`, or Dify's legacy single `tag_id`) from a dataset; unbound pairs are skipped. */
  async unbind(workspaceId: string, rawTagIds: unknown, rawTagId: unknown, rawTargetId: unknown): Promise<void> {
    let tagIds = rawTagIds === undefined || rawTagIds === null ? [] : strings(rawTagIds, 'tag_ids');
    if (tagIds.length === 0 && typeof rawTagId === 'string' && rawTagId !== '') tagIds = [rawTagId];
    if (tagIds.length === 0) throw invalidParam('Tag IDs is required.');
    const target = await this.#target(workspaceId, rawTargetId);
    await this.#db.transaction().execute(async (trx) => {
      for (const part of inBatches([...new Set(tagIds)])) {
        await trx.deleteFrom('tag_bindings').where('workspace_id', '=', workspaceId).where('target_id', '=', target).where('tag_id', 'in', part).execute();
      }
    });
  }

  /** The knowledge tags bound to each dataset, in name order. */
  async forDatasets(datasetIds: readonly string[]): Promise<Map<string, DatasetTag[]>> {
    const out = new Map<string, DatasetTag[]>();
    if (datasetIds.length === 0) return out;
    const rows = await this.#db
      .selectFrom('tag_bindings as b')
      .innerJoin('tags as t', (j) => j.onRef('t.id', '=', 'b.tag_id').onRef('t.workspace_id', '=', 'b.workspace_id'))
      .select(['b.target_id', 't.id', 't.name', 't.type'])
      .where('b.target_id', 'in', [...new Set(datasetIds)])
      .where('t.type', '=', KNOWLEDGE)
      .orderBy('t.name')
      .orderBy('t.id')
      .execute();
    for (const r of rows) {
      const list = out.get(r.target_id) ?? [];
      list.push({ id: r.id, name: r.name, type: r.type });
      out.set(r.target_id, list);
    }
    return out;
  }
}
