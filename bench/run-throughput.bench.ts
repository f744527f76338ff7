/**
 * Bench: workflow runs per second of a 10-node workflow (start, 8 template-transform nodes, end; no
 * model), blocking, 32 concurrent clients, on (a) embedded SQLite, one process; (b) PostgreSQL +
 * Redis with `QUEUE=bullmq`, one `serve --role api` process and one `dovetail worker`; (c) the same
 * with 2 workers. Also the time to `workflow_started` over streaming, runs one at a time: inline
 * (a) against through the queue (b) — the latency a queue hop adds. Every server process is the
 * compiled bin (`npm run build` first), started with `npm start`'s Node flags (`BENCH_SERVER_FLAGS`
 * in lib.ts). (b) and (c) need BENCH_DATABASE_URL / TEST_DATABASE_URL and
 * BENCH_REDIS_URL / TEST_REDIS_URL; each uses its own schema and Redis key prefix, dropped after.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { dropSchema } from '../src/store/db.js';
import { freePort } from '../test/helpers/free-port.js';
import { dropRedisKeys } from '../test/helpers/redis-keys.js';
import { BENCH_SERVER_FLAGS, fmt, median } from './lib.js';

const exec = promisify(execFile);
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const BIN = path.join(ROOT, 'bin', 'dovetail.js');
const CLIENTS = 32;
const SECONDS = Number(process.env.BENCH_THROUGHPUT_SECONDS ?? 8);
const HOPS = 40;
const IDLE_SECONDS = 3;
/** Preloaded into every server process: counts its SQL statements and Redis commands (see the file). */
const COUNTER = path.join(ROOT, 'bench', 'statement-counter.mjs');

function dsl(): string {
  const nodes: Record<string, unknown>[] = [{ id: 'start', data: { type: 'start', title: 'Start', variables: [] } }];
  const edges: Record<string, unknown>[] = [];
  let prev = 'start';
  for (let i = 0; i < 8; i++) {
    const id = `t${i}`;
    nodes.push({ id, data: { type: 'template-transform', title: id, template: '{{ v | length }}:{{ i }}', variables: [{ variable: 'v', value_selector: prev === 'start' ? ['sys', 'app_id'] : [prev, 'output'] }, { variable: 'i', value_selector: ['sys', 'workflow_run_id'] }] } });
    edges.push({ source: prev, target: id });
    prev = id;
  }
  nodes.push({ id: 'end', data: { type: 'end', title: 'End', outputs: [{ variable: 'out', value_selector: [prev, 'output'] }] } });
  edges.push({ source: prev, target: 'end' });
  return stringify({ app: { name: 'ten', mode: 'workflow' }, kind: 'app', version: '0.3.1', workflow: { graph: { nodes, edges } } });
}

interface Shape {
  readonly url: string;
  readonly apiKey: string;
  /** Each server process's statement counts and CPU time so far (`bench/statement-counter.mjs`). */
  sample(): Promise<ProcessSample[]>;
  close(): Promise<void>;
}

interface ProcessSample {
  readonly role: string;
  readonly counts: Record<string, number>;
  readonly cpuMicros: number;
}

/** Starts `serve` (with `role`) and `workers` worker processes on shared settings; imports the app. */
async function startShape(env: NodeJS.ProcessEnv, role: string | undefined, workers: number): Promise<Shape> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'dovetail-bench-tp-'));
  const e = { ...process.env, DOVETAIL_DATA_DIR: dataDir, DOVETAIL_SEED_EXAMPLES: 'false', LOG_LEVEL: 'warn', ...env };
  const countsFile = path.join(dataDir, 'counts');
  // BENCH_SERVER_NODE_ARGS: more Node flags for every server process (`--cpu-prof --cpu-prof-dir=…` to profile)
  const flags = [...BENCH_SERVER_FLAGS, ...(process.env.BENCH_SERVER_NODE_ARGS ?? '').split(' ').filter(Boolean), '--import', pathToFileURL(COUNTER).href];
  await exec(process.execPath, [BIN, '--init', 'migrate'], { env: e });
  const file = path.join(dataDir, 'app.yml');
  writeFileSync(file, dsl());
  const apiKey = (JSON.parse((await exec(process.execPath, [BIN, 'app', 'import', file, '--json'], { env: e })).stdout) as { api_key: string }).api_key;
  const port = await freePort();
  const procs: ChildProcess[] = [spawn(process.execPath, [...flags, BIN, 'serve', ...(role ? ['--role', role] : [])], { env: { ...e, BENCH_STATEMENT_COUNTS: countsFile, PORT: String(port), HOST: '127.0.0.1' }, stdio: ['ignore', 'ignore', 'inherit'] })];
  // Each worker serves /health on its own port.
  for (let i = 0; i < workers; i++) procs.push(spawn(process.execPath, [...flags, BIN, 'worker'], { env: { ...e, BENCH_STATEMENT_COUNTS: countsFile, PORT: String(await freePort()), HOST: '127.0.0.1' }, stdio: ['ignore', 'ignore', 'inherit'] }));
  const url = `http://127.0.0.1:${port}`;
  for (;;) {
    if (await fetch(`${url}/health`).then((r) => r.ok, () => false)) break;
    if (procs[0]!.exitCode !== null) throw new Error(`serve exited ${procs[0]!.exitCode}`);
    await new Promise((r) => setTimeout(r, 20));
  }
  return {
    url,
    apiKey,
    async sample() {
      const files = procs.map((p) => `${countsFile}.${p.pid}`);
      for (const f of files) rmSync(f, { force: true });
      for (const p of procs) p.kill('SIGUSR2');
      const out: ProcessSample[] = [];
      for (let i = 0; i < procs.length; i++) {
        let text = '';
        for (let tries = 0; tries < 500 && !text; tries++) {
          try {
            text = readFileSync(files[i]!, 'utf8');
          } catch {
            await new Promise((r) => setTimeout(r, 10));
          }
        }
        const j = JSON.parse(text) as { counts: Record<string, number>; cpuMicros: number };
        out.push({ role: i === 0 ? (role ?? 'serve') : `worker ${i}`, ...j });
      }
      return out;
    },
    async close() {
      await Promise.all(procs.map((p) => (p.exitCode !== null ? undefined : new Promise((r) => { p.once('exit', r); p.kill('SIGTERM'); }))));
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

const runBody = (mode: string) => JSON.stringify({ inputs: {}, response_mode: mode, user: 'bench' });

/** `CLIENTS` clients each running blocking runs back to back for `SECONDS`: runs per second. */
async function throughput(s: Shape): Promise<{ rps: number; errors: number; perRun: string[] }> {
  const headers = { authorization: `Bearer ${s.apiKey}`, 'content-type': 'application/json' };
  const one = async () => {
    const r = await fetch(`${s.url}/v1/workflows/run`, { method: 'POST', headers, body: runBody('blocking') });
    const b = (await r.json()) as { data?: { status?: string } };
    return b.data?.status === 'succeeded';
  };
  for (let i = 0; i < 20; i++) await one(); // warm-up
  let ok = 0;
  let errors = 0;
  // an idle window first: what the processes do per second with no run (polls, lease checks)
  const idleFrom = await s.sample();
  const idleT0 = performance.now();
  await new Promise((r) => setTimeout(r, IDLE_SECONDS * 1000));
  const idleTo = await s.sample();
  const idleSeconds = (performance.now() - idleT0) / 1000;
  const before = await s.sample();
  const end = performance.now() + SECONDS * 1000;
  const t0 = performance.now();
  await Promise.all(Array.from({ length: CLIENTS }, async () => {
    while (performance.now() < end) {
      if (await one().catch(() => false)) ok++;
      else errors++;
    }
  }));
  const seconds = (performance.now() - t0) / 1000;
  const rps = ok / seconds;
  const after = await s.sample();
  // the idle rate scaled to the window, taken off: what the runs themselves cost
  const idleScaled = idleTo.map((b, i) => scaled(idleFrom[i]!, b, seconds / idleSeconds));
  const net = after.map((a, i) => ({ ...a, cpuMicros: a.cpuMicros - idleScaled[i]!.cpuMicros, counts: Object.fromEntries(Object.entries(a.counts).map(([k, v]) => [k, v - (idleScaled[i]!.counts[k] ?? 0)])) }));
  return { rps, errors, perRun: [...perRun(before, after, ok), `    net of the idle rate (${fmt(idleSeconds, 1)} s idle measured first):`, ...perRun(before, net, ok)] };
}

/** What a process did between two samples, times `k`. */
function scaled(from: ProcessSample, to: ProcessSample, k: number): ProcessSample {
  return { role: to.role, cpuMicros: (to.cpuMicros - from.cpuMicros) * k, counts: Object.fromEntries(Object.entries(to.counts).map(([key, v]) => [key, (v - (from.counts[key] ?? 0)) * k])) };
}

/** Per process: CPU ms per run and statements (and Redis commands) per run in the window. */
function perRun(before: ProcessSample[], after: ProcessSample[], runs: number): string[] {
  const lines: string[] = [];
  let cpuTotal = 0;
  const total: Record<string, number> = {};
  for (let i = 0; i < after.length; i++) {
    const a = after[i]!;
    const b = before[i]!;
    const cpu = (a.cpuMicros - b.cpuMicros) / 1000 / runs;
    cpuTotal += cpu;
    const diff: Record<string, number> = {};
    for (const [k, v] of Object.entries(a.counts)) {
      const d = v - (b.counts[k] ?? 0);
      if (d > 0) {
        diff[k] = d / runs;
        total[k] = (total[k] ?? 0) + d / runs;
      }
    }
    lines.push(`    ${a.role.padEnd(9)} CPU ${fmt(cpu)} ms/run; ${describe(diff)}`);
  }
  lines.push(`    all       CPU ${fmt(cpuTotal)} ms/run; ${describe(total)}`);
  return lines;
}

function describe(counts: Record<string, number>): string {
  const sum = (prefix: string) => Object.entries(counts).filter(([k]) => k.startsWith(prefix)).reduce((n, [, v]) => n + v, 0);
  const parts = (prefix: string) => Object.entries(counts).filter(([k]) => k.startsWith(prefix)).sort((x, y) => y[1] - x[1]).map(([k, v]) => `${k.slice(prefix.length)} ${fmt(v, 1)}`).join(', ');
  const sql = sum('sql ');
  const redis = sum('redis ');
  return `SQL ${fmt(sql, 1)}/run (${parts('sql ')})${redis ? `; Redis ${fmt(redis, 1)}/run (${parts('redis ')})` : ''}`;
}

/** Time from sending a streaming run until its `workflow_started` event is read, one run at a time. */
async function firstEvent(s: Shape): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < HOPS + 5; i++) {
    const t0 = performance.now();
    const r = await fetch(`${s.url}/v1/workflows/run`, { method: 'POST', headers: { authorization: `Bearer ${s.apiKey}`, 'content-type': 'application/json' }, body: runBody('streaming') });
    const reader = r.body!.getReader();
    const dec = new TextDecoder();
    let buf = '';
    let at = NaN;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      buf += dec.decode(value, { stream: true });
      if (Number.isNaN(at) && buf.includes('workflow_started')) at = performance.now() - t0;
    }
    if (Number.isNaN(at)) throw new Error(`no workflow_started: ${buf.slice(0, 300)}`);
    if (i >= 5) out.push(at);
  }
  return out;
}

export async function run(): Promise<void> {
  const out = (s: string) => process.stdout.write(`${s}\n`);
  out(`10-node workflow (8 template-transform nodes), blocking, ${CLIENTS} clients × ${SECONDS} s; load avg ${os.loadavg().map((l) => fmt(l)).join(' ')}`);
  const a = await startShape({ DATABASE_URL: '', QUEUE: 'embedded', REDIS_URL: '' }, undefined, 0);
  let inline: number[];
  try {
    const t = await throughput(a);
    out(`(a) embedded SQLite, 1 process          ${fmt(t.rps, 1).padStart(7)} runs/s  errors ${t.errors}`);
    for (const l of t.perRun) out(l);
    inline = await firstEvent(a);
  } finally {
    await a.close();
  }
  const pgUrl = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL;
  const redisUrl = process.env.BENCH_REDIS_URL ?? process.env.TEST_REDIS_URL;
  if (!pgUrl || !redisUrl) {
    out(`time to workflow_started, inline: p50 ${fmt(median(inline))} ms`);
    out('(b), (c) and the queue hop skipped: set BENCH_DATABASE_URL and BENCH_REDIS_URL (or TEST_*)');
    return;
  }
  let queued: number[] = [];
  let pgInline: number[] = [];
  for (const workers of [0, 1, 2]) {
    const schema = `bench_tp_${process.pid}_${workers}`;
    const prefix = `dovetail-bench-tp-${process.pid}-${workers}:`;
    // workers 0: PostgreSQL, runs inline in one process (embedded queue) — the baseline of the hop on the same storage.
    const s = await startShape({ DATABASE_URL: pgUrl, DATABASE_SCHEMA: schema, QUEUE: workers ? 'bullmq' : 'embedded', REDIS_URL: redisUrl, REDIS_KEY_PREFIX: prefix }, workers ? 'api' : undefined, workers);
    try {
      if (workers === 0) pgInline = await firstEvent(s);
      else {
        const t = await throughput(s);
        out(`(${workers === 1 ? 'b' : 'c'}) PostgreSQL + BullMQ, api + ${workers} worker${workers > 1 ? 's' : ' '} ${fmt(t.rps, 1).padStart(7)} runs/s (${fmt(t.rps / workers, 1)} per worker)  errors ${t.errors}`);
        for (const l of t.perRun) out(l);
        if (workers === 1) queued = await firstEvent(s);
      }
    } finally {
      await s.close();
      await dropSchema(pgUrl, schema);
      await dropRedisKeys(redisUrl, prefix);
    }
  }
  out(`time to workflow_started, ${HOPS} runs one at a time, p50: inline on SQLite (a) ${fmt(median(inline))} ms; inline on PostgreSQL ${fmt(median(pgInline))} ms; through the BullMQ queue (b) ${fmt(median(queued))} ms`);
  out(`queue hop adds ${fmt(median(queued) - median(pgInline))} ms at the median over inline on the same PostgreSQL (target ≤ 5 ms)`);
}
