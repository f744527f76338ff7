import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { PROJECT_ROOT } from '../helpers/fixtures.js';
import { freePort, startServer, type TestServer } from '../helpers/server.js';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { openAiCompatibleProviders } from '../helpers/openai-providers.js';
import { readSse } from '../helpers/sse.js';
import { endNode, llmNode, startNode, templateNode, workflowDsl } from '../helpers/workflow-dsl.js';
import { dropSchema } from '../../src/store/db.js';
import { cliOn, sharedData, startRole } from '../helpers/cluster.js';
import { reviewApp } from '../helpers/form-apps.js';

const exec = promisify(execFile);
const pgUrl = process.env.TEST_DATABASE_URL;
const schema = pgUrl ? `t_stop_${Math.random().toString(36).slice(2, 10)}` : undefined;
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'dovetail-shutdown-'));
const slow = workflowDsl([startNode(), llmNode('llm', 'go'), templateNode('after', 'after {{ t }}', { t: ['llm', 'text'] }), endNode({ a: ['after', 'output'] })], [['start', 'llm'], ['llm', 'after'], ['after', 'end']]);

let fake: FakeOpenAI;
beforeAll(async () => {
  fake = await startFakeOpenAI({ reply: 'w'.repeat(3000), chunkSize: 1, delayMs: 5 });
});
afterAll(async () => {
  await fake?.close();
  if (pgUrl && schema) await dropSchema(pgUrl, schema);
  rmSync(dataDir, { recursive: true, force: true });
});

/** Whether any process of this process group is still alive. */
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw err;
  }
}

describe('SIGTERM to `npm start`', { timeout: 120_000 }, () => {
  it('stops every process of the group; the streaming client gets a last frame; the run is handed back and finishes after a restart', async () => {
    const port = await freePort();
    const env: Record<string, string> = {
      ...(process.env as Record<string, string>),
      DOVETAIL_DATA_DIR: dataDir,
      PORT: String(port),
      HOST: '127.0.0.1',
      DOVETAIL_SEED_EXAMPLES: 'false',
      OPENAI_BASE_URL: fake.baseUrl,
      OPENAI_API_KEY: 'test-key',
      SHUTDOWN_TIMEOUT_SECONDS: '1',
      LOG_LEVEL: 'warn',
      ...(pgUrl ? { DATABASE_URL: pgUrl, DATABASE_SCHEMA: schema! } : { DATABASE_URL: '' }),
      // under TEST_QUEUE=bullmq, the queue the restarted test server (startServer) uses: one deployment
      ...(process.env.TEST_QUEUE === 'bullmq' && process.env.TEST_REDIS_URL ? { QUEUE: 'bullmq', REDIS_URL: process.env.TEST_REDIS_URL, REDIS_KEY_PREFIX: `dovetail-test-${path.basename(dataDir)}-${schema ?? 'sqlite'}:` } : {}),
    };
    delete env.DOVETAIL_CONFIG;
    delete env.npm_lifecycle_event;
    const dslFile = path.join(dataDir, 'slow.yml');
    writeFileSync(dslFile, slow);
    const imported = await exec(process.execPath, [path.join(PROJECT_ROOT, 'bin', 'dovetail.js'), '--init', 'app', 'import', dslFile, '--json'], { env, cwd: dataDir });
    const { api_key: apiKey } = JSON.parse(imported.stdout) as { api_key: string };

    // 1. `npm start` in its own process group, as a process manager starts it
    const npm: ChildProcess = spawn('npm', ['start'], { cwd: PROJECT_ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    npm.stdout!.resume();
    const exited = new Promise<number | null>((resolve) => npm.once('exit', (code) => resolve(code)));
    // the address is printed for a person, on stderr (stdout carries only the JSON log)
    await new Promise<void>((resolve, reject) => {
      npm.stderr!.on('data', (d: Buffer) => {
        stderr += d.toString();
        if (stderr.includes('Dovetail is listening')) resolve();
      });
      void exited.then((code) => reject(new Error(`npm start exited ${code}: ${stderr}`)));
    });

    // 2. a streaming run, in its model call
    const headers = { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' };
    const r = await fetch(`http://127.0.0.1:${port}/v1/workflows/run`, { method: 'POST', headers, body: JSON.stringify({ inputs: {}, response_mode: 'streaming', user: 'u' }) });
    const frames: Record<string, unknown>[] = [];
    let runId = '';
    const it = readSse(r)[Symbol.asyncIterator]();
    for (;;) {
      const n = await it.next();
      if (n.done) break;
      if (n.value.kind !== 'data') continue;
      frames.push(n.value.data);
      if (n.value.data.event === 'text_chunk') {
        runId = String(n.value.data.workflow_run_id);
        break;
      }
    }
    const rest = (async () => {
      for (;;) {
        const n = await it.next();
        if (n.done) return;
        if (n.value.kind === 'data') frames.push(n.value.data);
      }
    })();

    // 3. SIGTERM to npm's process only
    process.kill(npm.pid!, 'SIGTERM');
    await exited;
    await rest;
    for (let i = 0; i < 200 && groupAlive(npm.pid!); i++) await new Promise((res) => setTimeout(res, 50));
    expect(groupAlive(npm.pid!)).toBe(false);
    expect(frames.at(-1)).toMatchObject({ event: 'error', status: 503, code: 'server_shutting_down', workflow_run_id: runId });
    expect(frames.some((f) => f.event === 'workflow_finished')).toBe(false);

    // 4. the next start continues the run from its snapshot
    fake.behaviour = { reply: 'done', chunkSize: 4 };
    const next: TestServer = await startServer({ reuse: { dataDir, schema }, runtime: { providers: openAiCompatibleProviders(fake.baseUrl) } });
    try {
      let body: Record<string, unknown> = {};
      for (let i = 0; i < 300; i++) {
        body = (await (await fetch(`${next.api}/workflows/run/${runId}`, { headers })).json()) as Record<string, unknown>;
        if (body.status !== 'running') break;
        await new Promise((res) => setTimeout(res, 50));
      }
      expect(body).toMatchObject({ id: runId, status: 'succeeded', outputs: { a: 'after done' } });
      const log = await next.runtime.store.db.selectFrom('workflow_run_events').select(['event', 'payload']).where('run_id', '=', runId).orderBy('seq').execute();
      expect(log.filter((e) => e.event === 'workflow_started').map((e) => (JSON.parse(e.payload) as { data: { reason: string } }).data.reason)).toEqual(['initial']);
      // the run was continued where it was handed back: one start, one end, no gap in the sequence
      expect(log.filter((e) => e.event === 'workflow_finished')).toHaveLength(1);
      expect(log.at(-1)!.event).toBe('workflow_finished');
    } finally {
      await next.stop();
    }
  });
});

describe('SIGTERM with a stream watching a paused run', { timeout: 120_000 }, () => {
  it('the watcher gets the last frame naming its run and the process exits; after the restart the client follows the run again', async () => {
    const data = sharedData({ SHUTDOWN_TIMEOUT_SECONDS: '1', ...(process.env.TEST_REDIS_URL ? { REDIS_URL: process.env.TEST_REDIS_URL } : {}) });
    try {
      const dsl = path.join(data.dataDir, 'review.yml');
      writeFileSync(dsl, reviewApp([{ type: 'webapp', enabled: true, config: {} }]));
      const key = (JSON.parse(await cliOn(data, ['--init', 'app', 'import', dsl, '--json'])) as { api_key: string }).api_key;
      const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
      const first = await startRole(data, 'all');
      const paused = (await (await fetch(`${first.api}/workflows/run`, { method: 'POST', headers, body: JSON.stringify({ inputs: { draft: 'd' }, response_mode: 'blocking', user: 'u' }) })).json()) as { workflow_run_id: string; data: { status: string } };
      expect(paused.data.status).toBe('paused');
      const runId = paused.workflow_run_id;
      // a watcher that stays open across pauses: only the shutdown ends it
      const watch = await fetch(`${first.api}/workflow/${runId}/events?user=u&continue_on_pause=true`, { headers });
      const frames = readSse(watch)[Symbol.asyncIterator]();
      expect((await frames.next()).value).toMatchObject({ kind: 'event', event: 'ping' });
      await first.kill('SIGTERM');
      const rest: Record<string, unknown>[] = [];
      for (let n = await frames.next(); !n.done; n = await frames.next()) if (n.value.kind === 'data') rest.push(n.value.data);
      expect(rest.at(-1)).toEqual({ event: 'error', status: 503, code: 'server_shutting_down', message: expect.stringContaining('GET /v1/workflow/{workflow_run_id}/events'), workflow_run_id: runId });
      // graceful, not cut off by the hard deadline (exit code 1)
      expect(await first.exit).toBe('0');

      const second = await startRole(data, 'all');
      try {
        const again = await fetch(`${second.api}/workflow/${runId}/events?user=u&include_state_snapshot=true`, { headers });
        const body = await again.text();
        expect(body).toContain('"event":"workflow_paused"');
      } finally {
        await second.close();
      }
    } finally {
      await data.remove();
    }
  });
});
