import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { PROJECT_ROOT } from '../helpers/fixtures.js';
import { cliOn, sharedData, startRole, type RoleProcess, type SharedData } from '../helpers/cluster.js';

// Processes of each role, started through the bin on one database (see docs/deployment.md, "Roles").
let data: SharedData;
const started: RoleProcess[] = [];
beforeAll(async () => {
  data = sharedData({ QUEUE_POLL_MS: '20' });
  await cliOn(data, ['--init', 'key', 'create', '--dataset', '--json']);
});
afterAll(async () => {
  await Promise.all(started.map((p) => p.close()));
  await data?.remove();
});

async function start(role: 'api' | 'worker' | 'all', opts: { shorthand?: boolean } = {}): Promise<RoleProcess> {
  const p = await startRole(data, role, opts);
  started.push(p);
  return p;
}

/** Runs the bin with `args` and `env`; resolves with its exit code and stderr. */
async function failing(args: string[], env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, [path.join(PROJECT_ROOT, 'bin', 'dovetail.js'), ...args], { env: { ...(process.env as Record<string, string>), ...data.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { code, stderr };
}

describe('process roles', { timeout: 120_000 }, () => {
  it('a bad role is a config error naming the setting it came from', async () => {
    const flag = await failing(['serve', '--role', 'cook'], {});
    expect(flag.code).toBe(1);
    expect(flag.stderr).toContain('error: --role must be one of api, worker, all, got "cook"');
    const env = await failing(['serve'], { DOVETAIL_ROLE: 'cook' });
    expect(env.code).toBe(1);
    expect(env.stderr).toContain('error: DOVETAIL_ROLE must be one of api, worker, all, got "cook"');
    const contradiction = await failing(['worker'], { QUEUE_WORKER: 'false' });
    expect(contradiction.code).toBe(1);
    expect(contradiction.stderr).toContain('QUEUE_WORKER=false contradicts DOVETAIL_ROLE=worker');
  });

  it('an api process leaves a document waiting; a worker (`dovetail worker`) indexes it and serves only its probes and metrics', async () => {
    const key = (JSON.parse(await cliOn(data, ['key', 'create', '--dataset', '--json'])) as { api_key: string }).api_key;
    const api = await start('api');
    expect(api.stderr()).toContain('(role api)');
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const call = async (method: string, p: string, body?: unknown) => {
      const r = await fetch(`${api.api}${p}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
      return { status: r.status, body: (await r.json()) as Record<string, any> };
    };
    const ds = await call('POST', '/datasets', { name: 'roles', indexing_technique: 'economy' });
    expect(ds.status).toBe(200);
    const doc = await call('POST', `/datasets/${ds.body.id}/document/create-by-text`, { name: 'policy', text: 'Remote work is allowed on Fridays for the Delta team.', indexing_technique: 'economy', process_rule: { mode: 'automatic' } });
    expect(doc.status).toBe(200);
    const status = async (batch: string = doc.body.batch) => (await call('GET', `/datasets/${ds.body.id}/documents/${batch}/indexing-status`)).body.data[0] as Record<string, unknown>;
    // The api process polls nothing: many of a worker's poll intervals later the job is still queued.
    await new Promise((r) => setTimeout(r, 500));
    expect((await status()).indexing_status).toBe('waiting');

    const worker = await start('worker', { shorthand: true });
    expect(worker.stderr()).toContain('(role worker: only /health, /ready and /metrics)');
    await vi.waitFor(async () => expect((await status()).indexing_status).toBe('completed'), { timeout: 30_000, interval: 50 });
    const hits = await call('POST', `/datasets/${ds.body.id}/retrieve`, { query: 'Fridays Delta' });
    expect(hits.body.records.length).toBe(1);
    // a text past TOKENIZER_WORKER_MIN_CHARS (20,000) is split and counted on the compiled server's text worker thread
    const big = await call('POST', `/datasets/${ds.body.id}/document/create-by-text`, { name: 'handbook', text: 'Every team writes its plans down before the quarter starts. '.repeat(500), indexing_technique: 'economy', process_rule: { mode: 'automatic' } });
    expect(big.status).toBe(200);
    await vi.waitFor(async () => expect(await status(big.body.batch)).toMatchObject({ indexing_status: 'completed', error: null }), { timeout: 30_000, interval: 50 });
    expect(worker.stdout()).not.toContain('text worker failed');

    // the worker's HTTP side: probes and metrics, nothing else (Dify's 404 shape)
    expect((await fetch(`${worker.url}/health`)).status).toBe(200);
    expect((await fetch(`${worker.url}/ready`)).status).toBe(200);
    const metrics = await fetch(`${worker.url}/metrics`);
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).toContain('dovetail_');
    for (const p of ['/v1/datasets', '/v1/parameters', '/docs', '/form/x']) {
      const r = await fetch(`${worker.url}${p}`, { headers });
      expect(r.status, p).toBe(404);
      expect(await r.json(), p).toMatchObject({ code: 'not_found', status: 404 });
    }
    // the api process serves the API and its probes
    expect((await fetch(`${api.url}/ready`)).status).toBe(200);
    expect((await fetch(`${api.api}/datasets`, { headers })).status).toBe(200);
  });
});
