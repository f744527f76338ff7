import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { restartServer, startServer, type TestServer } from '../helpers/server.js';
import { spawnServer } from '../helpers/server-process.js';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { openAiCompatibleEnv, openAiCompatibleProviders } from '../helpers/openai-providers.js';
import { endNode, llmNode, startNode, workflowDsl } from '../helpers/workflow-dsl.js';
import { RunStore } from '../../src/runs/run-store.js';
import { openStore } from '../../src/store/db.js';
import { newId } from '../../src/infra/ids.js';

/**
 * Inline runs (a workflow tool's run inside its caller's execution, or any run of a process without
 * a job worker) have no queue job that another worker could take over: when their process dies they
 * are ended by the sweep, with a message that says why, while their caller's run is continued
 * elsewhere and runs its tool again.
 */

/** The model streams one character every 10 ms for 3 s: long enough to kill the process mid-call. */
const REPLY = 'w'.repeat(300);
let fake: FakeOpenAI;
beforeAll(async () => {
  fake = await startFakeOpenAI({ reply: REPLY, chunkSize: 1, delayMs: 10 });
});
afterAll(async () => fake?.close());

const CHILD = workflowDsl([startNode(), llmNode('llm', 'go'), endNode({ a: ['llm', 'text'] })], [['start', 'llm'], ['llm', 'end']], { name: 'slow child' });
const TOOL_PROVIDER = '5f0d8a3e-0000-4000-8000-000000000001';
const PARENT = workflowDsl(
  [
    startNode(),
    { id: 'wt', type: 'tool', title: 'Child', provider_id: TOOL_PROVIDER, provider_name: 'child', provider_type: 'workflow', tool_name: 'child', tool_configurations: {}, tool_parameters: {} },
    endNode({ json: ['wt', 'json'] }),
  ],
  [['start', 'wt'], ['wt', 'end']],
  { name: 'parent' },
);

const headers = (key: string) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' });

async function until<T>(read: () => Promise<T>, ok: (v: T) => boolean, ms = 60_000): Promise<T> {
  const deadline = Date.now() + ms;
  let v = await read();
  while (!ok(v) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
    v = await read();
  }
  return v;
}

describe('inline runs whose process died', () => {
  it('the sweep fails a silent inline run with a message and a finished frame; a live one and a queued one waiting for its job are left alone', { timeout: 60_000 }, async () => {
    const s = await startServer({ env: { RUN_LEASE_SECONDS: '1' } });
    try {
      const { appId } = await s.importApp(CHILD);
      const db = s.runtime.store.db;
      const runs = new RunStore(db);
      const now = Date.now();
      const row = (heartbeatAt: number, epoch: number) => ({
        id: newId(),
        app_id: appId,
        app_version: 1,
        task_id: newId(),
        mode: 'workflow',
        end_user_id: newId(),
        conversation_id: null,
        message_id: null,
        inputs: '{}',
        heartbeat_at: heartbeatAt,
        created_at: now - 60_000,
        owner_epoch: epoch,
      });
      const dead = row(now - 60_000, 1);
      const live = row(now + 600_000, 1); // its process keeps beating (here: far ahead)
      const waiting = row(now - 60_000, 2); // a queued run resumed, its job not claimed yet
      await runs.insert(dead, db, { inline: true });
      await runs.insert(live, db, { inline: true });
      await runs.insert(waiting, db);
      // the repeatable sweep job ends it within a few ticks (every half lease)
      const ended = await until(() => runs.find(dead.id), (r) => r?.status !== 'running', 20_000);
      expect(ended).toMatchObject({ status: 'failed' });
      expect(ended!.error).toMatch(/process that ran this run stopped.*cannot be continued elsewhere/);
      const log = await db.selectFrom('workflow_run_events').select(['event', 'payload']).where('run_id', '=', dead.id).execute();
      expect(log.map((e) => e.event)).toEqual(['workflow_finished']);
      expect(JSON.parse(log[0]!.payload)).toMatchObject({ data: { status: 'failed' } });
      // two more sweeps
      await new Promise((r) => setTimeout(r, 1_200));
      expect((await runs.find(live.id))?.status).toBe('running');
      expect((await runs.find(waiting.id))?.status).toBe('running');
      expect(await s.runtime.runs.sweepInline()).toBe(0);
    } finally {
      await s.close();
    }
  });

  it('a live inline run silent for longer than two leases (a slow model between tokens) is kept alive by its process and ends as it should', { timeout: 60_000 }, async () => {
    // two tokens 3.5 s apart, then 3.5 s more: each gap is longer than the sweep's two leases (2 s)
    const slow = await startFakeOpenAI({ reply: 'ab', chunkSize: 1, delayMs: 3_500 });
    const s = await startServer({ env: { RUN_LEASE_SECONDS: '1' }, runtime: { providers: openAiCompatibleProviders(slow.baseUrl) } });
    try {
      const child = await s.importApp(CHILD);
      const parentApp = await s.runtime.apps.importDsl(PARENT, { tools: new Map([[TOOL_PROVIDER, child.appId]]) });
      const { apiKey } = await s.runtime.keys.create('app', parentApp.workspaceId, parentApp.id);
      const r = await fetch(`${s.api}/workflows/run`, { method: 'POST', headers: headers(apiKey), body: JSON.stringify({ inputs: {}, response_mode: 'blocking', user: 'u' }) });
      expect((await r.json()).data).toMatchObject({ status: 'succeeded', outputs: { json: [{ a: 'ab' }] } });
      const childRuns = await s.runtime.store.db.selectFrom('workflow_runs').select(['status', 'error']).where('app_id', '=', child.appId).execute();
      expect(childRuns).toEqual([{ status: 'succeeded', error: null }]);
    } finally {
      await s.close();
      await slow.close();
    }
  });

  it('kill -9 during a workflow tool call: the caller continues on the next server and calls the tool again; the orphaned tool run is failed, not left running', { timeout: 120_000 }, async () => {
    const env = { RUN_LEASE_SECONDS: '1' };
    const first = await startServer({ env });
    const child = await first.importApp(CHILD);
    const parentApp = await first.runtime.apps.importDsl(PARENT, { tools: new Map([[TOOL_PROVIDER, child.appId]]) });
    const { apiKey } = await first.runtime.keys.create('app', parentApp.workspaceId, parentApp.id);
    await first.stop();
    const a = await spawnServer(first, {
      ...env,
      ...openAiCompatibleEnv(fake.baseUrl),
      ...(first.config.redisUrl ? { REDIS_URL: first.config.redisUrl, REDIS_KEY_PREFIX: first.config.redisKeyPrefix, QUEUE: first.config.queue.runner } : {}),
    });
    // the database as another process sees it (the first server is stopped)
    const watch = await openStore({ databaseUrl: first.config.databaseUrl, databaseSchema: first.config.databaseSchema, dataDir: first.dataDir });
    let second: TestServer | undefined;
    try {
      const db = watch.db;
      const started = await fetch(`${a.url}/v1/workflows/run`, { method: 'POST', headers: headers(apiKey), body: JSON.stringify({ inputs: {}, response_mode: 'streaming', user: 'u' }) });
      expect(started.status).toBe(200);
      // the tool's run has started and its model is streaming
      const childRuns = () => db.selectFrom('workflow_runs').select(['id', 'status', 'error', 'owner_job']).where('app_id', '=', child.appId).execute();
      const inFlight = await until(childRuns, (rs) => rs.length === 1 && rs[0]!.status === 'running' && fake.requests.length > 0, 60_000);
      expect(inFlight).toHaveLength(1);
      expect(inFlight[0]!.owner_job).toBe('inline');
      await new Promise((r) => setTimeout(r, 300));
      a.child.kill('SIGKILL');
      await a.exit;

      second = await restartServer(first, { env, runtime: { providers: openAiCompatibleProviders(fake.baseUrl) } });
      const parentRuns = () => db.selectFrom('workflow_runs').select(['status']).where('app_id', '=', parentApp.id).execute();
      expect((await until(parentRuns, (rs) => rs[0]?.status !== 'running', 90_000))[0]!.status).toBe('succeeded');
      const after = await until(childRuns, (rs) => rs.every((r) => r.status !== 'running'), 30_000);
      const orphan = after.find((r) => r.id === inFlight[0]!.id)!;
      expect(orphan.status).toBe('failed');
      expect(orphan.error).toMatch(/cannot be continued elsewhere/);
      // the caller's tool node ran again: a second run of the tool's app, which succeeded
      expect(after.filter((r) => r.id !== orphan.id).map((r) => r.status)).toEqual(['succeeded']);
    } finally {
      if (a.child.exitCode === null && a.child.signalCode === null) a.child.kill('SIGKILL');
      await watch.destroy();
      if (second) await second.close();
      else await first.close();
    }
  });
});
