import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.js';
import { DbQueue } from '../../src/infra/queue/db-queue.js';
import type { QueueConfig } from '../../src/infra/queue/queue.js';
import { systemClock } from '../../src/infra/clock.js';
import { createLogger } from '../../src/infra/logger.js';

/** The generic DB-backed queue on the real store (SQLite or PostgreSQL), outside any domain. */
let s: TestServer;
const queues: DbQueue[] = [];
const cfg: QueueConfig = { worker: true, concurrency: 2, leaseMs: 300, pollMs: 20, maxAttempts: 3, retryDelayMs: 5 };

beforeAll(async () => {
  s = await startServer({ env: { QUEUE_WORKER: 'false' } });
});
afterAll(async () => {
  for (const q of queues) await q.close();
  await s?.close();
});

function queue(over: Partial<QueueConfig> = {}): DbQueue {
  const q = new DbQueue(s.runtime.store.db, systemClock, createLogger('silent'), { ...cfg, ...over });
  queues.push(q);
  return q;
}

function until(cond: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  return new Promise((resolve, reject) => {
    const tick = () => (cond() ? resolve() : Date.now() > end ? reject(new Error('condition not met')) : setTimeout(tick, 10));
    tick();
  });
}

const job = (id: string) => s.runtime.store.db.selectFrom('jobs').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

describe('DbQueue', () => {
  it('runs each job exactly once even with two workers polling the same table', async () => {
    const seen: number[] = [];
    const a = queue();
    const b = queue();
    for (const q of [a, b]) q.register<{ n: number }>('t.once', { run: async (p) => void seen.push(p.n) });
    const ids: string[] = [];
    for (let n = 0; n < 20; n++) ids.push(await a.enqueue('t.once', { n }));
    a.start();
    b.start();
    await until(() => seen.length >= 20);
    await new Promise((r) => setTimeout(r, 100));
    expect([...seen].sort((x, y) => x - y)).toEqual([...Array(20).keys()]);
    for (const id of ids) expect((await job(id)).status).toBe('done');
  });

  it('retries a failing handler, then marks the job failed and calls onFailed once with the last error', async () => {
    let runs = 0;
    const failed: string[] = [];
    const q = queue();
    q.register('t.fail', {
      run: async (_p, ctx) => {
        runs++;
        throw new Error(`boom ${ctx.attempt}`);
      },
      onFailed: async (_p, err) => void failed.push(err),
    });
    const id = await q.enqueue('t.fail', {});
    q.start();
    await until(() => failed.length > 0);
    expect(runs).toBe(3);
    expect(failed).toEqual(['boom 3']);
    expect(await job(id)).toMatchObject({ status: 'failed', attempts: 3, last_error: 'boom 3' });
  });

  it('a job whose holder stopped renewing its lease is taken over; a job that succeeds after a retry is done', async () => {
    let calls = 0;
    const q = queue();
    q.register('t.flaky', {
      run: async () => {
        calls++;
        if (calls === 1) throw new Error('transient');
      },
    });
    const id = await q.enqueue('t.flaky', {});
    // A dead worker's claim: running, lease already over.
    await s.runtime.store.db.updateTable('jobs').set({ status: 'running', attempts: 1, locked_by: 'dead', lease_until: Date.now() - 1 }).where('id', '=', id).execute();
    q.start();
    await until(() => calls >= 2);
    await until(() => false, 200).catch(() => undefined);
    expect(await job(id)).toMatchObject({ status: 'done', attempts: 3 });
  });

  it('close() aborts running handlers and hands their jobs back without counting the attempt', async () => {
    const q = queue();
    let started = false;
    q.register('t.long', {
      run: (_p, ctx) =>
        new Promise<void>((_resolve, reject) => {
          started = true;
          ctx.signal.addEventListener('abort', () => reject(new Error('aborted')));
        }),
    });
    const id = await q.enqueue('t.long', {});
    q.start();
    await until(() => started);
    await q.close();
    expect(await job(id)).toMatchObject({ status: 'queued', attempts: 0, locked_by: null });
  });

  it('a kind with its own concurrency has its own slots and lease; the other kinds share the queue\'s', async () => {
    const q = queue({ concurrency: 1 });
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const running = { own: 0, shared: 0 };
    const max = { own: 0, shared: 0 };
    const handler = (k: 'own' | 'shared') => ({
      run: async () => {
        running[k]++;
        max[k] = Math.max(max[k], running[k]);
        await gate;
        running[k]--;
      },
    });
    q.register('k.own', handler('own'), { concurrency: 3, leaseMs: 60_000 });
    q.register('k.shared', handler('shared'));
    const own: string[] = [];
    for (let n = 0; n < 5; n++) own.push(await q.enqueue('k.own', { n }));
    for (let n = 0; n < 3; n++) await q.enqueue('k.shared', { n });
    q.start();
    await until(() => running.own === 3 && running.shared === 1);
    const held = await s.runtime.store.db.selectFrom('jobs').selectAll().where('id', 'in', own).where('status', '=', 'running').execute();
    expect(held).toHaveLength(3);
    for (const j of held) expect(Number(j.lease_until) - Number(j.updated_at)).toBe(60_000);
    release();
    await until(() => running.own === 0 && running.shared === 0);
    await vi.waitFor(async () => {
      for (const id of own) expect((await job(id)).status).toBe('done');
    }, { timeout: 10_000 });
    expect(max).toEqual({ own: 3, shared: 1 });
  });

  it('runAt delays a job', async () => {
    const q = queue();
    let ran = false;
    q.register('t.later', { run: async () => void (ran = true) });
    const id = await q.enqueue('t.later', {}, { runAt: Date.now() + 60_000 });
    q.start();
    await new Promise((r) => setTimeout(r, 150));
    expect(ran).toBe(false);
    expect((await job(id)).status).toBe('queued');
  });

  it('claimLocal writes the job running under this worker in the caller\'s transaction and runs it after the commit without a poll', async () => {
    const q = queue({ pollMs: 3_600_000, concurrency: 1 });
    const viaHandler: string[] = [];
    q.register<{ n: number }>('t.local', { run: async (p) => void viaHandler.push(`handler ${p.n}`) });
    expect(await s.runtime.store.db.transaction().execute((tx) => q.claimLocal('t.local', { n: 0 }, tx))).toBeUndefined(); // not started
    q.start();
    await new Promise((r) => setTimeout(r, 50)); // the start's one poll
    const db = s.runtime.store.db;
    const local = (await db.transaction().execute(async (tx) => {
      const l = await q.claimLocal('t.local', { n: 1 }, tx);
      // the row is written running, leased by this worker: a crash leaves it for recovery
      expect(await tx.selectFrom('jobs').select(['status', 'attempts', 'locked_by']).where('id', '=', l!.id).executeTakeFirstOrThrow()).toMatchObject({ status: 'running', attempts: 1 });
      // the one slot is held: a second claim is refused (it would be enqueued instead)
      expect(await q.claimLocal('t.local', { n: 2 }, tx)).toBeUndefined();
      return l!;
    }))!;
    const ran: number[] = [];
    let finish!: () => void;
    local.start(async (ctx) => {
      ran.push(ctx.attempt);
      await new Promise<void>((r) => (finish = r));
    });
    expect(ran).toEqual([1]); // started at once, without a poll (the poll interval is an hour)
    finish();
    for (let i = 0; i < 200 && (await job(local.id)).status !== 'done'; i++) await new Promise((r) => setTimeout(r, 20));
    expect(await job(local.id)).toMatchObject({ status: 'done', attempts: 1, locked_by: null });
    expect(viaHandler).toEqual([]);
  });

  it('a locally claimed job whose transaction rolled back frees its slot; one whose worker died is recovered by another worker', async () => {
    const q = queue({ pollMs: 3_600_000, concurrency: 1, leaseMs: 200 });
    q.register('t.local2', { run: async () => undefined });
    q.start();
    const db = s.runtime.store.db;
    let held: Awaited<ReturnType<DbQueue['claimLocal']>>;
    await expect(
      db.transaction().execute(async (tx) => {
        held = await q.claimLocal('t.local2', {}, tx);
        throw new Error('rollback');
      }),
    ).rejects.toThrow('rollback');
    held!.release();
    // the slot is free again, and the rolled-back job does not exist
    expect(await db.selectFrom('jobs').select('id').where('id', '=', held!.id).executeTakeFirst()).toBeUndefined();
    const crashed = (await db.transaction().execute((tx) => q.claimLocal('t.local2', { n: 3 }, tx)))!;
    expect(crashed).toBeDefined();
    q.abandon(); // dies before starting it
    const recovered: number[] = [];
    const other = queue({ leaseMs: 200 });
    other.register<{ n: number }>('t.local2', { run: async (p, ctx) => void recovered.push(p.n, ctx.attempt) });
    other.start();
    await until(() => recovered.length > 0);
    expect(recovered).toEqual([3, 2]);
  });
});
