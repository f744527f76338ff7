import { describe, it } from 'vitest';
import { BullmqQueue } from '../../src/infra/queue/bullmq-queue.js';
import { systemClock } from '../../src/infra/clock.js';
import { createLogger } from '../../src/infra/logger.js';
import { queueContract } from './queue-contract.js';
import { dropRedisKeys } from '../helpers/server.js';

const redisUrl = process.env.TEST_REDIS_URL;
const keyPrefix = `dovetail-test-queue-${Math.random().toString(36).slice(2)}:`;

if (!redisUrl) {
  process.stdout.write('[queue-bullmq] NOTICE: TEST_REDIS_URL is not set; the BullMQ runner contract tests are skipped.\n');
  describe.skip('Queue contract: BullMQ', () => it('needs TEST_REDIS_URL', () => undefined));
} else {
  queueContract('BullMQ', {
    make: (db, cfg) => new BullmqQueue(db, systemClock, createLogger('silent'), cfg, { redisUrl, keyPrefix }),
    kill: (q) => (q as BullmqQueue).abandon(),
    processEnv: () => ({ QUEUE: 'bullmq', REDIS_URL: redisUrl, REDIS_KEY_PREFIX: keyPrefix }),
    cleanup: () => dropRedisKeys(redisUrl, keyPrefix),
  });
}
