import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql, type Kysely } from 'kysely';
import { dropSchema, openStore, type Store } from '../src/store/db.js';
import type { Database } from '../src/store/schema.js';
import { AppStats, STATS_FIGURES, type StatsApp } from '../src/console/app-stats.js';
import { resolveRange, type StatsRange } from '../src/console/stats-range.js';
import { fmt, median } from './lib.js';

/**
 * The console's monitoring figures (issue #44) at scale: CONSOLE_STATS_BENCH_MESSAGES messages
 * (default 1,000,000) in one chat app over 90 days (a conversation per 5 messages, a like per 20,
 * an error per 50) and a tenth as many workflow runs in a workflow app, generated in the database
 * (INSERT … SELECT over a number series). Each figure's query time (median of 3) for the whole 90
 * days and for the last 7, printed next to a plain indexed count of the same rows in the same
 * run. SQLite always; PostgreSQL when BENCH_DATABASE_URL or TEST_DATABASE_URL is set.
 */

const DAY = 86_400_000;
const START = Date.UTC(2026, 0, 1);
const SPAN_DAYS = 90;
const CHAT: StatsApp = { id: 'bench-chat-app', mode: 'chat' };
const FLOW: StatsApp = { id: 'bench-workflow-app', mode: 'workflow' };

/** `s(i)` = 0 … n-1, in the dialect's way. */
function series(pg: boolean, n: number) {
  return pg ? sql`generate_series(0, ${sql.lit(n - 1)}) AS s(i)` : sql`(WITH RECURSIVE r(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM r WHERE i < ${sql.lit(n - 1)}) SELECT i FROM r) AS s`;
}

async function seed(db: Kysely<Database>, pg: boolean, messages: number): Promise<void> {
  const step = Math.floor((SPAN_DAYS * DAY) / messages);
  const t = (every: number) => sql.lit(step * every);
  const id = (prefix: string) => sql`${sql.lit(prefix)} || CAST(s.i AS TEXT)`;
  const conversations = Math.ceil(messages / 5);
  await sql`INSERT INTO conversations (id, app_id, end_user_id, name, inputs, status, created_at, updated_at)
    SELECT ${id('c')}, ${CHAT.id}, ${id('u')}, '', '{}', 'normal', ${sql.lit(START)} + CAST(s.i AS BIGINT) * ${t(5)}, ${sql.lit(START)} + CAST(s.i AS BIGINT) * ${t(5)} FROM ${series(pg, conversations)}`.execute(db);
  await sql`INSERT INTO messages (id, app_id, conversation_id, end_user_id, task_id, mode, inputs, query, answer, files, prompt_tokens, completion_tokens, usage, total_price, currency, latency, status, from_source, created_at, updated_at)
    SELECT ${id('m')}, ${CHAT.id}, 'c' || CAST(s.i / 5 AS TEXT), 'u' || CAST(s.i % 5000 AS TEXT), ${id('t')}, 'chat', '{}', 'a question', 'an answer', '[]', 100 + s.i % 50, 20 + s.i % 30, '{}', '0.0000270', 'USD',
      (CAST(s.i AS BIGINT) * 7919 % 5000) / 1000.0, CASE WHEN s.i % 50 = 0 THEN 'error' ELSE 'normal' END, 'api', ${sql.lit(START)} + CAST(s.i AS BIGINT) * ${t(1)}, ${sql.lit(START)} + CAST(s.i AS BIGINT) * ${t(1)} FROM ${series(pg, messages)}`.execute(db);
  await sql`INSERT INTO message_feedbacks (id, app_id, conversation_id, message_id, rating, from_source, from_end_user_id, created_at, updated_at)
    SELECT ${id('f')}, ${CHAT.id}, 'c' || CAST(s.i * 20 / 5 AS TEXT), 'm' || CAST(s.i * 20 AS TEXT), 'like', 'user', 'u' || CAST(s.i * 20 % 5000 AS TEXT), ${sql.lit(START)} + CAST(s.i AS BIGINT) * ${t(20)}, ${sql.lit(START)} + CAST(s.i AS BIGINT) * ${t(20)} FROM ${series(pg, Math.floor(messages / 20))}`.execute(db);
  const runs = Math.ceil(messages / 10);
  await sql`INSERT INTO workflow_runs (id, app_id, task_id, mode, end_user_id, status, inputs, total_steps, total_tokens, exceptions_count, elapsed_ms, stop_requested, last_seq, heartbeat_at, created_at, finished_at)
    SELECT ${id('r')}, ${FLOW.id}, ${id('rt')}, 'workflow', 'u' || CAST(s.i % 2000 AS TEXT), CASE WHEN s.i % 40 = 0 THEN 'failed' ELSE 'succeeded' END, '{}', 3, 150 + s.i % 100, 0, CAST(s.i AS BIGINT) * 7919 % 9000, 0, 6, 0,
      ${sql.lit(START)} + CAST(s.i AS BIGINT) * ${t(10)}, ${sql.lit(START)} + CAST(s.i AS BIGINT) * ${t(10)} + 1000 FROM ${series(pg, runs)}`.execute(db);
  // a table at rest: PostgreSQL's autovacuum sets the visibility map index-only scans need
  await (pg ? sql`VACUUM (ANALYZE)` : sql`ANALYZE`).execute(db);
}

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const xs: number[] = [];
  for (let i = 0; i < 3; i++) {
    const t = performance.now();
    await fn();
    xs.push(performance.now() - t);
  }
  return median(xs);
}

async function measure(name: string, store: Store, pg: boolean, messages: number): Promise<void> {
  const db = store.db;
  let t = performance.now();
  await seed(db, pg, messages);
  process.stdout.write(`${name}: ${messages.toLocaleString('en')} messages, ${Math.ceil(messages / 5).toLocaleString('en')} conversations, ${Math.floor(messages / 20).toLocaleString('en')} likes, ${Math.ceil(messages / 10).toLocaleString('en')} runs generated in ${fmt((performance.now() - t) / 1000, 1)} s\n`);
  const stats = new AppStats(db);
  const ranges: [string, StatsRange][] = [
    ['90 days', resolveRange({ start: '2026-01-01', end: '2026-04-01', timezone: 'Asia/Shanghai' }, 366)],
    ['7 days', resolveRange({ start: '2026-03-20', end: '2026-03-27', timezone: 'Asia/Shanghai' }, 366)],
  ];
  for (const [label, range] of ranges) {
    // the baseline: a plain indexed count of the same rows (the (app_id, created_at) index)
    const countMessages = await timed(() => db.selectFrom('messages').select((e) => e.fn.countAll().as('n')).where('app_id', '=', CHAT.id).where('created_at', '>=', range.startMs).where('created_at', '<', range.endMs).executeTakeFirst());
    const countRuns = await timed(() => db.selectFrom('workflow_runs').select((e) => e.fn.countAll().as('n')).where('app_id', '=', FLOW.id).where('created_at', '>=', range.startMs).where('created_at', '<', range.endMs).executeTakeFirst());
    process.stdout.write(`${name}, ${label} (${range.days.length} local days, Asia/Shanghai): baseline indexed COUNT(*) messages ${fmt(countMessages, 1)} ms, runs ${fmt(countRuns, 1)} ms\n`);
    for (const figure of STATS_FIGURES) {
      const chatMs = await timed(() => stats.figure(figure, [CHAT], range));
      const flowMs = figure === 'cost' || figure === 'satisfaction' ? undefined : await timed(() => stats.figure(figure, [FLOW], range));
      process.stdout.write(`  ${figure.padEnd(14)} chat app ${fmt(chatMs, 1).padStart(8)} ms (${fmt(chatMs / countMessages, 1)}× the count)   workflow app ${flowMs === undefined ? '       –' : `${fmt(flowMs, 1).padStart(8)} ms (${fmt(flowMs / countRuns, 1)}× the count)`}\n`);
    }
    t = performance.now();
    await stats.daily([CHAT, FLOW], range);
    process.stdout.write(`  every figure, whole workspace (one page load): ${fmt(performance.now() - t, 0)} ms\n`);
  }
}

export async function run(): Promise<void> {
  const messages = Number(process.env.CONSOLE_STATS_BENCH_MESSAGES) || 1_000_000;
  process.stdout.write(`machine: ${os.cpus().length} cores, load average ${os.loadavg().map((l) => fmt(l, 1)).join(' ')}\n`);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'dovetail-bench-stats-'));
  const sqlite = await openStore({ databaseUrl: undefined, databaseSchema: undefined, dataDir: dir });
  try {
    await measure('SQLite', sqlite, false, messages);
  } finally {
    await sqlite.destroy();
    rmSync(dir, { recursive: true, force: true });
  }
  const url = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL;
  if (!url) {
    process.stdout.write('PostgreSQL: NOTICE: BENCH_DATABASE_URL / TEST_DATABASE_URL is not set; skipped\n');
    return;
  }
  const schema = `bench_stats_${Math.random().toString(36).slice(2, 10)}`;
  const pg = await openStore({ databaseUrl: url, databaseSchema: schema, dataDir: '.' });
  try {
    await measure('PostgreSQL', pg, true, messages);
  } finally {
    await pg.destroy();
    await dropSchema(url, schema);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await run();
