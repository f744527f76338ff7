/**
 * Bench: 200 concurrent streaming completions against a paced upstream (first token after 500 ms,
 * then 20 tokens 100 ms apart), directly and through Dovetail, in the same run. The upstream
 * (`paced-upstream-process.ts`), Dovetail (compiled: `node bin/dovetail.js serve`, fresh SQLite)
 * and the load client (`load-client-process.ts`: undici's `request`, the least CPU a client spends
 * per request on Node 20; `BENCH_LOAD_CLIENT=fetch` sends with the built-in `fetch`, as the figures
 * before 2026-11-28 were measured) each run in their own process. Prints first-token
 * latency p50/p99 direct and through Dovetail, the overhead, errors, Dovetail's RSS and where each
 * batch's time went: when its requests reached the upstream after the client began sending (the
 * request leg; through Dovetail, the time spent before the upstream request) and how long a first
 * token took from the upstream's write to the client (the response leg), read from wall-clock stamps
 * of the client and the upstream. The baseline beside "direct": the same batch through a bare pass-through proxy
 * (`pipe-proxy-process.ts`: `node:http`, keep-alive, no work) in its own process — what one more
 * process hop between the same client and upstream costs on this machine, the floor for any proxy.
 * After a cold batch and `BENCH_LOAD_WARMUP_BURSTS` warm-up bursts (default 15, every leg; reported
 * on one line), `BENCH_LOAD_ROUNDS` rounds (default 5) of direct / bare proxy / Dovetail (the order
 * rotating), and the summary is the median over rounds. Then the same
 * concurrency held in a steady state (`BENCH_LOAD_SUSTAIN_MS`, default 15 s; 0 skips it): each
 * client sends its next request when its answer ends, the starts spread over one answer's length,
 * direct and then through Dovetail. Set
 * `BENCH_SERVER_NODE_ARGS` (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`) to profile the server, and
 * `BENCH_SERVER_BIN` to the `bin/dovetail.js` of another checkout (built) to measure that build.
 * With `BENCH_LOAD_API_PROCESSES=N` (N ≥ 2) and BENCH_DATABASE_URL / BENCH_REDIS_URL (or TEST_*), the
 * burst rounds are measured again through N `serve --role api` processes and one `dovetail worker` on
 * PostgreSQL + Redis (a schema and key prefix of their own, dropped after), the client sending its
 * requests to them in turn (as a round-robin balancer would).
 * The server runs with the Node flags `npm start` gives it (`BENCH_SERVER_FLAGS` in lib.ts;
 * `BENCH_SERVER_FLAGS=0` leaves them out, to measure without them). At the end the server's RSS
 * after `BENCH_LOAD_IDLE_MS` (default 12 s) without requests is printed.
 * Run `npm run build` first.
 */
import { execFile, fork, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { freePort } from '../test/helpers/free-port.js';
import { BENCH_SERVER_FLAGS, benchServerFlagsNote, fmt, median, percentile } from './lib.js';
import { completionApp } from '../test/helpers/apps.js';
import { dropSchema } from '../src/store/db.js';
import { dropRedisKeys } from '../test/helpers/redis-keys.js';

const exec = promisify(execFile);
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const CONCURRENCY = Number(process.env.BENCH_LOAD_CONCURRENCY ?? 200);
const ROUNDS = Number(process.env.BENCH_LOAD_ROUNDS ?? 5);
/**
 * Bursts sent through Dovetail (and the other legs) after the cold batch and before the
 * rounds, reported on one line: in its first minute a server still has its hot paths compiled by V8,
 * on helper threads that share the cores with everything else here, and a burst's first-token
 * overhead fell by a third over the first ten to fifteen bursts on the machine this was written on.
 * A deployed server runs warm; the cold line and the warm-up line show the way there.
 */
const WARMUP_BURSTS = Number(process.env.BENCH_LOAD_WARMUP_BURSTS ?? 15);
/** The steady-state phase: how long the streams are kept up after their ramp (ms); 0 skips it. */
const SUSTAIN_MS = Number(process.env.BENCH_LOAD_SUSTAIN_MS ?? 15_000);
/** One answer's length (first token 500 ms + 20 × 100 ms): the clients' starts are spread over it. */
const RAMP_MS = 2_500;
/** How long the server is left without requests before its idle RSS is read (ms). */
const IDLE_MS = Number(process.env.BENCH_LOAD_IDLE_MS ?? 12_000);
/**
 * The part of a through-Dovetail batch before the upstream's first token (500 ms): the arrivals' CPU
 * (a cold batch's arrivals may take longer, and its figure then counts only this part).
 */
const ARRIVALS_MS = 400;

/** A batch's request leg (its requests' arrival at the upstream) and response leg (ms); see `legsOf`. */
interface Legs {
  readonly request: number;
  readonly requestMax: number;
  readonly response: number;
  readonly connections: number;
}

/** Dovetail's CPU per request of a batch (ms, all threads of all server processes). */
interface Cpu {
  readonly answer: number;
  /** In the first `ARRIVALS_MS` of the batch. */
  readonly arrival: number;
  /** Of `arrival`, the event loop's (the main thread's); the rest is V8's helper threads (GC, compiler) and libuv's. */
  readonly arrivalMain: number;
}

interface Batch {
  /** When the client began sending (wall clock, ms). */
  readonly startedAt: number;
  readonly firstMs: number[];
  /** When each first token reached the client (wall clock, ms). */
  readonly firstAt: number[];
  readonly errors: string[];
  /** Requests sent (in a sustained batch, the ramp's too). */
  readonly sent: number;
}

/** CPU time (user + system, ms) the process has used so far, all threads. */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
}

/** CPU time (ms) the process's main thread has used so far (`/proc/PID/schedstat`, nanoseconds). */
function mainThreadMs(pid: number): number {
  return Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]) / 1e6;
}

function rssMb(pid: number): { rss: number; hwm: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (k: string) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(status)?.[1] ?? NaN);
  return { rss: kb('VmRSS') / 1024, hwm: kb('VmHWM') / 1024 };
}

interface Dovetail {
  readonly urls: string[];
  readonly apiKey: string;
  /** Every server process (API processes first). */
  readonly children: ChildProcess[];
  close(): Promise<void>;
}

/**
 * Starts the compiled server with a completion app; resolves once every API process answers `/health`.
 * Default: one process on a fresh SQLite data dir. With `scaled`: `apiProcesses` API processes and one
 * worker on PostgreSQL + Redis.
 */
async function startDovetail(upstream: string, scaled?: { pgUrl: string; redisUrl: string; apiProcesses: number }): Promise<Dovetail> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'dovetail-bench-load-'));
  const schema = `bench_load_${process.pid}`;
  const prefix = `dovetail-bench-load-${process.pid}:`;
  const storage = scaled ? { DATABASE_URL: scaled.pgUrl, DATABASE_SCHEMA: schema, QUEUE: 'bullmq', REDIS_URL: scaled.redisUrl, REDIS_KEY_PREFIX: prefix } : { DATABASE_URL: '', QUEUE: '', REDIS_URL: '' };
  const env = { ...process.env, DOVETAIL_DATA_DIR: dataDir, ...storage, DOVETAIL_SEED_EXAMPLES: 'false', LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info', OPENAI_API_KEY: 'sk-bench', OPENAI_BASE_URL: upstream };
  // another build to measure (a checkout's `bin/dovetail.js`), to compare two builds in alternate runs
  const bin = process.env.BENCH_SERVER_BIN ?? path.join(ROOT, 'bin', 'dovetail.js');
  await exec(process.execPath, [bin, '--init', 'migrate'], { env });
  const dsl = path.join(dataDir, 'app.yml');
  writeFileSync(dsl, completionApp());
  const { stdout } = await exec(process.execPath, [bin, 'app', 'import', dsl, '--json'], { env });
  const apiKey = (JSON.parse(stdout) as { api_key: string }).api_key;
  const nodeArgs = [...BENCH_SERVER_FLAGS, ...(process.env.BENCH_SERVER_NODE_ARGS ? process.env.BENCH_SERVER_NODE_ARGS.split(' ') : [])];
  // The server's log goes to /dev/null as a deployment's goes to its collector: written, not read here.
  const start = async (args: string[]) => {
    const port = await freePort();
    return { url: `http://127.0.0.1:${port}`, child: spawn(process.execPath, [...nodeArgs, bin, ...args], { env: { ...env, PORT: String(port), HOST: '127.0.0.1' }, stdio: ['ignore', 'ignore', 'inherit'] }) };
  };
  const api = scaled ? await Promise.all(Array.from({ length: scaled.apiProcesses }, () => start(['serve', '--role', 'api']))) : [await start(['serve'])];
  const children = [...api.map((a) => a.child), ...(scaled ? [(await start(['worker'])).child] : [])];
  for (const { url, child } of api) {
    for (;;) {
      if (await fetch(`${url}/health`).then((r) => r.ok, () => false)) break;
      if (child.exitCode !== null) throw new Error(`dovetail serve exited ${child.exitCode}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }
  return {
    urls: api.map((a) => a.url),
    apiKey,
    children,
    async close() {
      await Promise.all(children.map((c) => (c.exitCode !== null ? undefined : new Promise((r) => { c.once('exit', r); c.kill('SIGTERM'); }))));
      rmSync(dataDir, { recursive: true, force: true });
      if (scaled) {
        await dropSchema(scaled.pgUrl, schema);
        await dropRedisKeys(scaled.redisUrl, prefix);
      }
    },
  };
}

export async function run(): Promise<void> {
  if (!existsSync(path.join(ROOT, 'dist', 'cli.js'))) throw new Error('dist/ is missing: npm run build');
  const loadBefore = os.loadavg();
  const upstreamProc = fork(fileURLToPath(new URL('./paced-upstream-process.ts', import.meta.url)), [JSON.stringify({ firstMs: 500, gapMs: 100, tokens: 20 })], { execArgv: ['--import', 'tsx'] });
  const upstream = { info: await new Promise<{ baseUrl: string }>((r) => upstreamProc.once('message', (m) => r(m as { baseUrl: string }))), stop: () => upstreamProc.connected && upstreamProc.disconnect() };
  /**
   * Where batch `b`'s time went, read from the upstream (which also clears its record): when its requests
   * reached the upstream (p50 and max, ms after the client began sending) and how long the first tokens
   * took from the upstream's write to the client (p50 of the client's first tokens minus p50 of the
   * upstream's first writes) — the request leg and the response leg of the first-token latency.
   */
  const legsOf = (b: Batch) =>
    new Promise<Legs>((resolve) => {
      upstreamProc.once('message', (m) => {
        const { arrivals, firstWrites, connections } = m as { arrivals: number[]; firstWrites: number[]; connections: number };
        const since = (ts: number[]) => ts.map((t) => t - b.startedAt).sort((x, y) => x - y);
        const reached = since(arrivals);
        resolve({ request: median(reached), requestMax: reached[reached.length - 1] ?? NaN, response: median(since(b.firstAt)) - median(since(firstWrites)), connections });
      });
      upstreamProc.send('arrivals');
    });
  const legsText = (l: Legs) => `reached upstream p50 ${fmt(l.request, 0)} max ${fmt(l.requestMax, 0)} ms, first token upstream→client p50 ${fmt(l.response, 0)} ms, ${l.connections} new connections`;
  const client = fork(fileURLToPath(new URL('./load-client-process.ts', import.meta.url)), [], { execArgv: ['--import', 'tsx'] });
  await new Promise((r) => client.once('message', r));
  const batch = (job: object) =>
    new Promise<Batch>((resolve) => {
      client.once('message', (m) => resolve(m as Batch));
      client.send({ n: CONCURRENCY, ...job });
    });
  const directJob = {
    url: `${upstream.info.baseUrl}/chat/completions`,
    headers: { authorization: 'Bearer sk-bench' },
    body: { model: 'gpt-4o-mini', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'Write about bench.' }] },
    kind: 'openai',
  };
  // The floor of any proxy: a bare pass-through (`node:http`, keep-alive, no work) in its own
  // process, between the same client and upstream.
  const proxyProc = fork(fileURLToPath(new URL('./pipe-proxy-process.ts', import.meta.url)), [JSON.stringify({ upstream: upstream.info.baseUrl })], { execArgv: ['--import', 'tsx'] });
  const proxyUrl = await new Promise<string>((r) => proxyProc.once('message', (m) => r((m as { baseUrl: string }).baseUrl)));
  const proxyJob = { ...directJob, url: `${proxyUrl}/chat/completions` };
  const throughJob = (d: Dovetail) => ({
    url: d.urls.map((u) => `${u}/v1/completion-messages`),
    headers: { authorization: `Bearer ${d.apiKey}` },
    body: { inputs: { topic: 'bench' }, user: 'bench', response_mode: 'streaming' },
    kind: 'dify',
  });
  /** CPU time of every server process (ms). */
  const cpuAll = (d: Dovetail) => d.children.reduce((n, c) => n + cpuMs(c.pid!), 0);
  const mainAll = (d: Dovetail) => d.children.reduce((n, c) => n + mainThreadMs(c.pid!), 0);
  const rssAll = (d: Dovetail) => d.children.reduce((n, c) => n + rssMb(c.pid!).rss, 0);
  type Row = { direct: Batch; proxy: Batch; through: Batch; rss: number; cpu: Cpu; legs: Record<'direct' | 'proxy' | 'through', Legs> };
  const LEGS = ['direct', 'proxy', 'through'] as const;
  type Leg = (typeof LEGS)[number];
  /** One leg's batch, where its time went, and (through Dovetail) the servers' CPU. */
  type LegRun = { b: Batch; legs: Legs; cpu?: Cpu };
  /** A batch through Dovetail, with the servers' CPU per request (ms) while it ran. */
  const through = async (d: Dovetail): Promise<{ b: Batch; cpu: Cpu }> => {
    const before = cpuAll(d);
    const mainBefore = mainAll(d);
    const pending = batch(throughJob(d));
    await new Promise((r) => setTimeout(r, ARRIVALS_MS));
    const arrivals = cpuAll(d) - before;
    const arrivalsMain = mainAll(d) - mainBefore;
    const b = await pending;
    return { b, cpu: { answer: (cpuAll(d) - before) / CONCURRENCY, arrival: arrivals / CONCURRENCY, arrivalMain: arrivalsMain / CONCURRENCY } };
  };
  const out = (s: string) => process.stdout.write(`${s}\n`);
  const p50 = (b: Batch) => median(b.firstMs);
  const p99 = (b: Batch) => percentile(b.firstMs, 99);
  const over = (b: Batch, base: Batch) => `p50 ${fmt(p50(b) - p50(base), 0).padStart(4)} p99 ${fmt(p99(b) - p99(base), 0).padStart(4)}`;
  const line = (name: string, d: Batch, t: Batch, rss: number, cpu: Cpu | number, proxy?: Batch) =>
    `${name.padEnd(8)} direct p50 ${fmt(p50(d), 0).padStart(5)} p99 ${fmt(p99(d), 0).padStart(5)} | through p50 ${fmt(p50(t), 0).padStart(5)} p99 ${fmt(p99(t), 0).padStart(5)} | overhead ${over(t, d)} ms${proxy ? ` | bare proxy overhead ${over(proxy, d)} ms` : ''} | errors ${d.errors.length}/${t.errors.length}${proxy ? `/${proxy.errors.length}` : ''} | RSS ${fmt(rss, 0)} MB | CPU ${typeof cpu === 'number' ? fmt(cpu, 2) : `${fmt(cpu.answer, 2)} (arrival ${fmt(cpu.arrival, 2)}, main thread ${fmt(cpu.arrivalMain, 2)})`} ms/request`;
  /**
   * The cold batch, the warm-up bursts, then `ROUNDS` rounds of three batches — direct, through the
   * bare proxy, through Dovetail — in an order that rotates round by round, then the medians over rounds.
   */
  const bursts = async (d: Dovetail) => {
    /** One leg's batch, then where its time went (which also clears the upstream's record). */
    const runLeg = async (leg: Leg): Promise<LegRun> => {
      const r = leg === 'through' ? await through(d) : { b: await batch(leg === 'direct' ? directJob : proxyJob) };
      return { ...r, legs: await legsOf(r.b) };
    };
    // Cold start: the first 200 at once after the server started, reported on its own.
    const coldThrough = await runLeg('through');
    const coldDirect = await runLeg('direct');
    // The bare proxy's first batch opens its connections (both ways); it is not reported, as the
    // other legs' connections are open by the first round.
    const coldProxy = await runLeg('proxy');
    const coldErrors = [coldThrough, coldDirect, coldProxy].flatMap((r) => r.b.errors);
    for (const e of new Set(coldErrors)) out(`  error: ${e}`);
    out(line('cold', coldDirect.b, coldThrough.b, rssAll(d), coldThrough.cpu!));
    const warm: { first: number; cpu: Cpu }[] = [];
    const warmErrors: string[] = [];
    for (let i = 0; i < WARMUP_BURSTS; i++) {
      // every leg, so that each one's connections are as warm as Dovetail's when the rounds begin
      for (const leg of ['through', 'proxy', 'direct'] as const) {
        const r = await runLeg(leg);
        warmErrors.push(...r.b.errors);
        if (r.cpu) warm.push({ first: p50(r.b), cpu: r.cpu });
      }
    }
    if (warm.length > 0) {
      out(`warm-up  ${WARMUP_BURSTS} bursts through Dovetail (and the other legs), left out of the rounds: Dovetail's first token p50 ${warm.map((w) => fmt(w.first, 0)).join(' ')} ms; arrival CPU ${warm.map((w) => fmt(w.cpu.arrival, 2)).join(' ')} ms/request`);
      for (const e of new Set(warmErrors)) out(`  error (warm-up): ${e}`);
    }
    const rows: Row[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      const order = [...LEGS.slice(i % 3), ...LEGS.slice(0, i % 3)];
      const got: Partial<Record<Leg, LegRun>> = {};
      for (const leg of order) got[leg] = await runLeg(leg);
      const row = { direct: got.direct!.b, proxy: got.proxy!.b, through: got.through!.b, rss: rssAll(d), cpu: got.through!.cpu!, legs: { direct: got.direct!.legs, proxy: got.proxy!.legs, through: got.through!.legs } };
      rows.push(row);
      out(line(`round ${i + 1}`, row.direct, row.through, row.rss, row.cpu, row.proxy));
      out(`         direct: ${legsText(row.legs.direct)}; bare proxy: ${legsText(row.legs.proxy)}; through Dovetail: ${legsText(row.legs.through)}`);
      for (const e of new Set([...row.direct.errors, ...row.proxy.errors, ...row.through.errors])) out(`  error: ${e}`);
    }
    const m = (f: (r: Row) => number) => median(rows.map(f));
    const errors = coldErrors.length + warmErrors.length + rows.reduce((n, r) => n + r.direct.errors.length + r.proxy.errors.length + r.through.errors.length, 0);
    out(`median over ${ROUNDS} rounds: direct p50 ${fmt(m((r) => p50(r.direct)), 0)} p99 ${fmt(m((r) => p99(r.direct)), 0)} ms; bare proxy p50 ${fmt(m((r) => p50(r.proxy)), 0)} p99 ${fmt(m((r) => p99(r.proxy)), 0)} ms; through Dovetail p50 ${fmt(m((r) => p50(r.through)), 0)} p99 ${fmt(m((r) => p99(r.through)), 0)} ms`);
    out(`first-token overhead  p50 ${fmt(m((r) => p50(r.through) - p50(r.direct)), 0)} ms (target ≤ 30)   p99 ${fmt(m((r) => p99(r.through) - p99(r.direct)), 0)} ms (target ≤ 150)   errors ${errors} (target 0)`);
    out(`baseline: a bare pass-through proxy's overhead  p50 ${fmt(m((r) => p50(r.proxy) - p50(r.direct)), 0)} ms   p99 ${fmt(m((r) => p99(r.proxy) - p99(r.direct)), 0)} ms; Dovetail over the bare proxy  p50 ${fmt(m((r) => p50(r.through) - p50(r.proxy)), 0)} ms   p99 ${fmt(m((r) => p99(r.through) - p99(r.proxy)), 0)} ms`);
    const legLine = (leg: Leg) => `request leg p50 ${fmt(m((r) => r.legs[leg].request), 0)} ms, response leg p50 ${fmt(m((r) => r.legs[leg].response), 0)} ms`;
    out(`where the first-token time went (medians over rounds; request leg: the requests' arrival at the upstream after the client began sending; response leg: the upstream's first-token write to the client): direct ${legLine('direct')}; bare proxy ${legLine('proxy')}; through Dovetail ${legLine('through')}`);
    out(`Dovetail CPU per streamed completion (all threads): ${fmt(m((r) => r.cpu.answer), 2)} ms the whole answer, ${fmt(m((r) => r.cpu.arrival), 2)} ms of it in the burst's first ${ARRIVALS_MS} ms (the arrivals, before any token), ${fmt(m((r) => r.cpu.arrivalMain), 2)} ms of those on the event loop's thread (the rest: V8's garbage collector and compiler threads, on the same cores)`);
  };
  try {
    const dovetail = await startDovetail(upstream.info.baseUrl);
    try {
      out(`${CONCURRENCY} concurrent streaming completions, paced upstream (first token 500 ms, then 20 tokens 100 ms apart), load client on ${process.env.BENCH_LOAD_CLIENT === 'fetch' ? 'fetch' : 'undici.request'}; server node flags: ${benchServerFlagsNote}; load avg before ${loadBefore.map((l) => fmt(l)).join(' ')}`);
      await bursts(dovetail);
      if (SUSTAIN_MS > 0) {
        // The steady state of the same concurrency: each of 200 clients sends its next request when its
        // answer ends, their starts spread over one answer's length (arrivals ≈ 200 / 2.6 s).
        const d = await batch({ ...directJob, sustainMs: SUSTAIN_MS, rampMs: RAMP_MS });
        const before = cpuAll(dovetail);
        const t = await batch({ ...throughJob(dovetail), sustainMs: SUSTAIN_MS, rampMs: RAMP_MS });
        const cpu = (cpuAll(dovetail) - before) / t.sent;
        out(`sustained ${CONCURRENCY} concurrent streams for ${fmt(SUSTAIN_MS / 1000, 0)} s after a ${fmt(RAMP_MS / 1000, 1)} s ramp: ${d.firstMs.length} direct / ${t.firstMs.length} through requests measured`);
        out(line('steady', d, t, rssAll(dovetail), cpu));
        for (const e of new Set([...d.errors, ...t.errors])) out(`  error: ${e}`);
      }
      const mem = rssMb(dovetail.children[0]!.pid!);
      out(`Dovetail RSS ${fmt(mem.rss, 0)} MB now, peak ${fmt(mem.hwm, 0)} MB; load avg after ${os.loadavg().map((l) => fmt(l)).join(' ')}`);
      // what the server keeps while quiet (the memory reducer, which `--no-memory-reducer` turns off, shrinks the heap after ~8 s)
      await new Promise((r) => setTimeout(r, IDLE_MS));
      out(`Dovetail RSS after ${fmt(IDLE_MS / 1000, 0)} s without requests ${fmt(rssMb(dovetail.children[0]!.pid!).rss, 0)} MB (server node flags: ${benchServerFlagsNote})`);
    } finally {
      await dovetail.close();
    }
    const apiProcesses = Number(process.env.BENCH_LOAD_API_PROCESSES ?? 0);
    const pgUrl = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL;
    const redisUrl = process.env.BENCH_REDIS_URL ?? process.env.TEST_REDIS_URL;
    if (apiProcesses >= 2 && pgUrl && redisUrl) {
      const scaled = await startDovetail(upstream.info.baseUrl, { pgUrl, redisUrl, apiProcesses });
      try {
        out(`the same bursts through ${apiProcesses} API processes and 1 worker on PostgreSQL + Redis, requests sent to the API processes in turn (RSS and CPU: all of them)`);
        await bursts(scaled);
      } finally {
        await scaled.close();
      }
    }
  } finally {
    client.disconnect();
    proxyProc.disconnect();
    upstream.stop();
  }
}
