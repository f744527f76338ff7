import { Redis } from 'ioredis';
import type { RateLimiter } from './rate-limit.js';
import type { Logger } from './logger.js';
import { logRedisErrors } from './redis-errors.js';

const HIT = `
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return n`;

/** Counters in Redis (`REDIS_URL`), shared by every instance: INCR plus an expiry set on the window's first hit, in one script. */
export class RedisRateLimiter implements RateLimiter {
  readonly #redis: Redis;
  readonly #prefix: string;

  constructor(url: string, prefix = 'dovetail:ratelimit:', logger?: Logger) {
    this.#redis = new Redis(url, { maxRetriesPerRequest: 3 });
    logRedisErrors(this.#redis, logger, 'rate limit redis connection');
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
