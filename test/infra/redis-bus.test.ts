import { describe, it } from 'vitest';
import { RedisBus } from '../../src/infra/bus/redis-bus.js';
import { describeBusContract } from './bus.contract.js';

const url = process.env.TEST_REDIS_URL;
if (url) {
  const prefix = `dovetail-test-${Math.random().toString(36).slice(2)}:`;
  describeBusContract('redis', async () => new RedisBus(url, prefix), (b) => b.close());
} else {
  process.stdout.write('[redis-bus] NOTICE: TEST_REDIS_URL is not set; the Redis bus contract is skipped.\n');
  describe.skip('Bus contract: redis (TEST_REDIS_URL unset)', () => it('skipped', () => undefined));
}
