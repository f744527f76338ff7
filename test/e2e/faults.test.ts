import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { cliOn, sharedData, startCluster, type Cluster, type RoleProcess, type SharedData } from '../helpers/cluster.js';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { dataFrames, readSse, type SseFrame } from '../helpers/sse.js';
import { endNode, llmNode, startNode, templateNode, workflowDsl } from '../helpers/workflow-dsl.js';
import { freePort } from '../helpers/free-port.js';
import { PROJECT_ROOT } from '../helpers/fixtures.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';

/**
 * Faults of real processes: a server started with a Redis it cannot use or a port it cannot have;
 * on PostgreSQL and Redis (BullMQ, reached through a TCP proxy the test resets, the shared Redis
 * untouched): blocking and streaming runs through a Redis outage, many blocking runs at once, and a
 * worker that stalls past its lease and takes its own run back.
 */
const pgUrl = process.env.TEST_DATABASE_URL;
const redisUrl = process.env.TEST_REDIS_URL;
const ready = Boolean(pgUrl && redisUrl);

const SLOW = workflowDsl(
  [startNode(), llmNode('llm', 'go'), templateNode('after', 'after {{ t }}', { t: ['llm', 'text'] }), endNode({ a: ['after', 'output'] })],
  [['start', 'llm'], ['llm', 'after'], ['after', 'end']],
);
/** What the fake model answers: streamed over about three leases, so that a pause lands inside the node and a lost lease shows. */
const REPLY = 'w'.repeat(120);
const LEASE_SECONDS = 1;

const auth = (key: string) => ({ authorization: `Bearer ${key}` });
const json = (key: string) => ({ ...auth(key), 'content-type': 'application/json' });

/** Reads `stream` until `until` holds for the frames read so far. */
async function readUntil(stream: AsyncIterator<SseFrame>, frames: SseFrame[], until: (events: Record<string, unknown>[]) => boolean): Promise<void> {
  while (!until(dataFrames(frames))) {
    const n = await stream.next();
    if (n.done) return;
    frames.push(n.value);
  }
}

describe.skipIf(!ready)('an api and a BullMQ worker process on PostgreSQL, Redis behind a proxy the test resets', { timeout: 120_000 }, () => {
  let fake: FakeOpenAI;
  let proxy: TcpProxy;
  let data: SharedData;
  let cluster: Cluster;
  let key = '';

  beforeAll(async () => {
    fake = await startFakeOpenAI({ reply: REPLY, chunkSize: 1, delayMs: 20 });
    const target = new URL(redisUrl!);
    proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 6379) });
    data = sharedData({
      REDIS_URL: proxy.url('redis'),
      REDIS_KEY_PREFIX: `ft${Math.random().toString(36).slice(2, 8)}:`,
      OPENAI_API_KEY: 'sk-test',
      OPENAI_BASE_URL: fake.baseUrl,
      QUEUE_POLL_MS: '50',
      RUN_LEASE_SECONDS: String(LEASE_SECONDS),
      LOG_LEVEL: 'info',
    });
    const file = path.join(data.dataDir, 'slow.yml');
    writeFileSync(file, SLOW);
    key = (JSON.parse(await cliOn(data, ['--init', 'app', 'import', file, '--json'])) as { api_key: string }).api_key;
    cluster = await startCluster(data, { apis: 1, workers: 1 });
  }, 60_000);
  afterAll(async () => {
    for (const w of cluster?.workers ?? []) if (w.alive()) process.kill(w.pid, 'SIGCONT');
    await cluster?.stop();
    await data?.remove();
    await fake?.close();
    await proxy?.close();
  });

  /** Every line a process wrote to stdout is a JSON log line; stderr holds no raw client error or warning. */
  const expectCleanOutput = (p: RoleProcess) => {
    const raw = p.stdout().split('\n').filter((l) => l.trim() !== '' && !isJson(l));
    expect(raw, `${p.role}: non-JSON lines on stdout`).toEqual([]);
    expect(p.stderr()).not.toContain('[ioredis] Unhandled error event');
    expect(p.stderr()).not.toContain('MaxListenersExceededWarning');
  };

  it('12 blocking runs waiting at once in one process', async () => {
    const api = cluster.apis[0]!;
    const before = fake.behaviour;
    fake.behaviour = { reply: 'short', chunkSize: 1, delayMs: 20 };
    try {
      const answers = await Promise.all(
        Array.from({ length: 12 }, async (_, i) => {
          const r = await fetch(`${api.api}/workflows/run`, { method: 'POST', headers: json(key), body: JSON.stringify({ inputs: {}, response_mode: 'blocking', user: `many${i}` }) });
          return { status: r.status, body: (await r.json()) as { data: unknown } };
        }),
      );
      for (const a of answers) expect(a).toMatchObject({ status: 200, body: { data: { status: 'succeeded', outputs: { a: 'after short' } } } });
    } finally {
      fake.behaviour = before;
    }
    expectCleanOutput(api);
  });

  it('takes its own run back and finishes it, 10 times in a row', async () => {
    const api: RoleProcess = cluster.apis[0]!;
    const worker: RoleProcess = cluster.workers[0]!;
    for (let i = 0; i < 10; i++) {
      const r = await fetch(`${api.api}/workflows/run`, { method: 'POST', headers: json(key), body: JSON.stringify({ inputs: {}, response_mode: 'streaming', user: `u${i}` }) });
      expect(r.status).toBe(200);
      const stream = readSse(r)[Symbol.asyncIterator]();
      const frames: SseFrame[] = [];
      // well inside the LLM node (longer than a stalled-job check interval, half a lease), the worker
      // stalls past its lease, then goes on
      await readUntil(stream, frames, (events) => events.filter((e) => e.event === 'text_chunk').length >= 35);
      const runId = String(dataFrames(frames)[0]!.workflow_run_id);
      process.kill(worker.pid, 'SIGSTOP');
      await sleep(LEASE_SECONDS * 1600);
      process.kill(worker.pid, 'SIGCONT');
      await readUntil(stream, frames, (events) => events.some((e) => e.event === 'workflow_finished'));
      const end = dataFrames(frames).at(-1);
      expect(end, `run ${i + 1} of 10 (${runId})`).toMatchObject({ event: 'workflow_finished', data: { status: 'succeeded', outputs: { a: `after ${REPLY}` } } });
      const row = (await (await fetch(`${api.api}/workflows/run/${runId}`, { headers: auth(key) })).json()) as { status: string };
      expect(row.status).toBe('succeeded');
    }
    expect(worker.alive()).toBe(true);
    expectCleanOutput(worker);
    // each takeover is measured: seconds from the stale execution's last write to the new one
    const metrics = await (await fetch(`${worker.url}/metrics`)).text();
    const takeovers = /^dovetail_takeover_delay_seconds_count\{what="run"\} (\d+)$/m.exec(metrics);
    expect(Number(takeovers?.[1])).toBeGreaterThanOrEqual(10);
  });

  it('a blocking run requested while Redis is unreachable answers with the finished run', async () => {
    const api = cluster.apis[0]!;
    const outage = proxy.outage(LEASE_SECONDS * 3000);
    const r = await fetch(`${api.api}/workflows/run`, { method: 'POST', headers: json(key), body: JSON.stringify({ inputs: {}, response_mode: 'blocking', user: 'outage' }) });
    await outage;
    const body = (await r.json()) as { data: { status: string; outputs: Record<string, unknown>; finished_at: number | null } };
    expect(r.status).toBe(200);
    expect(body.data).toMatchObject({ status: 'succeeded', outputs: { a: `after ${REPLY}` } });
    expect(body.data.finished_at).not.toBeNull();
    for (const p of [...cluster.apis, ...cluster.workers]) expectCleanOutput(p);
  });

  it('a streaming and a blocking run whose Redis connections are reset mid-run end succeeded', async () => {
    const api = cluster.apis[0]!;
    const r = await fetch(`${api.api}/workflows/run`, { method: 'POST', headers: json(key), body: JSON.stringify({ inputs: {}, response_mode: 'streaming', user: 'reset' }) });
    const stream = readSse(r)[Symbol.asyncIterator]();
    const frames: SseFrame[] = [];
    await readUntil(stream, frames, (events) => events.filter((e) => e.event === 'text_chunk').length >= 10);
    const blocking = fetch(`${api.api}/workflows/run`, { method: 'POST', headers: json(key), body: JSON.stringify({ inputs: {}, response_mode: 'blocking', user: 'reset' }) });
    proxy.reset();
    await readUntil(stream, frames, (events) => events.some((e) => e.event === 'workflow_finished'));
    expect(dataFrames(frames).at(-1)).toMatchObject({ event: 'workflow_finished', data: { status: 'succeeded', outputs: { a: `after ${REPLY}` } } });
    const b = await blocking;
    expect(b.status).toBe(200);
    expect(((await b.json()) as { data: unknown }).data).toMatchObject({ status: 'succeeded', outputs: { a: `after ${REPLY}` } });
    for (const p of [...cluster.apis, ...cluster.workers]) expectCleanOutput(p);
  });
});

function isJson(line: string): boolean {
  try {
    JSON.parse(line);
    return true;
  } catch {
    return false;
  }
}

/** How long a server whose start failed may take to exit (the bound). */
const START_FAILURE_BOUND_MS = 15_000;

/**
 * `dovetail serve` (the compiled bin) on a fresh SQLite data dir with `env`; resolves with its exit
 * code and output once it exited, or with `exit: 'still running'` (then killed) after the bound.
 */
async function serveUntilExit(env: Record<string, string>): Promise<{ exit: string; stdout: string; stderr: string }> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'dovetail-faults-'));
  const childEnv: Record<string, string> = { ...(process.env as Record<string, string>), DOVETAIL_DATA_DIR: dataDir, DATABASE_URL: '', DOVETAIL_SEED_EXAMPLES: 'false', HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info', ...env };
  for (const k of ['DOVETAIL_CONFIG', 'DOVETAIL_ROLE', 'QUEUE', 'STORAGE_TYPE']) delete childEnv[k];
  if (!env.REDIS_URL) delete childEnv.REDIS_URL;
  const child = spawn(process.execPath, [path.join(PROJECT_ROOT, 'bin', 'dovetail.js'), 'serve'], { env: childEnv, cwd: dataDir, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  try {
    const exit = await new Promise<string>((resolve) => {
      const bound = setTimeout(() => {
        child.kill('SIGKILL');
        resolve('still running');
      }, START_FAILURE_BOUND_MS);
      child.once('exit', (code, signal) => {
        clearTimeout(bound);
        resolve(signal ?? String(code));
      });
    });
    return { exit, stdout, stderr };
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

describe('a server that cannot start exits non-zero, naming the setting', { timeout: 60_000 }, () => {
  const servers: net.Server[] = [];
  afterAll(async () => {
    await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  });
  const listen = async (onConnection: (socket: net.Socket) => void): Promise<number> => {
    const server = net.createServer(onConnection);
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return (server.address() as net.AddressInfo).port;
  };
  const expectNoRawRedisErrors = (out: string) => {
    expect(out).not.toContain('[ioredis] Unhandled error event');
    expect(out).not.toContain('MaxRetriesPerRequestError');
  };

  it('REDIS_URL on a closed port', async () => {
    const port = await freePort();
    const r = await serveUntilExit({ REDIS_URL: `redis://127.0.0.1:${port}`, REDIS_CONNECT_TIMEOUT_SECONDS: '2' });
    expect(r.exit).toBe('1');
    expect(r.stderr).toMatch(new RegExp(`^error: REDIS_URL \\(redis://127\\.0\\.0\\.1:${port}\\) cannot be used: .*ECONNREFUSED`, 'm'));
    expect(r.stderr).not.toContain('listening on');
    expectNoRawRedisErrors(r.stdout + r.stderr);
  });

  it('REDIS_URL on a port that accepts and never answers', async () => {
    const sockets: net.Socket[] = [];
    const port = await listen((s) => sockets.push(s.on('error', () => undefined)));
    const r = await serveUntilExit({ REDIS_URL: `redis://:secret@127.0.0.1:${port}`, REDIS_CONNECT_TIMEOUT_SECONDS: '2' });
    for (const s of sockets) s.destroy();
    expect(r.exit).toBe('1');
    expect(r.stderr).toMatch(/^error: REDIS_URL \(redis:\/\/:\*\*\*@127\.0\.0\.1:\d+\) cannot be used: no answer to PING within REDIS_CONNECT_TIMEOUT_SECONDS=2 s/m);
    expect(r.stderr).not.toContain('secret');
    expectNoRawRedisErrors(r.stdout + r.stderr);
  });

  it('PORT already in use', async () => {
    const port = await listen((s) => s.destroy());
    const r = await serveUntilExit({ PORT: String(port) });
    expect(r.exit).toBe('1');
    expect(r.stderr).toMatch(new RegExp(`^error: PORT ${port} on HOST 127\\.0\\.0\\.1 is already in use`, 'm'));
  });
});
