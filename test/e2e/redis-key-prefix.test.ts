import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TASK_STOP_CHANNEL } from '../../src/messages/task-registry.js';
import { startServer, type TestServer } from '../helpers/server.js';

/**
 * REDIS_KEY_PREFIX: servers with different prefixes share one Redis without hearing each other's
 * stop messages or sharing counters; servers with the same prefix do.
 */

const redisUrl = process.env.TEST_REDIS_URL;
if (!redisUrl) process.stdout.write('[redis-key-prefix] NOTICE: TEST_REDIS_URL is not set; the REDIS_KEY_PREFIX tests are skipped.\n');

describe.skipIf(!redisUrl)('REDIS_KEY_PREFIX on one Redis', () => {
  const run = Math.random().toString(36).slice(2);
  const ONE = `dovetail-test-${run}-one:`;
  const TWO = `dovetail-test-${run}-two:`;
  let a: TestServer;
  let b: TestServer;
  let twin: TestServer;
  let redis: Redis;

  beforeAll(async () => {
    const at = (prefix: string) => startServer({ env: { REDIS_URL: redisUrl!, REDIS_KEY_PREFIX: prefix } });
    [a, b, twin] = await Promise.all([at(ONE), at(TWO), at(ONE)]);
    redis = new Redis(redisUrl!);
  });
  afterAll(async () => {
    for (const s of [a, b, twin]) await s?.close();
    if (redis) {
      const keys = [...(await redis.keys(`${ONE}*`)), ...(await redis.keys(`${TWO}*`))];
      if (keys.length) await redis.del(...keys);
      redis.disconnect();
    }
  });

  /** Waits until `server`'s bus delivered a probe it published itself: whatever reached its subscriber connection before has been handled. */
  async function drained(server: TestServer): Promise<void> {
    let seen = false;
    const off = await server.runtime.bus.subscribe('probe', () => (seen = true));
    await server.runtime.bus.publish('probe', 'x');
    for (let i = 0; i < 500 && !seen; i++) await new Promise((r) => setTimeout(r, 10));
    await off();
    if (!seen) throw new Error('the probe never came back');
  }

  it("a stop published under one prefix reaches that prefix's servers and not the other's", async () => {
    const task = (s: TestServer) => {
      const controller = new AbortController();
      s.runtime.tasks.register('task-1', { appId: 'app-1', endUserId: 'user-1', controller });
      return controller;
    };
    const onTwin = task(twin);
    const onB = task(b);
    // `a` runs no such task, so it passes the stop on through Redis under its prefix.
    await a.runtime.tasks.stop('task-1', 'app-1', 'user-1');
    for (let i = 0; i < 500 && !onTwin.signal.aborted; i++) await new Promise((r) => setTimeout(r, 10));
    expect(onTwin.signal.aborted).toBe(true);
    // Publishing is ordered: had the stop reached b's channel, b would have handled it before its probe.
    await drained(b);
    expect(onB.signal.aborted).toBe(false);
  });

  it('the bus channels, active-request slots and rate limits live under the prefix', async () => {
    // Active requests: one slot per app and prefix.
    const held = await a.runtime.activeRequests.acquire('app-x', 1);
    await expect(twin.runtime.activeRequests.acquire('app-x', 1)).rejects.toMatchObject({ status: 429 });
    const other = await b.runtime.activeRequests.acquire('app-x', 1);
    await other();
    await held();
    // Rate limits count per prefix.
    expect(await a.runtime.rateLimiter.hit('client-1', 1, 60_000)).toBe(true);
    expect(await twin.runtime.rateLimiter.hit('client-1', 1, 60_000)).toBe(false);
    expect(await b.runtime.rateLimiter.hit('client-1', 1, 60_000)).toBe(true);
    expect(await redis.exists(`${ONE}ratelimit:client-1`, `${TWO}ratelimit:client-1`)).toBe(2);
    // Channels: a subscriber of the prefixed channel hears the bus.
    const sub = new Redis(redisUrl!);
    try {
      const got = new Promise<string>((resolve) => sub.on('message', (channel: string, message: string) => resolve(`${channel} ${message}`)));
      await sub.subscribe(`${TWO}${TASK_STOP_CHANNEL}`);
      await b.runtime.bus.publish(TASK_STOP_CHANNEL, 'hello');
      expect(await got).toBe(`${TWO}${TASK_STOP_CHANNEL} hello`);
    } finally {
      sub.disconnect();
    }
  });
});
