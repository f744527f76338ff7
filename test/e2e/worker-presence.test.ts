import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { cliOn, sharedData, startRole, type RoleProcess, type SharedData } from '../helpers/cluster.js';
import { dropRedisKeys } from '../helpers/redis-keys.js';
import { endNode, startNode, templateNode, workflowDsl } from '../helpers/workflow-dsl.js';

// An api process with no worker: it says so in its log, on /ready and on /metrics, and a blocking
// run that no worker takes ends with a clear error after RUN_QUEUE_WAIT_SECONDS (issue 41).
const APP = workflowDsl([startNode(), templateNode('t', 'hello'), endNode({ out: ['t', 'output'] })], [['start', 't'], ['t', 'end']]);

let data: SharedData;
let redis: { REDIS_URL: string; REDIS_KEY_PREFIX: string } | undefined;
let key: string;
let chatKey: string;
const started: RoleProcess[] = [];
beforeAll(async () => {
  // on PostgreSQL with TEST_REDIS_URL, the runs go through BullMQ
  redis = process.env.TEST_DATABASE_URL && process.env.TEST_REDIS_URL ? { REDIS_URL: process.env.TEST_REDIS_URL, REDIS_KEY_PREFIX: `wp${Math.random().toString(36).slice(2, 8)}:` } : undefined;
  data = sharedData({ QUEUE_POLL_MS: '20', WORKER_HEARTBEAT_SECONDS: '1', RUN_QUEUE_WAIT_SECONDS: '2', ...redis });
  const file = path.join(data.dataDir, 'app.yml');
  writeFileSync(file, APP);
  key = (JSON.parse(await cliOn(data, ['--init', 'app', 'import', file, '--json'])) as { api_key: string }).api_key;
  const chat = path.join(data.dataDir, 'chat.yml');
  writeFileSync(chat, workflowDsl([startNode(), { id: 'answer', type: 'answer', answer: 'hi {{#sys.query#}}' }], [['start', 'answer']], { mode: 'advanced-chat' }));
  chatKey = (JSON.parse(await cliOn(data, ['app', 'import', chat, '--json'])) as { api_key: string }).api_key;
});
afterAll(async () => {
  await Promise.all(started.map((p) => p.close()));
  await data?.remove();
  if (redis) await dropRedisKeys(redis.REDIS_URL, redis.REDIS_KEY_PREFIX);
});

async function start(role: 'api' | 'worker', env: Record<string, string> = {}): Promise<RoleProcess> {
  const p = await startRole(data, role, { env });
  started.push(p);
  return p;
}

const metric = (text: string, name: string): number | undefined => {
  const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : undefined;
};

const runBlocking = (api: RoleProcess) =>
  fetch(`${api.api}/workflows/run`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ inputs: {}, user: 'u1', response_mode: 'blocking' }),
  });

describe('an api process without a worker', { timeout: 120_000 }, () => {
  it('warns in its log, names the missing worker on /ready and /metrics, and fails a blocking run no worker takes after RUN_QUEUE_WAIT_SECONDS', async () => {
    const api = await start('api');
    // the log: one warning naming the missing worker and the settings
    await vi.waitFor(() => expect(api.stdout()).toContain('no worker process has sent a heartbeat'), { timeout: 20_000, interval: 100 });
    const warn = api.stdout().split('\n').filter((l) => l.includes('no worker process has sent a heartbeat')).map((l) => JSON.parse(l) as { level: number; msg: string });
    expect(warn).toHaveLength(1);
    expect(warn[0]!.level).toBe(40);
    expect(warn[0]!.msg).toContain('WORKER_HEARTBEAT_SECONDS=1');

    // /ready stays 200 (READY_REQUIRES_WORKER is false) and names the missing worker
    const ready = await fetch(`${api.url}/ready`);
    expect(ready.status).toBe(200);
    const body = (await ready.json()) as { status: string; workers: number; warning: string };
    expect(body.status).toBe('ready');
    expect(body.workers).toBe(0);
    expect(body.warning).toContain('no worker process is running');
    expect(body.warning).toContain('READY_REQUIRES_WORKER=true');

    const metrics = await (await fetch(`${api.url}/metrics`)).text();
    expect(metric(metrics, 'dovetail_workers_seen')).toBe(0);
    expect(metric(metrics, 'dovetail_worker_heartbeat_age_seconds')).toBe(-1);

    // a blocking run: 503 naming the setting once RUN_QUEUE_WAIT_SECONDS passed, and the run ended failed
    const res = await runBlocking(api);
    expect(res.status).toBe(503);
    const err = (await res.json()) as { code: string; message: string; status: number };
    expect(err.code).toBe('run_not_picked_up');
    expect(err.status).toBe(503);
    expect(err.message).toContain('RUN_QUEUE_WAIT_SECONDS=2');
    await vi.waitFor(() => expect(api.stdout()).toContain('no worker process took it within RUN_QUEUE_WAIT_SECONDS=2'), { timeout: 5000, interval: 100 });
    // a chatflow's blocking message alike
    const chat = await fetch(`${api.api}/chat-messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${chatKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ inputs: {}, query: 'there', user: 'u1', response_mode: 'blocking' }),
    });
    expect(chat.status).toBe(503);
    expect(await chat.json()).toMatchObject({ code: 'run_not_picked_up', status: 503 });

    // a worker comes: the run that failed is not run later, new runs succeed, /ready and /metrics see it
    const worker = await start('worker');
    await vi.waitFor(async () => expect(((await (await fetch(`${api.url}/ready`)).json()) as { workers: number }).workers).toBe(1), { timeout: 20_000, interval: 200 });
    const after = await (await fetch(`${api.url}/metrics`)).text();
    expect(metric(after, 'dovetail_workers_seen')).toBe(1);
    expect(metric(after, 'dovetail_worker_heartbeat_age_seconds')).toBeGreaterThanOrEqual(0);
    const ok = await runBlocking(api);
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as { data: { status: string; outputs: unknown } }).data).toMatchObject({ status: 'succeeded', outputs: { out: 'hello' } });
    expect(worker.stdout()).not.toContain('no worker process');
  });

  it('with READY_REQUIRES_WORKER=true, /ready is a 503 naming the missing worker and the setting', async () => {
    // the worker of the first test is stopped first: its heartbeat row goes with it
    await Promise.all(started.splice(0).map((p) => p.close()));
    const api = await start('api', { READY_REQUIRES_WORKER: 'true' });
    const res = await fetch(`${api.url}/ready`);
    expect(res.status).toBe(503);
    const body = (await res.json()) as { code: string; message: string };
    expect(body.code).toBe('not_ready');
    expect(body.message).toContain('no worker process is running');
    expect(body.message).toContain('READY_REQUIRES_WORKER=true');
  });
});
