import type { Kysely } from 'kysely';
import type { Database } from '../../store/schema.js';
import type { Clock } from '../clock.js';
import type { Logger } from '../logger.js';
import { BullmqQueue } from './bullmq-queue.js';
import { DbQueue } from './db-queue.js';
import type { Queue, QueueConfig } from './queue.js';

/** The runner `QUEUE` names: BullMQ on `REDIS_URL`, or the embedded one in the main database. */
export function createQueue(db: Kysely<Database>, clock: Clock, logger: Logger, cfg: QueueConfig, redis: { url: string | undefined; keyPrefix: string }): Queue {
  if (cfg.runner === 'bullmq') {
    if (!redis.url) throw new Error('QUEUE=bullmq needs REDIS_URL');
    return new BullmqQueue(db, clock, logger, cfg, { redisUrl: redis.url, keyPrefix: redis.keyPrefix });
  }
  return new DbQueue(db, clock, logger, cfg);
}
