import { describe, expect, it } from 'vitest';
import { ActiveRequests, effectiveLimit, type ActiveRequestLimiter } from '../../src/infra/active-requests.js';
import { RedisActiveRequests } from '../../src/infra/redis-active-requests.js';
import { MemoryBus } from '../../src/infra/bus/memory-bus.js';
import { createLogger } from '../../src/infra/logger.js';
import { StopRequested, TaskRegistry } from '../../src/messages/task-registry.js';

const redisUrl = process.env.TEST_REDIS_URL;
const prefix = () => `dovetail-test-${Math.random().toString(36).slice(2)}:active:`;

/** The same behaviour from every limiter; `pair` gives two limiters that share their counts. */
function limiterContract(name: string, pair: () => [ActiveRequestLimiter, ActiveRequestLimiter]) {
  describe(`active requests: ${name}`, () => {
    it('counts slots per key, refuses over the limit with 429 naming it, and releases once', async () => {
      const [a, b] = pair();
      try {
        const r1 = await a.acquire('app-1', 2);
        const r2 = await b.acquire('app-1', 2);
        await a.acquire('app-2', 2);
        const err = await a.acquire('app-1', 2).catch((e: unknown) => e);
        expect(err).toMatchObject({ code: 'too_many_requests', status: 429, headers: { 'retry-after': '1' } });
        expect((err as Error).message).toContain('app-1 is 2');
        await expect(b.acquire('app-1', 2)).rejects.toMatchObject({ code: 'too_many_requests' });
        r1();
        r1();
        await until(async () => (await a.count('app-1')) === 1);
        (await b.acquire('app-1', 2))();
        r2();
        await until(async () => (await b.count('app-1')) === 0);
        expect(await a.count('app-2')).toBe(1);
      } finally {
        await a.close();
        await b.close();
      }
    });

    it('limit 0 is unlimited', async () => {
      const [a, b] = pair();
      try {
        for (let i = 0; i < 50; i++) await a.acquire('x', 0);
        expect(await a.count('x')).toBe(50);
      } finally {
        await a.close();
        await b.close();
      }
    });
  });
}

async function until(cond: () => Promise<boolean>, ms = 2000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error('condition not met');
    await new Promise((r) => setTimeout(r, 5));
  }
}

const shared = new ActiveRequests();
limiterContract('in memory', () => [shared, shared]);

if (redisUrl) {
  const logger = createLogger('silent');
  limiterContract('redis (two instances)', () => {
    const p = prefix();
    return [new RedisActiveRequests(redisUrl, logger, { prefix: p }), new RedisActiveRequests(redisUrl, logger, { prefix: p })];
  });

  it('the slots of an instance that stopped refreshing them come back after the stale age', async () => {
    const p = prefix();
    const dead = new RedisActiveRequests(redisUrl, logger, { prefix: p, staleMs: 300 });
    const live = new RedisActiveRequests(redisUrl, logger, { prefix: p, staleMs: 300 });
    try {
      await dead.acquire('app', 1);
      await dead.close(); // stops its heartbeat without releasing
      await expect(live.acquire('app', 1)).rejects.toMatchObject({ code: 'too_many_requests' });
      await new Promise((r) => setTimeout(r, 450));
      const r = await live.acquire('app', 1);
      // A held slot stays held past the stale age while its instance refreshes it.
      await new Promise((res) => setTimeout(res, 450));
      await expect(live.acquire('app', 1)).rejects.toMatchObject({ code: 'too_many_requests' });
      r();
    } finally {
      await live.close();
    }
  });
} else {
  process.stdout.write('[active-requests] NOTICE: TEST_REDIS_URL is not set; the shared Redis limiter is skipped.\n');
  describe.skip('active requests: redis (TEST_REDIS_URL unset)', () => it('skipped', () => undefined));
}

it('the effective limit is the smallest positive of app and instance', () => {
  expect(effectiveLimit(null, 0)).toBe(0);
  expect(effectiveLimit(3, 0)).toBe(3);
  expect(effectiveLimit(null, 5)).toBe(5);
  expect(effectiveLimit(8, 5)).toBe(5);
  expect(effectiveLimit(0, 5)).toBe(5);
});

describe('TaskRegistry', () => {
  it('only the owning app and end user can stop a task; the reason is StopRequested', async () => {
    const t = new TaskRegistry();
    const controller = new AbortController();
    const unregister = t.register('task', { appId: 'a', endUserId: 'u', controller });
    await t.stop('task', 'a', 'other');
    await t.stop('task', 'b', 'u');
    await t.stop('nope', 'a', 'u');
    expect(controller.signal.aborted).toBe(false);
    await t.stop('task', 'a', 'u');
    expect(controller.signal.reason).toBeInstanceOf(StopRequested);
    unregister();
    expect(t.size).toBe(0);
  });

  it('a stop sent to another instance reaches the task through the bus, with the same owner rule', async () => {
    const bus = new MemoryBus();
    const here = new TaskRegistry(bus);
    const there = new TaskRegistry(bus);
    await here.listen();
    await there.listen();
    const controller = new AbortController();
    there.register('task', { appId: 'a', endUserId: 'u', controller });
    await here.stop('task', 'a', 'intruder');
    expect(controller.signal.aborted).toBe(false);
    await here.stop('task', 'a', 'u');
    expect(controller.signal.reason).toBeInstanceOf(StopRequested);
    await here.close();
    await there.close();
  });
});
