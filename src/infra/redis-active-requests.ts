import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { logRedisErrors } from './redis-errors.js';
import { ActiveRequests, once, type ActiveRequestLimiter, type Release } from './active-requests.js';
import { tooManyRequests } from './errors.js';
import type { Logger } from './logger.js';

/**
 * Takes a slot in a sorted set per app (member: slot id, score: last heartbeat, epoch ms). Entries
 * older than the stale age are dropped first, so a dead instance's slots come back on their own.
 */
const ACQUIRE = `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[2])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return 1`;

export interface RedisActiveRequestsOptions {
  /** A slot whose holder has not refreshed it for this long is dropped (default 30 s). */
  readonly staleMs?: number;
  readonly prefix?: string;
}

/**
 * `max_active_requests` shared by every instance on one Redis, as Dify counts it in Redis. Only
 * limited apps touch Redis (one round trip per acquire, one per release); unlimited apps are
 * counted in memory. Each instance refreshes its slots every `staleMs / 3`; the slots of an
 * instance that died are freed after `staleMs`.
 */
export class RedisActiveRequests implements ActiveRequestLimiter {
  readonly #redis: Redis;
  readonly #local = new ActiveRequests();
  readonly #held = new Map<string, Set<string>>();
  readonly #staleMs: number;
  readonly #prefix: string;
  readonly #timer: NodeJS.Timeout;
  readonly #logger: Logger;

  constructor(url: string, logger: Logger, opts: RedisActiveRequestsOptions = {}) {
    this.#redis = new Redis(url, { maxRetriesPerRequest: 3 });
    logRedisErrors(this.#redis, logger, 'active requests redis connection');
    this.#logger = logger;
    this.#staleMs = opts.staleMs ?? 30_000;
    this.#prefix = opts.prefix ?? 'dovetail:active:';
    this.#timer = setInterval(() => void this.#refresh(), Math.max(100, Math.floor(this.#staleMs / 3)));
    this.#timer.unref();
  }

  async acquire(key: string, limit: number, holder?: string): Promise<Release> {
    if (limit <= 0) return this.#local.acquire(key, limit);
    const member = holder ?? randomUUID();
    const now = Date.now();
    const ok = (await this.#redis.eval(ACQUIRE, 1, this.#prefix + key, now, now - this.#staleMs, limit, member, this.#staleMs * 2)) as number;
    if (ok !== 1) throw tooManyRequests(key, limit);
    let set = this.#held.get(key);
    if (!set) this.#held.set(key, (set = new Set()));
    set.add(member);
    return once(() => {
      set.delete(member);
      if (set.size === 0 && this.#held.get(key) === set) this.#held.delete(key);
      this.#redis.zrem(this.#prefix + key, member).catch((err: unknown) => this.#logger.warn({ err, key }, 'active request slot not released (it expires)'));
    });
  }

  async count(key: string): Promise<number> {
    const shared = await this.#redis.zcount(this.#prefix + key, Date.now() - this.#staleMs, '+inf');
    return shared + (await this.#local.count(key));
  }

  async releaseOrphan(key: string, holder: string): Promise<void> {
    await this.#redis.zrem(this.#prefix + key, holder);
  }

  async #refresh(): Promise<void> {
    if (this.#held.size === 0) return;
    const now = Date.now();
    const p = this.#redis.pipeline();
    for (const [key, members] of this.#held) {
      for (const m of members) p.zadd(this.#prefix + key, 'XX', now, m);
      p.pexpire(this.#prefix + key, this.#staleMs * 2);
    }
    await p.exec().catch((err: unknown) => this.#logger.warn({ err }, 'active request slots not refreshed'));
  }

  async close(): Promise<void> {
    clearInterval(this.#timer);
    this.#redis.disconnect();
  }
}
