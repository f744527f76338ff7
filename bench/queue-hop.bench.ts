import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { dropSchema, openStore, type Store } from '../src/store/db.js';
import { systemClock } from '../src/infra/clock.js';
import { createLogger } from '../src/infra/logger.js';
import { DbQueue } from '../src/infra/queue/db-queue.js';
import { BullmqQueue } from '../src/infra/queue/bullmq-queue.js';
import type { Queue, QueueConfig } from '../src/infra/queue/queue.js';
import { fmt, median, percentile } from './lib.js';
import { dropRedisKeys } from '../test/helpers/redis-keys.js';

const N = 300;
const WARMUP = 20;
// The server's defaults (QUEUE_POLL_MS 500 etc.): the hop must not lean on a short poll.
const cfg: QueueConfig = { worker: true, concurrency: 2, leaseMs: 30_000, pollMs: 500, maxAttempts: 3, retryDelayMs: 1000 };

/**
 * The latency a queue hop adds: enqueue → handler start, one job at a time, on the embedded runner
 * (SQLite) and on BullMQ (Redis; needs BENCH_REDIS_URL or TEST_REDIS_URL), each both plain and
 * inside a transaction (through the outbox on BullMQ). SQLite, or PostgreSQL with BENCH_DATABASE_URL.
 * Target: ≤ 5 ms at the median.
 */
export async function run(): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'dovetail-bench-queue-'));
  // BENCH_DATABASE_URL: on PostgreSQL instead, in a schema of its own dropped afterwards.
  const pgUrl = process.env.BENCH_DATABASE_URL;
  const schema = pgUrl ? `bench_queue_${process.pid}` : undefined;
  const store = await openStore({ databaseUrl: pgUrl, databaseSchema: schema, dataDir: dir });
  const log = createLogger('silent');
  const rows: Array<[string, number[]]> = [];
  const embedded = new DbQueue(store.db, systemClock, log, cfg);
  rows.push(...(await measure('embedded', embedded, store)));
  const redisUrl = process.env.BENCH_REDIS_URL ?? process.env.TEST_REDIS_URL;
  const prefix = `dovetail-bench-${process.pid}:`;
  if (redisUrl) {
    const bull = new BullmqQueue(store.db, systemClock, log, cfg, { redisUrl, keyPrefix: prefix });
    rows.push(...(await measure('bullmq', bull, store)));
    await dropRedisKeys(redisUrl, prefix);
  } else {
    process.stdout.write('BullMQ skipped: set BENCH_REDIS_URL (or TEST_REDIS_URL)\n');
  }
  process.stdout.write(`queue hop, enqueue → handler start, ${N} jobs one at a time (${store.dialect.name}):\n`);
  process.stdout.write(`${'runner / path'.padEnd(26)} ${'p50 ms'.padStart(8)} ${'p99 ms'.padStart(8)}\n`);
  for (const [name, xs] of rows) process.stdout.write(`${name.padEnd(26)} ${fmt(median(xs)).padStart(8)} ${fmt(percentile(xs, 99)).padStart(8)}\n`);
  await store.destroy();
  if (pgUrl && schema) await dropSchema(pgUrl, schema);
  rmSync(dir, { recursive: true, force: true });
}

async function measure(name: string, q: Queue, store: Store): Promise<Array<[string, number[]]>> {
  let resolveStart: ((t: number) => void) | undefined;
  q.register('bench.hop', { run: async () => resolveStart?.(performance.now()) });
  q.start();
  const hop = async (viaTx: boolean): Promise<number> => {
    const started = new Promise<number>((r) => (resolveStart = r));
    const t0 = performance.now();
    if (viaTx) {
      await store.db.transaction().execute(async (tx) => void (await q.enqueue('bench.hop', {}, { tx })));
      q.notify();
    } else {
      await q.enqueue('bench.hop', {});
    }
    return (await started) - t0;
  };
  const out: Array<[string, number[]]> = [];
  for (const viaTx of [false, true]) {
    const xs: number[] = [];
    for (let i = 0; i < WARMUP + N; i++) {
      const ms = await hop(viaTx);
      if (i >= WARMUP) xs.push(ms);
    }
    out.push([`${name} ${viaTx ? 'in a transaction' : 'plain'}`, xs]);
  }
  await q.close();
  return out;
}
