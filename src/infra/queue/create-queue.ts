import type { Kysely } from 'kysely';
import type { Database } from '../../store/schema.js';
import type { Clock } from '../clock.js';
import type { Logger } from '../logger.js';
import { DbQueue } from './db-queue.js';
import type { Queue, QueueConfig } from './queue.js';

/**
 * The runner `QUEUE` names: BullMQ on `REDIS_URL`, or the embedded one in the main database. BullMQ
 * (with ioredis, ~0.5 s of CPU) is loaded only when it is the runner.
 */
export async function createQueue(db: Kysely<Database>, clock: Clock, logger: Logger, cfg: QueueConfig, redis: { url: string | undefined; keyPrefix: string }): Promise<Queue> {
  if (cfg.runner === 'bullmq') {
    if (!redis.url) throw new Error('QUEUE=bullmq needs REDIS_URL');
    const { BullmqQueue } = await import('./bullmq-queue.js');
    return new BullmqQueue(db, clock, logger, cfg, { redisUrl: redis.url, keyPrefix: redis.keyPrefix });
  }
  return new DbQueue(db, clock, logger, cfg);
}
