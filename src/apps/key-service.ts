import type { Kysely } from 'kysely';
import type { Database } from '../store/schema.js';
import type { Clock } from '../infra/clock.js';
import { newId, newSecret, sha256 } from '../infra/ids.js';
import type { Bus } from '../infra/bus/bus.js';

export const KEY_TYPES = ['app', 'dataset'] as const;
export type KeyType = (typeof KEY_TYPES)[number];

export interface ApiKeyInfo {
  readonly id: string;
  readonly type: KeyType;
  readonly appId: string | null;
  readonly workspaceId: string;
  readonly hint: string;
  readonly createdAt: number;
  readonly lastUsedAt: number | null;
}

/** A key found by its token; `undefined` when none matches. */
export interface ResolvedKey {
  readonly id: string;
  readonly type: KeyType;
  readonly appId: string | null;
  readonly workspaceId: string;
}

const CACHE_TTL_MS = 60_000;
/** Bus channel a revocation is announced on (the message is the key id); every instance drops its cached lookups. */
export const KEYS_REVOKED_CHANNEL = 'api-keys:revoked';
/** `last_used_at` is written at most this often per key when lookups are not cached. */
const LAST_USED_EVERY_MS = 60_000;
/** Lookups remembered, found or not; past this the oldest go, so made-up tokens cannot grow memory. */
const CACHE_MAX_ENTRIES = 10_000;
/** Every key this server makes: its type, `-`, 24 random bytes in URL-safe base64. Nothing else is looked up. */
const TOKEN_SHAPE = /^(?:app|dataset)-[A-Za-z0-9_-]{32}$/;

/**
 * API keys: random (192 bits), prefixed `app-` / `dataset-`, stored only as SHA-256 hashes and
 * shown once. A revoked key must stop working at once on every instance, so a found key is cached
 * (for a minute, by token, up to CACHE_MAX_ENTRIES) only when `cacheFound` is set, which the
 * runtime does when the bus is shared: a revocation (from any instance or the CLI) is announced on
 * KEYS_REVOKED_CHANNEL and every instance clears its cache. Without a shared bus every lookup reads
 * the database. Tokens that match no key are cached either way (a new key is a new token).
 */
export class KeyService {
  readonly #db: Kysely<Database>;
  readonly #clock: Clock;
  readonly #cache = new Map<string, { key: ResolvedKey | undefined; at: number }>();
  /** Bumped by every revocation: a lookup that read the row before it must not cache what it read. */
  #generation = 0;
  readonly #cacheFound: boolean;
  /** Key id → when `last_used_at` was last written (uncached lookups write it at most every LAST_USED_EVERY_MS). */
  readonly #lastUsedWritten = new Map<string, number>();

  constructor(db: Kysely<Database>, clock: Clock, opts: { cacheFound?: boolean } = {}) {
    this.#db = db;
    this.#clock = clock;
    this.#cacheFound = opts.cacheFound ?? false;
  }

  /** Drops cached lookups whenever a revocation is announced on the bus; returns the unsubscribe function. */
  async listen(bus: Bus): Promise<() => Promise<void>> {
    return bus.subscribe(KEYS_REVOKED_CHANNEL, () => this.#forget());
  }

  #forget(): void {
    this.#generation++;
    this.#cache.clear();
  }

  /** Creates a key and returns its plain text (the only time it exists). */
  async create(type: KeyType, workspaceId: string, appId: string | null): Promise<{ id: string; apiKey: string }> {
    const apiKey = `${type}-${newSecret(24)}`;
    const id = newId();
    await this.#db
      .insertInto('api_keys')
      .values({
        id,
        type,
        app_id: appId,
        workspace_id: workspaceId,
        token_hash: sha256(apiKey),
        hint: `${apiKey.slice(0, type.length + 5)}…`,
        created_at: this.#clock.now(),
        last_used_at: null,
      })
      .execute();
    return { id, apiKey };
  }

  /** Finds the key of the given scope; a key of the other scope is not found. */
  async resolve(token: string, scope: KeyType): Promise<ResolvedKey | undefined> {
    // A token of another shape matches no key; it is neither looked up nor remembered (a 16 KB
    // made-up token would otherwise hold 16 KB of cache).
    if (!TOKEN_SHAPE.test(token)) return undefined;
    const now = this.#clock.now();
    const generation = this.#generation;
    const cacheKey = `${scope}:${token}`;
    const hit = this.#cache.get(cacheKey);
    if (hit && now - hit.at < CACHE_TTL_MS) return hit.key;
    this.#cache.delete(cacheKey);
    const row = await this.#db
      .selectFrom('api_keys')
      .select(['id', 'type', 'app_id', 'workspace_id'])
      .where('token_hash', '=', sha256(token))
      .where('type', '=', scope)
      .executeTakeFirst();
    const key = row ? { id: row.id, type: row.type as KeyType, appId: row.app_id, workspaceId: row.workspace_id } : undefined;
    if (generation === this.#generation && (!key || this.#cacheFound)) {
      this.#cache.set(cacheKey, { key, at: now });
      if (this.#cache.size > CACHE_MAX_ENTRIES) this.#cache.delete(this.#cache.keys().next().value!);
    }
    if (key && now - (this.#lastUsedWritten.get(key.id) ?? -Infinity) >= LAST_USED_EVERY_MS) {
      this.#lastUsedWritten.delete(key.id);
      this.#lastUsedWritten.set(key.id, now);
      if (this.#lastUsedWritten.size > CACHE_MAX_ENTRIES) this.#lastUsedWritten.delete(this.#lastUsedWritten.keys().next().value!);
      await this.#db.updateTable('api_keys').set({ last_used_at: now }).where('id', '=', key.id).execute();
    }
    return key;
  }

  async list(): Promise<ApiKeyInfo[]> {
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

  /** Deletes a key; returns false when no key has that id. */
  async revoke(id: string): Promise<boolean> {
    const res = await this.#db.deleteFrom('api_keys').where('id', '=', id).executeTakeFirst();
    this.#forget();
    this.#lastUsedWritten.delete(id);
    return Number(res.numDeletedRows) > 0;
  }
}
