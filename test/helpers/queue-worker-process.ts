/**
 * A job worker in a process of its own, for kill tests: opens the test's database
 * (DOVETAIL_DATA_DIR or DATABASE_URL + DATABASE_SCHEMA), runs the queue `QUEUE` names
 * (REDIS_URL, REDIS_KEY_PREFIX for BullMQ) with a handler for `KIND` that never ends, and prints
 * `started <jobId>` when it has taken a job.
 */
import { loadConfig } from '../../src/config.js';
import { openStore } from '../../src/store/db.js';
import { systemClock } from '../../src/infra/clock.js';
import { createLogger } from '../../src/infra/logger.js';
import { createQueue } from '../../src/infra/queue/create-queue.js';

const config = loadConfig({ ...process.env, DOVETAIL_CONFIG: undefined });
const store = await openStore(config);
const queue = await createQueue(store.db, systemClock, createLogger('silent'), config.queue, { url: config.redisUrl, keyPrefix: config.redisKeyPrefix });
queue.register(process.env.KIND!, {
  run: (_p, ctx) =>
    new Promise<void>(() => {
      process.stdout.write(`started ${ctx.jobId}\n`);
    }),
});
queue.start();
process.stdout.write('ready\n');
// A worker lives until it is killed: the queue's own timers do not hold the event loop (a queue
// does not keep a process alive by itself), so without this the process could exit before its
// first poll took the job.
setInterval(() => undefined, 60_000);
