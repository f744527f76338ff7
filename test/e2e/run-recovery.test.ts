import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { restartServer, startServer, type TestServer } from '../helpers/server.js';
import { spawnServer, type ServerProcess } from '../helpers/server-process.js';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { openAiCompatibleEnv, openAiCompatibleProviders } from '../helpers/openai-providers.js';
import { readSse } from '../helpers/sse.js';
import { endNode, llmNode, startNode, templateNode, workflowDsl } from '../helpers/workflow-dsl.js';

/**
 * The model streams one character every 10 ms for 3 s: long enough to kill, stop or fence a run in
 * the middle of it on a loaded machine, short enough that each run's log (one text_chunk per
 * character) stays small.
 */
const REPLY = 'w'.repeat(300);
let fake: FakeOpenAI;
beforeAll(async () => {
  fake = await startFakeOpenAI({ reply: REPLY, chunkSize: 1, delayMs: 10 });
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

/** A server in its own process on the database of `base` (and its queue: one deployment), its model at `fakeUrl`. */
function spawnOn(base: TestServer, env: Record<string, string>, fakeUrl = fake.baseUrl): Promise<ServerProcess> {
  return spawnServer(base, {
    ...env,
    ...openAiCompatibleEnv(fakeUrl),
    // the same queue as the base server (BullMQ under TEST_QUEUE=bullmq)
    ...(base.config.redisUrl ? { REDIS_URL: base.config.redisUrl, REDIS_KEY_PREFIX: base.config.redisKeyPrefix, QUEUE: base.config.queue.runner } : {}),
  });
}

type Frame = Record<string, unknown> & { event: string };

/** Reads a stream's data frames until `stop` says so (or the stream ends). */
async function readFrames(r: Response, stop: (frames: Frame[]) => boolean = () => false): Promise<Frame[]> {
  const frames: Frame[] = [];
  for await (const f of readSse(r)) {
    if (f.kind !== 'data') continue;
    frames.push(f.data as Frame);
    if (stop(frames)) break;
  }
  return frames;
}

/** The run's log as stored: each seq once, from 1 without gaps, one start, one end. */
async function expectCleanLog(db: TestServer['runtime']['store']['db'], runId: string): Promise<{ event: string; payload: string }[]> {
  const log = await db.selectFrom('workflow_run_events').select(['seq', 'event', 'payload']).where('run_id', '=', runId).orderBy('seq').execute();
  expect(log.map((e) => Number(e.seq))).toEqual(log.map((_e, i) => i + 1));
  expect(log.filter((e) => e.event === 'workflow_started')).toHaveLength(1);
  expect(log.filter((e) => e.event === 'workflow_finished')).toHaveLength(1);
  expect(log.at(-1)!.event).toBe('workflow_finished');
  const finishedNodes = log.filter((e) => e.event === 'node_finished').map((e) => (JSON.parse(e.payload) as { data: { node_id: string } }).data.node_id);
  expect(new Set(finishedNodes).size).toBe(finishedNodes.length);
  return log;
}

describe('a process that dies mid-run', () => {
  // two server processes (the child compiles its TypeScript at start): slow on a loaded machine
  it('kill -9 mid-run: the next server continues the run from its snapshot; the log holds each event once and a reconnected client reads on', { timeout: 120_000 }, async () => {
    const env = { RUN_LEASE_SECONDS: '1' };
    const first = await startServer({ env });
    const { apiKey } = await first.importApp(slow);
    await first.stop();
    const a = await spawnOn(first, env);
    const r = await fetch(`${a.url}/v1/workflows/run`, { method: 'POST', headers: headers(apiKey), body: JSON.stringify({ inputs: {}, response_mode: 'streaming', user: 'u' }) });
    // mid-run: the start node is done, the model is streaming
    const seen = await readFrames(r, (fs) => fs.filter((f) => f.event === 'text_chunk').length >= 3);
    const runId = String(seen[0]!.workflow_run_id);
    expect(seen.map((f) => f.event).slice(0, 4)).toEqual(['workflow_started', 'node_started', 'node_finished', 'node_started']);
    a.child.kill('SIGKILL');
    await a.exit;

    const second = await restartServer(first, { env, runtime: { providers: openAiCompatibleProviders(fake.baseUrl) } });
    try {
      // the client reconnects; its cursor is the number of frames it has (the log's seq is contiguous from 1)
      const res = await fetch(`${second.api}/workflow/${runId}/events?user=u&include_state_snapshot=true`, { headers: headers(apiKey) });
      const replay = await readFrames(res);
      expect(replay.slice(0, seen.length)).toEqual(seen);
      const rest = replay.slice(seen.length);
      expect(rest.some((f) => f.event === 'workflow_started')).toBe(false);
      expect(rest.at(-1)).toMatchObject({ event: 'workflow_finished', data: { status: 'succeeded', outputs: { a: REPLY } } });
      // the node in flight ran again; the nodes before it did not
      expect(rest.filter((f) => f.event === 'node_started').map((f) => (f.data as { node_id: string }).node_id)).toEqual(['llm', 'after', 'end']);
      const body = await waitStatus(second, apiKey, runId, 'succeeded');
      expect(body).toMatchObject({ status: 'succeeded', total_steps: 4 });
      expect(Number(body.elapsed_time)).toBeGreaterThan(0);
      await expectCleanLog(second.runtime.store.db, runId);
    } finally {
      await second.close();
    }
  });
});

describe('split brain', () => {
  // PostgreSQL only: two server processes on one database (SQLite is one process's file)
  it.runIf(Boolean(process.env.TEST_DATABASE_URL))(
    'an owner stopped (SIGSTOP) past its lease is taken over; when it continues it is fenced out: one workflow_finished, no lost or duplicate seq, the status stays',
    { timeout: 120_000 },
    async () => {
      // the model answers after 8 s: the owner is stopped while it waits (not inside a write)
      const slowFake = await startFakeOpenAI({ reply: 'late answer', chunkSize: 100, delayMs: 8000 });
      const env = { RUN_LEASE_SECONDS: '1', QUEUE_POLL_MS: '100', CHILD_LOG_LEVEL: 'info' };
      const first = await startServer({ env });
      const { apiKey } = await first.importApp(slow);
      await first.stop();
      const servers = [await spawnOn(first, env, slowFake.baseUrl), await spawnOn(first, env, slowFake.baseUrl)];
      let inspector: TestServer | undefined;
      try {
        const r = await fetch(`${servers[0]!.url}/v1/workflows/run`, { method: 'POST', headers: headers(apiKey), body: JSON.stringify({ inputs: {}, response_mode: 'streaming', user: 'u' }) });
        const seen = await readFrames(r, (fs) => fs.some((f) => f.event === 'node_started' && (f.data as { node_id: string }).node_id === 'llm'));
        const runId = String(seen[0]!.workflow_run_id);
        const executing = new RegExp(`"runId":"${runId}"[^\\n]*executing run`);
        const owner = await vi.waitFor(() => {
          const found = servers.find((s) => executing.test(s.output()));
          expect(found).toBeDefined();
          return found!;
        });
        const other = servers.find((s) => s !== owner)!;
        owner.child.kill('SIGSTOP');
        // the other server takes the run over once the lease has run out, and finishes it
        await vi.waitFor(
          async () => {
            const body = (await (await fetch(`${other.url}/v1/workflows/run/${runId}`, { headers: headers(apiKey) })).json()) as Record<string, unknown>;
            expect(body).toMatchObject({ status: 'succeeded', outputs: { a: 'late answer' } });
          },
          { timeout: 60_000, interval: 200 },
        );
        expect(other.output()).toMatch(executing);
        owner.child.kill('SIGCONT');
        // the stalled owner wakes up and stops without writing: its next flush finds another epoch,
        // or (stalled inside a flush) the database had ended its session and the write fails
        await vi.waitFor(() => expect(owner.output()).toMatch(/another worker took the run over|its execution stops here/), { timeout: 30_000, interval: 100 });
        inspector = await startServer({ env: { QUEUE_WORKER: 'false' }, reuse: { dataDir: first.dataDir, schema: first.config.databaseSchema } });
        const log = await expectCleanLog(inspector.runtime.store.db, runId);
        const finished = JSON.parse(log.at(-1)!.payload) as { data: { status: string } };
        expect(finished.data.status).toBe('succeeded');
        const row = (await inspector.runtime.runs.find(runId))!;
        expect(row.status).toBe('succeeded');
        expect(Number(row.last_seq)).toBe(log.length);
        expect(Number(row.owner_epoch)).toBe(2);
      } finally {
        for (const s of servers) {
          s.child.kill('SIGCONT');
          s.child.kill('SIGKILL');
          await s.exit;
        }
        await inspector?.close();
        await slowFake.close();
      }
    },
  );
});

const formThenSlow = workflowDsl(
  [
    startNode(),
    {
      id: 'review',
      type: 'human-input',
      delivery_methods: [{ type: 'webapp', enabled: true, config: {} }],
      form_content: 'Decide {{#$output.note#}}',
      inputs: [{ type: 'paragraph', output_variable_name: 'note' }],
      user_actions: [{ id: 'ok', title: 'OK', button_style: 'primary' }],
      timeout: 1,
      timeout_unit: 'day',
    },
    llmNode('llm', 'go'),
    endNode({ note: ['review', 'note'], a: ['llm', 'text'] }),
  ],
  [['start', 'review'], ['review', 'llm', 'ok'], ['llm', 'end']],
);

describe('a form decision survives a crash', () => {
  it('submitted while no worker runs, then the worker of the resumed run is killed: the run continues with the submitted values', { timeout: 120_000 }, async () => {
    const env = { RUN_LEASE_SECONDS: '1' };
    const first = await startServer({ env, runtime: { providers: openAiCompatibleProviders(fake.baseUrl) } });
    const { apiKey } = await first.importApp(formThenSlow);
    const paused = await readFrames(await fetch(`${first.api}/workflows/run`, { method: 'POST', headers: headers(apiKey), body: JSON.stringify({ inputs: {}, response_mode: 'streaming', user: 'u' }) }));
    expect(paused.at(-1)!.event).toBe('workflow_paused');
    const runId = String(paused[0]!.workflow_run_id);
    const token = String((paused.find((f) => f.event === 'human_input_required')!.data as { form_token: string }).form_token);
    await first.stop();

    // 1. a server without a worker takes the submission: the decision and the run's resume are stored together
    const api = await startServer({ env: { ...env, QUEUE_WORKER: 'false' }, reuse: { dataDir: first.dataDir, schema: first.config.databaseSchema } });
    const submit = await fetch(`${api.api}/form/human_input/${token}`, { method: 'POST', headers: headers(apiKey), body: JSON.stringify({ inputs: { note: 'keep me' }, action: 'ok', user: 'u' }) });
    expect(submit.status).toBe(200);
    expect((await api.runtime.runs.find(runId))!.status).toBe('running');
    const queued = await api.runtime.store.db.selectFrom('jobs').select(['payload', 'status']).where('kind', '=', 'run.execute').where('status', '=', 'queued').execute();
    expect(queued.map((j) => JSON.parse(j.payload) as unknown)).toEqual([{ runId }]);
    await api.stop();

    // 2. a worker resumes the run and is killed in the middle of it
    const a = await spawnOn(first, env);
    const reopened = await fetch(`${a.url}/v1/workflow/${runId}/events?user=u`, { headers: headers(apiKey) });
    const resumed = await readFrames(reopened, (fs) => fs.filter((f) => f.event === 'text_chunk').length >= 3);
    expect(resumed.find((f) => f.event === 'human_input_form_filled')).toMatchObject({ data: { action_id: 'ok', submitted_data: { note: 'keep me' } } });
    a.child.kill('SIGKILL');
    await a.exit;

    // 3. the next server continues the resumed run from its snapshot: the decision was not used up
    const next = await startServer({ env, reuse: { dataDir: first.dataDir, schema: first.config.databaseSchema }, runtime: { providers: openAiCompatibleProviders(fake.baseUrl) } });
    try {
      await vi.waitFor(
        async () => {
          const body = (await (await fetch(`${next.api}/workflows/run/${runId}`, { headers: headers(apiKey) })).json()) as Record<string, unknown>;
          expect(body).toMatchObject({ status: 'succeeded', outputs: { note: 'keep me', a: REPLY } });
        },
        { timeout: 60_000, interval: 200 },
      );
      const log = await next.runtime.store.db.selectFrom('workflow_run_events').select(['seq', 'event']).where('run_id', '=', runId).orderBy('seq').execute();
      expect(log.map((e) => Number(e.seq))).toEqual(log.map((_e, i) => i + 1));
      expect(log.filter((e) => e.event === 'workflow_started')).toHaveLength(2); // the start and the resumption after the form
      expect(log.filter((e) => e.event === 'human_input_form_filled')).toHaveLength(1);
      expect(log.filter((e) => e.event === 'workflow_finished')).toHaveLength(1);
    } finally {
      await next.close();
    }
  });
});

describe('fencing', () => {
  it('an owner whose epoch was taken stops at once without writing; its job is retried and the run continues from its snapshot', { timeout: 60_000 }, async () => {
    const s = await startServer({ env: { QUEUE_RETRY_DELAY_MS: '50' }, runtime: { providers: openAiCompatibleProviders(fake.baseUrl) } });
    try {
      const { apiKey } = await s.importApp(slow);
      const r = await fetch(`${s.api}/workflows/run`, { method: 'POST', headers: headers(apiKey), body: JSON.stringify({ inputs: {}, response_mode: 'streaming', user: 'u' }) });
      const frames: Frame[] = [];
      let fenced = false;
      const db = s.runtime.store.db;
      for await (const f of readSse(r)) {
        if (f.kind !== 'data') continue;
        frames.push(f.data as Frame);
        if (!fenced && f.data.event === 'text_chunk') {
          fenced = true;
          // what a claim by another worker does to the row: the running owner's epoch is stale now
          await db.updateTable('workflow_runs').set((eb) => ({ owner_epoch: eb('owner_epoch', '+', 1) })).where('id', '=', String(f.data.workflow_run_id)).execute();
        }
        if (f.data.event === 'workflow_finished') break;
      }
      const runId = String(frames[0]!.workflow_run_id);
      expect(frames.at(-1)).toMatchObject({ event: 'workflow_finished', data: { status: 'succeeded', total_steps: 4 } });
      const log = await expectCleanLog(db, runId);
      expect(log.map((e) => e.event)).toEqual(frames.map((f) => f.event));
      const row = (await s.runtime.runs.find(runId))!;
      // the fenced execution (epoch 1), the manual bump (2), the retried job's claim (3)
      expect(Number(row.owner_epoch)).toBe(3);
      const job = await db.selectFrom('jobs').select(['status', 'attempts']).where('kind', '=', 'run.execute').where('payload', '=', JSON.stringify({ runId })).executeTakeFirstOrThrow();
      expect(job).toMatchObject({ status: 'done', attempts: 2 });
    } finally {
      await s.close();
    }
  });
});

describe('two servers on one database', () => {
  it('a stop sent to another instance reaches the run through the durable stop flag', async () => {
    const env = { ...(process.env.TEST_REDIS_URL ? { REDIS_URL: process.env.TEST_REDIS_URL } : {}) };
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
