import { DbQueue } from '../../src/infra/queue/db-queue.js';
import { systemClock } from '../../src/infra/clock.js';
import { createLogger } from '../../src/infra/logger.js';
import { queueContract } from './queue-contract.js';

queueContract('embedded (jobs table)', {
  make: (db, cfg) => new DbQueue(db, systemClock, createLogger('silent'), cfg),
  kill: async (q) => (q as DbQueue).abandon(),
  processEnv: () => ({ QUEUE: 'embedded', REDIS_URL: '' }),
});
