import type { Kysely } from 'kysely';
import type { Database } from '../../store/schema.js';
import type { Clock } from '../../infra/clock.js';
import { newId } from '../../infra/ids.js';
import { invalidParam, notFound } from '../../infra/errors.js';
import { DatasetStore } from '../dataset-store.js';
import { KNOWLEDGE, TagStore, type Tag } from './tag-store.js';

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
  readonly #tags: TagStore;
  readonly #datasets: DatasetStore;
  readonly #clock: Clock;
  readonly #nameMax: number;

  constructor(db: Kysely<Database>, clock: Clock, nameMax: number) {
    this.#tags = new TagStore(db);
    this.#datasets = new DatasetStore(db);
    this.#clock = clock;
    this.#nameMax = nameMax;
  }

  #name(v: unknown): string {
    if (typeof v !== 'string' || v.length < 1 || v.length > this.#nameMax) throw invalidParam(`name must be between 1 and ${this.#nameMax} characters.`);
    return v;
  }

  async #find(workspaceId: string, tagId: unknown): Promise<Tag> {
    const tag = await this.#tags.find(workspaceId, requiredString(tagId, 'tag_id'));
    if (!tag) throw tagNotFound();
    return tag;
  }

  /** Every knowledge tag of the workspace with its binding count, newest first (as Dify). */
  async list(workspaceId: string): Promise<TagWithCount[]> {
    const rows = await this.#tags.listWithCounts(workspaceId);
    return rows.map((r) => ({ id: r.id, name: r.name, type: r.type, binding_count: String(r.bindings) }));
  }

  /** Creates a tag; 400 `Tag name already exists` when the workspace has one of that name. */
  async create(workspaceId: string, rawName: unknown, createdBy: string): Promise<TagWithCount> {
    const name = this.#name(rawName);
    if (await this.#tags.nameTaken(workspaceId, name)) throw invalidParam('Tag name already exists');
    const tag: Tag = { id: newId(), workspaceId, type: KNOWLEDGE, name, createdBy, createdAt: this.#clock.now() };
    try {
      await this.#tags.insert(tag);
    } catch (err) {
      // The unique index settles a concurrent create of the same name.
      if (await this.#tags.nameTaken(workspaceId, name)) throw invalidParam('Tag name already exists');
      throw err;
    }
    return { id: tag.id, name, type: KNOWLEDGE, binding_count: '0' };
  }

  /** Renames a tag. As Dify, any tag of that name (the tag itself included) is a conflict. */
  async rename(workspaceId: string, tagId: unknown, rawName: unknown): Promise<TagWithCount> {
    const name = this.#name(rawName);
    const tag = await this.#find(workspaceId, tagId);
    if (await this.#tags.nameTaken(workspaceId, name)) throw invalidParam('Tag name already exists');
    try {
      await this.#tags.rename(tag.id, name);
    } catch (err) {
      if (await this.#tags.nameTaken(workspaceId, name)) throw invalidParam('Tag name already exists');
      throw err;
    }
    return { id: tag.id, name, type: tag.type, binding_count: String(await this.#tags.bindingCount(tag.id)) };
  }

  /** Deletes a tag and its bindings (the datasets stay). */
  async delete(workspaceId: string, tagId: unknown): Promise<void> {
    const tag = await this.#find(workspaceId, tagId);
    await this.#tags.delete(tag.id);
  }

  async #target(workspaceId: string, targetId: unknown): Promise<string> {
    const id = requiredString(targetId, 'target_id');
    if (!(await this.#datasets.exists(workspaceId, id))) throw notFound('Dataset not found');
    return id;
  }

  /** Binds tags to a dataset. Unknown tag ids and existing bindings are skipped (as Dify). */
  async bind(workspaceId: string, rawTagIds: unknown, rawTargetId: unknown, createdBy: string): Promise<void> {
    const tagIds = strings(rawTagIds ?? [], 'tag_ids');
    if (tagIds.length === 0) throw invalidParam('Tag IDs is required.');
    const target = await this.#target(workspaceId, rawTargetId);
    await this.#tags.bind(workspaceId, tagIds, target, createdBy, this.#clock.now());
  }

  /** Unbinds tags (`tag_ids`, or Dify's legacy single `tag_id`) from a dataset; unbound pairs are skipped. */
  async unbind(workspaceId: string, rawTagIds: unknown, rawTagId: unknown, rawTargetId: unknown): Promise<void> {
    let tagIds = rawTagIds === undefined || rawTagIds === null ? [] : strings(rawTagIds, 'tag_ids');
    if (tagIds.length === 0 && typeof rawTagId === 'string' && rawTagId !== '') tagIds = [rawTagId];
    if (tagIds.length === 0) throw invalidParam('Tag IDs is required.');
    const target = await this.#target(workspaceId, rawTargetId);
    await this.#tags.unbind(workspaceId, tagIds, target);
  }

  /** The knowledge tags bound to each dataset, in name order. */
  async forDatasets(datasetIds: readonly string[]): Promise<Map<string, DatasetTag[]>> {
    const out = new Map<string, DatasetTag[]>();
    for (const r of await this.#tags.boundTo(datasetIds)) {
      const list = out.get(r.datasetId) ?? [];
      list.push({ id: r.id, name: r.name, type: r.type });
      out.set(r.datasetId, list);
    }
    return out;
  }
}
