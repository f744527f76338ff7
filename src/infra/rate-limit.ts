import { Redis } from 'ioredis';

/** Fixed-window request counting per key (a client address). */
export interface RateLimiter {
  /** Counts one hit; true while the key is within `max` hits of its current `windowMs` window. */
  hit(key: string, max: number, windowMs: number): Promise<boolean>;
  close(): Promise<void>;
}

/** One process's counters; the map is swept of finished windows as it is used, so it stays bounded by the active keys. */
export class MemoryRateLimiter implements RateLimiter {
  readonly #windows = new Map<string, { until: number; count: number }>();
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  async hit(key: string, max: number, windowMs: number): Promise<boolean> {
    const now = this.#now();
    if (this.#windows.size > 10_000) for (const [k, w] of this.#windows) if (w.until <= now) this.#windows.delete(k);
    let w = this.#windows.get(key);
    if (!w || w.until <= now) this.#windows.set(key, (w = { until: now + windowMs, count: 0 }));
    w.count++;
    return w.count <= max;
  }

  async close(): Promise<void> {
    this.#windows.clear();
  }
}

const HIT = `
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return n`;

/** Counters in Redis (`REDIS_URL`), shared by every instance: INCR plus an expiry set on the window's first hit, in one script. */
export class RedisRateLimiter implements RateLimiter {
  readonly #redis: Redis;
  readonly #prefix: string;

  constructor(url: string, prefix = 'dovetail:ratelimit:') {
    this.#redis = new Redis(url, { maxRetriesPerRequest: 3 });
    this.#prefix = prefix;
  }

  async hit(key: string, max: number, windowMs: number): Promise<boolean> {
    const n = (await this.#redis.eval(HIT, 1, this.#prefix + key, windowMs)) as number;
    return n <= max;
  }

  async close(): Promise<void> {
    this.#redis.disconnect();
  }
}
