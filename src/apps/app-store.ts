import type { Kysely } from 'kysely';
import type { AppTable, Database } from '../store/schema.js';
import type { AppMode, DslDocument } from './dsl.js';
import { SiteStore, type Site } from './site-store.js';

export const KEY_TYPES = ['app', 'dataset'] as const;
export type KeyType = (typeof KEY_TYPES)[number];

/** An API key as stored (its token only as a hash). */
export interface ApiKeyInfo {
  readonly id: string;
  readonly type: KeyType;
  readonly appId: string | null;
  readonly workspaceId: string;
  readonly hint: string;
  readonly createdAt: number;
  readonly lastUsedAt: number | null;
}

/** A key found by its token. */
export interface ResolvedKey {
  readonly id: string;
  readonly type: KeyType;
  readonly appId: string | null;
  readonly workspaceId: string;
}

/**
 * An app as stored: its DSL document parsed, with the values of secret environment variables
 * still sealed (AppService opens them).
 */
export interface AppRecord {
  readonly id: string;
  readonly workspaceId: string;
  readonly name: string;
  readonly mode: AppMode;
  readonly description: string;
  readonly icon: string;
  readonly dsl: DslDocument;
  readonly enableApi: boolean;
  readonly status: string;
  readonly maxActiveRequests: number | null;
  readonly createdAt: number;
  readonly updatedAt: number;
  /** Graph version: 1 at import, one more per update. */
  readonly version: number;
}

/** What a new version of an app's graph changes. */
export interface AppVersionChange {
  readonly name: string;
  readonly description: string;
  readonly icon: string;
  /** Secret values sealed. */
  readonly dsl: DslDocument;
  readonly updatedAt: number;
}

function toRecord(row: AppTable): AppRecord {
  return {
    id: row.id,
    workspaceId: row.workspace_id,
    name: row.name,
    mode: row.mode as AppMode,
    description: row.description,
    icon: row.icon,
    dsl: JSON.parse(row.dsl) as DslDocument,
    enableApi: row.enable_api === 1,
    status: row.status,
    maxActiveRequests: row.max_active_requests,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    version: Number(row.version),
  };
}

function toRow(app: AppRecord): AppTable {
  return {
    id: app.id,
    workspace_id: app.workspaceId,
    name: app.name,
    mode: app.mode,
    description: app.description,
    icon: app.icon,
    dsl: JSON.stringify(app.dsl),
    enable_api: app.enableApi ? 1 : 0,
    status: app.status,
    max_active_requests: app.maxActiveRequests,
    created_at: app.createdAt,
    updated_at: app.updatedAt,
    version: app.version,
  };
}

/**
 * The apps domain's tables: `apps`, `app_versions` and `api_keys` (and the single workspace row
 * apps belong to). Reads and writes only; AppService and KeyService decide.
 */
export class AppStore {
  readonly #db: Kysely<Database>;

  constructor(db: Kysely<Database>) {
    this.#db = db;
  }

  /** The names of apps `ids` that still exist (for listings of other domains' rows, e.g. `run list`). */
  async namesOf(ids: readonly string[]): Promise<Map<string, string>> {
    const unique = [...new Set(ids)];
    if (unique.length === 0) return new Map();
    const rows = await this.#db.selectFrom('apps').select(['id', 'name']).where('id', 'in', unique).execute();
    return new Map(rows.map((r) => [r.id, r.name]));
  }

  /** The id of the oldest workspace; undefined when there is none yet. */
  async firstWorkspaceId(): Promise<string | undefined> {
    const row = await this.#db.selectFrom('workspaces').select('id').orderBy('created_at').limit(1).executeTakeFirst();
    return row?.id;
  }

  /** A workspace's id and name, by id or by name; undefined when there is none. */
  async workspace(ref: { id: string } | { name: string }): Promise<{ id: string; name: string } | undefined> {
    const q = this.#db.selectFrom('workspaces').select(['id', 'name']);
    return ('id' in ref ? q.where('id', '=', ref.id) : q.where('name', '=', ref.name).orderBy('created_at')).limit(1).executeTakeFirst();
  }

  async insertWorkspace(id: string, name: string, createdAt: number): Promise<void> {
    await this.#db.insertInto('workspaces').values({ id, name, created_at: createdAt }).execute();
  }

  /** Stores a new app, its first graph version (its `version`) and its web app's site in one transaction. */
  async insert(app: AppRecord, site: Site): Promise<void> {
    const row = toRow(app);
    await this.#db.transaction().execute(async (trx) => {
      await trx.insertInto('apps').values(row).execute();
      await trx.insertInto('app_versions').values({ app_id: row.id, version: row.version, dsl: row.dsl, created_at: row.created_at }).execute();
      if (!(await new SiteStore(trx).insert(site))) throw new Error(`the site code drawn for app ${row.id} is taken; import again`);
    });
  }

  /**
   * Stores version `fromVersion + 1` of an app's graph, only while the app is at `fromVersion`
   * (one transaction). False when the app is gone or another writer got there first.
   */
  async addVersion(id: string, fromVersion: number, change: AppVersionChange): Promise<boolean> {
    const dsl = JSON.stringify(change.dsl);
    const version = fromVersion + 1;
    return this.#db.transaction().execute(async (trx) => {
      const res = await trx
        .updateTable('apps')
        .set({ name: change.name, description: change.description, icon: change.icon, dsl, updated_at: change.updatedAt, version })
        .where('id', '=', id)
        .where('version', '=', fromVersion)
        .executeTakeFirst();
      if (Number(res.numUpdatedRows) !== 1) return false;
      await trx.insertInto('app_versions').values({ app_id: id, version, dsl, created_at: change.updatedAt }).execute();
      return true;
    });
  }

  /**
   * Deletes an app with its versions, keys and site in one transaction, in which `alsoDelete` (when
   * given) removes the app's other data. False when there is no such app.
   */
  async delete(id: string, alsoDelete?: (trx: Kysely<Database>, appId: string) => Promise<void>): Promise<boolean> {
    return this.#db.transaction().execute(async (trx) => {
      const res = await trx.deleteFrom('apps').where('id', '=', id).executeTakeFirst();
      if (Number(res.numDeletedRows) !== 1) return false;
      await trx.deleteFrom('app_versions').where('app_id', '=', id).execute();
      await trx.deleteFrom('api_keys').where('app_id', '=', id).execute();
      await new SiteStore(trx).deleteOf(id);
      if (alsoDelete) await alsoDelete(trx, id);
      return true;
    });
  }

  /** The app's current graph version (one small read); undefined when there is no such app. */
  async versionOf(id: string): Promise<number | undefined> {
    const row = await this.#db.selectFrom('apps').select('version').where('id', '=', id).executeTakeFirst();
    return row ? Number(row.version) : undefined;
  }

  /** The workspace an app belongs to; undefined when there is no such app. */
  async workspaceOf(id: string): Promise<string | undefined> {
    const row = await this.#db.selectFrom('apps').select('workspace_id').where('id', '=', id).executeTakeFirst();
    return row?.workspace_id;
  }

  async find(id: string): Promise<AppRecord | undefined> {
    const row = await this.#db.selectFrom('apps').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? toRecord(row) : undefined;
  }

  /** The DSL document (secrets sealed) of one version of an app's graph. */
  async findVersionDsl(id: string, version: number): Promise<DslDocument | undefined> {
    const row = await this.#db.selectFrom('app_versions').select('dsl').where('app_id', '=', id).where('version', '=', version).executeTakeFirst();
    return row ? (JSON.parse(row.dsl) as DslDocument) : undefined;
  }

  /** Every app (of one workspace when `workspaceId` is given), oldest first. */
  async list(workspaceId?: string): Promise<AppRecord[]> {
    let q = this.#db.selectFrom('apps').selectAll();
    if (workspaceId !== undefined) q = q.where('workspace_id', '=', workspaceId);
    const rows = await q.orderBy('created_at').execute();
    return rows.map(toRecord);
  }

  async count(): Promise<number> {
    const r = await this.#db.selectFrom('apps').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
    return Number(r.n);
  }

  /** Stores a new key; `tokenHash` is the SHA-256 hex of its token. */
  async insertKey(key: ApiKeyInfo, tokenHash: string): Promise<void> {
    await this.#db
      .insertInto('api_keys')
      .values({
        id: key.id,
        type: key.type,
        app_id: key.appId,
        workspace_id: key.workspaceId,
        token_hash: tokenHash,
        hint: key.hint,
        created_at: key.createdAt,
        last_used_at: key.lastUsedAt,
      })
      .execute();
  }

  /** The key of type `type` whose token hashes to `tokenHash`. */
  async findKey(tokenHash: string, type: KeyType): Promise<ResolvedKey | undefined> {
    const row = await this.#db
      .selectFrom('api_keys')
      .select(['id', 'type', 'app_id', 'workspace_id'])
      .where('token_hash', '=', tokenHash)
      .where('type', '=', type)
      .executeTakeFirst();
    return row ? { id: row.id, type: row.type as KeyType, appId: row.app_id, workspaceId: row.workspace_id } : undefined;
  }

  async setKeyLastUsed(id: string, at: number): Promise<void> {
    await this.#db.updateTable('api_keys').set({ last_used_at: at }).where('id', '=', id).execute();
  }

  /** Every key, oldest first. */
  async listKeys(): Promise<ApiKeyInfo[]> {
    const rows = await this.#db.selectFrom('api_keys').selectAll().orderBy('created_at').execute();
    return rows.map((r) => ({
      id: r.id,
      type: r.type as KeyType,
      appId: r.app_id,
      workspaceId: r.workspace_id,
      hint: r.hint,
      createdAt: r.created_at,
      lastUsedAt: r.last_used_at,
    }));
  }

  /** Deletes a key; false when no key has that id. */
  async deleteKey(id: string): Promise<boolean> {
    const res = await this.#db.deleteFrom('api_keys').where('id', '=', id).executeTakeFirst();
    return Number(res.numDeletedRows) > 0;
  }
}
