import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { PROJECT_ROOT } from '../helpers/fixtures.js';
import { restartServer, startServer, type TestServer } from '../helpers/server.js';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { openAiCompatibleProviders } from '../helpers/openai-providers.js';
import { readSse } from '../helpers/sse.js';
import { endNode, llmNode, startNode, templateNode, workflowDsl } from '../helpers/workflow-dsl.js';

let fake: FakeOpenAI;
beforeAll(async () => {
  fake = await startFakeOpenAI({ reply: 'w'.repeat(2000), chunkSize: 1, delayMs: 5 });
});
afterAll(async () => fake?.close());

const slow = workflowDsl([startNode(), llmNode('llm', 'go'), templateNode('after', 'after'), endNode({ a: ['llm', 'text'] })], [['start', 'llm'], ['llm', 'after'], ['after', 'end']]);
const headers = (key: string) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' });

async function waitStatus(s: TestServer, key: string, runId: string, want: string): Promise<Record<string, unknown>> {
  let body: Record<string, unknown> = {};
  for (let i = 0; i < 300; i++) {
    body = await (await fetch(`${s.api}/workflows/run/${runId}`, { headers: headers(key) })).json();
    if (body.status === want) return body;
    await new Promise((r) => setTimeout(r, 20));
  }
  return body;
}

describe('a process that dies mid-run', () => {
  // two server processes (the child compiles its TypeScript at start): slow on a loaded machine
  it('leaves no run stuck in running: the next server fails it with a clear error and ends its log', { timeout: 120_000 }, async () => {
    const env = { RUN_ORPHAN_AFTER_MS: '300' };
    const first = await startServer({ env });
    const { apiKey } = await first.importApp(slow);
    await first.stop();
    const childEnv: Record<string, string> = {
      ...(process.env as Record<string, string>),
      ...env,
      DOVETAIL_DATA_DIR: first.dataDir,
      FAKE_OPENAI_URL: fake.baseUrl,
      ...(first.config.databaseUrl ? { DATABASE_URL: first.config.databaseUrl, DATABASE_SCHEMA: first.config.databaseSchema! } : {}),
    };
    delete childEnv.DOVETAIL_CONFIG;
    const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', path.join(PROJECT_ROOT, 'test/helpers/child-server.ts')], { env: childEnv, stdio: ['ignore', 'pipe', 'inherit'] });
    const url = await new Promise<string>((resolve, reject) => {
      child.stdout!.on('data', (d: Buffer) => {
        const m = /listening (\S+)/.exec(d.toString());
        if (m) resolve(m[1]!);
      });
      child.on('exit', (code) => reject(new Error(`child exited ${code}`)));
    });
    const r = await fetch(`${url}/v1/workflows/run`, { method: 'POST', headers: headers(apiKey), body: JSON.stringify({ inputs: {}, response_mode: 'streaming', user: 'u' }) });
    let runId = '';
    for await (const f of readSse(r)) {
      if (f.kind === 'data' && f.data.event === 'text_chunk') {
        runId = String(f.data.workflow_run_id);
        break;
      }
    }
    child.kill('SIGKILL');
    await new Promise((res) => child.once('exit', res));

    const second = await restartServer(first, { env, runtime: { providers: openAiCompatibleProviders(fake.baseUrl) } });
    try {
      const body = await waitStatus(second, apiKey, runId, 'failed');
      expect(body.status).toBe('failed');
      expect(String(body.error)).toMatch(/interrupted/);
      expect(body.finished_at).not.toBeNull();
      const log = await second.runtime.store.db.selectFrom('workflow_run_events').select('event').where('run_id', '=', runId).orderBy('seq').execute();
      expect(log.at(-1)!.event).toBe('workflow_finished');
      expect(log.some((e) => e.event === 'node_started')).toBe(true);
      expect(log.filter((e) => e.event === 'node_started')).toHaveLength(2);
    } finally {
      await second.close();
    }
  });
});

describe('two servers on one database', () => {
  it('a stop sent to another instance reaches the run through the durable stop flag', async () => {
    const env = { RUN_ORPHAN_AFTER_MS: '300', ...(process.env.TEST_REDIS_URL ? { REDIS_URL: process.env.TEST_REDIS_URL } : {}) };
    const a = await startServer({ env, runtime: { providers: openAiCompatibleProviders(fake.baseUrl) } });
    const b = await startServer({ env, reuse: { dataDir: a.dataDir, schema: a.config.databaseSchema } });
    try {
      const { apiKey } = await a.importApp(slow);
      const r = await fetch(`${a.api}/workflows/run`, { method: 'POST', headers: headers(apiKey), body: JSON.stringify({ inputs: {}, response_mode: 'streaming', user: 'u' }) });
      const events: Record<string, unknown>[] = [];
      let mirror: Promise<Record<string, unknown>[]> | undefined;
      for await (const f of readSse(r)) {
        if (f.kind !== 'data') continue;
        events.push(f.data);
        if (f.data.event === 'text_chunk' && events.filter((e) => e.event === 'text_chunk').length === 1) {
          // the other instance reads the same log: it can replay and tail the run too
          const m = await fetch(`${b.api}/workflow/${f.data.workflow_run_id}/events?user=u&include_state_snapshot=true`, { headers: headers(apiKey) });
          mirror = (async () => {
            const got: Record<string, unknown>[] = [];
            for await (const g of readSse(m)) if (g.kind === 'data') got.push(g.data);
            return got;
          })();
          await fetch(`${b.api}/workflows/tasks/${f.data.task_id}/stop`, { method: 'POST', headers: headers(apiKey), body: JSON.stringify({ user: 'ops' }) });
        }
      }
      expect(events.at(-1)).toMatchObject({ event: 'workflow_finished', data: { status: 'stopped' } });
      const mirrored = await mirror!;
      expect(mirrored.map((e) => e.event)).toEqual(events.map((e) => e.event));
      expect(events.some((e) => (e.data as { node_id?: string })?.node_id === 'after')).toBe(false);
    } finally {
      await b.stop();
      await a.close();
    }
  });
});

describe('global time limit', () => {
  it('a run over WORKFLOW_MAX_EXECUTION_TIME fails with a message naming the limit, and its model call is aborted', async () => {
    const s = await startServer({ env: { WORKFLOW_MAX_EXECUTION_TIME: '1' }, runtime: { providers: openAiCompatibleProviders(fake.baseUrl) } });
    try {
      const { apiKey } = await s.importApp(slow);
      const body = await (await fetch(`${s.api}/workflows/run`, { method: 'POST', headers: headers(apiKey), body: JSON.stringify({ inputs: {}, user: 'u' }) })).json();
      expect(body.data).toMatchObject({ status: 'failed', error: 'Max execution time 1s reached.' });
      await fake.waitForAbort();
    } finally {
      await s.close();
    }
  });
});
