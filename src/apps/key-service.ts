import type { Clock } from '../infra/clock.js';
import { newId, newSecret, sha256 } from '../infra/ids.js';
import type { Bus } from '../infra/bus/bus.js';
import type { ApiKeyInfo, AppStore, KeyType, ResolvedKey } from './app-store.js';

export { KEY_TYPES, type ApiKeyInfo, type KeyType, type ResolvedKey } from './app-store.js';

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
 * KEYS_REVOKED_CHANNEL and every instance clears its cache. Without a shared bus a found key is
 * used from the cache only while the store's `changeStamp` (SQLite's: another process such as the
 * CLI committed nothing) is what it was when the key was read; otherwise every lookup reads the
 * database. Tokens that match no key are cached either way (a new key is a new token).
 */
export class KeyService {
  readonly #store: AppStore;
  readonly #clock: Clock;
  readonly #cache = new Map<string, { key: ResolvedKey | undefined; at: number; stamp: number | undefined }>();
  /** Bumped by every revocation: a lookup that read the row before it must not cache what it read. */
  #generation = 0;
  readonly #cacheFound: boolean;
  readonly #changeStamp: (() => number) | undefined;
  /** Key id → when `last_used_at` was last written (uncached lookups write it at most every LAST_USED_EVERY_MS). */
  readonly #lastUsedWritten = new Map<string, number>();

  constructor(store: AppStore, clock: Clock, opts: { cacheFound?: boolean; changeStamp?: () => number } = {}) {
    this.#store = store;
    this.#clock = clock;
    this.#cacheFound = opts.cacheFound ?? false;
    this.#changeStamp = opts.changeStamp;
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
    const key: ApiKeyInfo = { id, type, appId, workspaceId, hint: `${apiKey.slice(0, type.length + 5)}…`, createdAt: this.#clock.now(), lastUsedAt: null };
    await this.#store.insertKey(key, sha256(apiKey));
    return { id, apiKey };
  }

  /** Finds the key of the given scope; a key of the other scope is not found. */
  async resolve(token: string, scope: KeyType): Promise<ResolvedKey | undefined> {
    // A token of another shape matches no key; it is neither looked up nor remembered (a 16 KB
    // made-up token would otherwise hold 16 KB of cache).
    if (!TOKEN_SHAPE.test(token)) return undefined;
    const now = this.#clock.now();
    const generation = this.#generation;
    const stamp = this.#changeStamp?.();
    const cacheKey = `${scope}:${token}`;
    const hit = this.#cache.get(cacheKey);
    if (hit && now - hit.at < CACHE_TTL_MS && (!hit.key || this.#cacheFound || (stamp !== undefined && stamp === hit.stamp))) return hit.key;
    this.#cache.delete(cacheKey);
    const key = await this.#store.findKey(sha256(token), scope);
    if (generation === this.#generation && (!key || this.#cacheFound || stamp !== undefined)) {
      this.#cache.set(cacheKey, { key, at: now, stamp });
      if (this.#cache.size > CACHE_MAX_ENTRIES) this.#cache.delete(this.#cache.keys().next().value!);
    }
    if (key && now - (this.#lastUsedWritten.get(key.id) ?? -Infinity) >= LAST_USED_EVERY_MS) {
      this.#lastUsedWritten.delete(key.id);
      this.#lastUsedWritten.set(key.id, now);
      if (this.#lastUsedWritten.size > CACHE_MAX_ENTRIES) this.#lastUsedWritten.delete(this.#lastUsedWritten.keys().next().value!);
      await this.#store.setKeyLastUsed(key.id, now);
    }
    return key;
  }

  async list(): Promise<ApiKeyInfo[]> {
    return this.#store.listKeys();
  }

  /** Deletes a key; returns false when no key has that id. */
  async revoke(id: string): Promise<boolean> {
    const deleted = await this.#store.deleteKey(id);
    this.#forget();
    this.#lastUsedWritten.delete(id);
    return deleted;
  }
}
