import { spawn } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { PROJECT_ROOT } from '../helpers/fixtures.js';
import { startServer, type TestServer } from '../helpers/server.js';
import type { Queue, QueueConfig } from '../../src/infra/queue/queue.js';
import type { Database } from '../../src/store/schema.js';
import type { Kysely } from 'kysely';

/** A runner under test: its queues on the test server's database, and a way to kill one like a process. */
export interface QueueHarness {
  make(db: Kysely<Database>, cfg: QueueConfig): Queue;
  /** Settings that make a worker process (`test/helpers/queue-worker-process.ts`) use this runner. */
  processEnv(): Record<string, string>;
  /** Stops a queue as a killed process would: no hand-back, no lease renewal. */
  kill(q: Queue): Promise<void>;
  cleanup?(): Promise<void>;
}

const base: QueueConfig = { worker: true, concurrency: 2, leaseMs: 1000, pollMs: 50, maxAttempts: 3, retryDelayMs: 50 };
const WAIT = { timeout: 20_000, interval: 20 };

/** The behaviour every runner of the `Queue` port keeps (see src/infra/queue/queue.ts). */
export function queueContract(name: string, harness: QueueHarness): void {
  describe(`Queue contract: ${name}`, () => {
    let s: TestServer;
    const queues: Queue[] = [];
    beforeAll(async () => {
      s = await startServer({ env: { QUEUE_WORKER: 'false', QUEUE: 'embedded' } });
    });
    afterAll(async () => {
      for (const q of queues) await q.close().catch(() => undefined);
      await harness.cleanup?.();
      await s?.close();
    });
    const queue = (over: Partial<QueueConfig> = {}) => {
      const q = harness.make(s.runtime.store.db, { ...base, ...over });
      queues.push(q);
      return q;
    };
    const find = async (q: Queue, id: string) => (await q.list({ limit: 1000 })).find((j) => j.id === id);

    it('runs every job at least once with two workers sharing the jobs', async () => {
      const seen = new Set<number>();
      const a = queue();
      const b = queue();
      for (const q of [a, b]) q.register<{ n: number }>('c.once', { run: async (p) => void seen.add(p.n) });
      const ids: string[] = [];
      for (let n = 0; n < 20; n++) ids.push(await a.enqueue('c.once', { n }));
      a.start();
      b.start();
      await vi.waitFor(() => expect(seen.size).toBe(20), WAIT);
      await vi.waitFor(async () => {
        for (const id of ids) expect((await find(a, id))?.status).toBe('done');
      }, WAIT);
    });

    it('does not run a job before its runAt', async () => {
      const q = queue();
      let startedAt = 0;
      q.register('c.later', { run: async () => void (startedAt = Date.now()) });
      const runAt = Date.now() + 500;
      const id = await q.enqueue('c.later', {}, { runAt });
      q.start();
      expect((await find(q, id))?.status).toBe('queued');
      await vi.waitFor(() => expect(startedAt).toBeGreaterThan(0), WAIT);
      expect(startedAt).toBeGreaterThanOrEqual(runAt);
    });

    it('retries with growing back-off, then fails the job for good and calls onFailed once with the last error', async () => {
      const starts: number[] = [];
      const failed: string[] = [];
      const q = queue({ retryDelayMs: 100 });
      q.register('c.fail', {
        run: async (_p, ctx) => {
          starts.push(Date.now());
          throw new Error(`boom ${ctx.attempt}`);
        },
        onFailed: async (_p, err) => void failed.push(err),
      });
      const id = await q.enqueue('c.fail', {});
      q.start();
      await vi.waitFor(() => expect(failed).toEqual(['boom 3']), WAIT);
      expect(starts).toHaveLength(3);
      // Exponential: at least the delay, then at least twice it.
      expect(starts[1]! - starts[0]!).toBeGreaterThanOrEqual(100);
      expect(starts[2]! - starts[1]!).toBeGreaterThanOrEqual(200);
      const dead = await q.list({ failedOnly: true });
      expect(dead.find((j) => j.id === id)).toMatchObject({ kind: 'c.fail', status: 'failed', lastError: 'boom 3' });
      // Still once, after the job has settled.
      await q.enqueue('c.fail', {}, { maxAttempts: 1 });
      await vi.waitFor(() => expect(failed).toHaveLength(2), WAIT);
      expect(failed).toEqual(['boom 3', 'boom 1']);
    });

    it('a job enqueued in a transaction runs only once it commits, and never when it rolls back', async () => {
      const ran: string[] = [];
      const q = queue();
      q.register<{ tag: string }>('c.tx', { run: async (p) => void ran.push(p.tag) });
      q.start();
      const db = s.runtime.store.db;
      await expect(
        db.transaction().execute(async (tx) => {
          await q.enqueue('c.tx', { tag: 'rolled-back' }, { tx });
          q.notify();
          throw new Error('roll back');
        }),
      ).rejects.toThrow('roll back');
      let committedId = '';
      await db.transaction().execute(async (tx) => {
        committedId = await q.enqueue('c.tx', { tag: 'committed' }, { tx });
        q.notify();
        // Nothing runs while the transaction is open.
        await new Promise((r) => setTimeout(r, 200));
        expect(ran).toEqual([]);
      });
      q.notify();
      await vi.waitFor(() => expect(ran).toEqual(['committed']), WAIT);
      // A job enqueued after the rolled-back one has run, and the rolled-back one still has not.
      await q.enqueue('c.tx', { tag: 'after' });
      await vi.waitFor(() => expect(ran).toEqual(['committed', 'after']), WAIT);
      const all = await q.list({ limit: 1000 });
      expect(all.filter((j) => j.kind === 'c.tx')).toHaveLength(2);
      expect(all.find((j) => j.id === committedId)?.status).toBe('done');
    });

    it('close() aborts running handlers and hands their jobs back without counting the attempt', async () => {
      const a = queue();
      let started = false;
      a.register('c.long', {
        run: (_p, ctx) =>
          new Promise<void>((_resolve, reject) => {
            started = true;
            ctx.signal.addEventListener('abort', () => reject(new Error('aborted')));
          }),
      });
      const id = await a.enqueue('c.long', {});
      a.start();
      await vi.waitFor(() => expect(started).toBe(true), WAIT);
      await a.close();
      const attempts: number[] = [];
      const b = queue();
      b.register('c.long', { run: async (_p, ctx) => void attempts.push(ctx.attempt) });
      b.start();
      await vi.waitFor(() => expect(attempts).toEqual([1]), WAIT);
      await vi.waitFor(async () => expect((await find(b, id))?.status).toBe('done'), WAIT);
    });

    it('a job whose worker died is taken over by another worker once its lease runs out', async () => {
      const a = queue();
      let startedOnA = false;
      a.register('c.orphan', { run: () => new Promise<void>(() => void (startedOnA = true)) });
      const id = await a.enqueue('c.orphan', {});
      a.start();
      await vi.waitFor(() => expect(startedOnA).toBe(true), WAIT);
      await harness.kill(a);
      let ranOnB = false;
      const b = queue();
      b.register('c.orphan', { run: async () => void (ranOnB = true) });
      b.start();
      await vi.waitFor(() => expect(ranOnB).toBe(true), WAIT);
      await vi.waitFor(async () => expect((await find(b, id))?.status).toBe('done'), WAIT);
    });

    it('a job whose worker process is killed (SIGKILL) mid-job is finished by another worker', async () => {
      const id = await queue().enqueue('c.killed', {});
      const env: Record<string, string> = {
        ...(process.env as Record<string, string>),
        ...harness.processEnv(),
        KIND: 'c.killed',
        QUEUE_LEASE_MS: String(base.leaseMs),
        QUEUE_POLL_MS: String(base.pollMs),
        LOG_LEVEL: 'silent',
        DOVETAIL_DATA_DIR: s.dataDir,
        ...(s.config.databaseUrl ? { DATABASE_URL: s.config.databaseUrl, DATABASE_SCHEMA: s.config.databaseSchema ?? '' } : { DATABASE_URL: '' }),
      };
      delete env.DOVETAIL_CONFIG;
      const child = spawn(process.execPath, ['--import', 'tsx', path.join(PROJECT_ROOT, 'test/helpers/queue-worker-process.ts')], { env, stdio: ['ignore', 'pipe', 'inherit'] });
      let out = '';
      child.stdout!.on('data', (d: Buffer) => void (out += d.toString()));
      const exited = new Promise((r) => child.once('exit', r));
      try {
        await vi.waitFor(() => expect(out).toContain(`started ${id}`), { timeout: 60_000, interval: 50 });
      } finally {
        child.kill('SIGKILL');
        await exited;
      }
      let ranHere = false;
      const b = queue();
      b.register('c.killed', { run: async () => void (ranHere = true) });
      b.start();
      await vi.waitFor(() => expect(ranHere).toBe(true), WAIT);
      await vi.waitFor(async () => expect((await find(b, id))?.status).toBe('done'), WAIT);
    }, 90_000);

    it('retry() queues a failed job again; it is then done', async () => {
      let calls = 0;
      const failed: string[] = [];
      const q = queue();
      q.register('c.retry', {
        run: async () => {
          if (++calls === 1) throw new Error('first time fails');
        },
        onFailed: async (_p, e) => void failed.push(e),
      });
      const id = await q.enqueue('c.retry', {}, { maxAttempts: 1 });
      q.start();
      await vi.waitFor(async () => expect((await find(q, id))?.status).toBe('failed'), WAIT);
      expect(failed).toEqual(['first time fails']);
      expect(await q.retry(id)).toBe(true);
      await vi.waitFor(async () => expect((await find(q, id))?.status).toBe('done'), WAIT);
      expect(calls).toBe(2);
      expect(await q.retry(id)).toBe(false);
      expect(await q.retry('no-such-job')).toBe(false);
    });

    it('a repeatable job declared by two workers ticks repeatedly, each tick on one of them', async () => {
      let ticks = 0;
      const a = queue();
      const b = queue();
      for (const q of [a, b]) {
        q.register('c.tick', {
          run: async () => void ticks++,
        });
      }
      const since = Date.now();
      await a.repeat('c.tick', 200);
      await b.repeat('c.tick', 200);
      a.start();
      b.start();
      await vi.waitFor(() => expect(ticks).toBeGreaterThanOrEqual(4), WAIT);
      // Two workers each acting on every tick would count about twice as many; a loaded machine only counts fewer.
      expect(ticks).toBeLessThanOrEqual(Math.floor((Date.now() - since) / 200) + 2);
    });
  });
}
