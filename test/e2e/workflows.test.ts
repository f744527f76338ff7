import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.js';
import { example } from '../helpers/fixtures.js';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { openAiCompatibleProviders } from '../helpers/openai-providers.js';
import { dataFrames, parseSse, readSse, type SseFrame } from '../helpers/sse.js';
import { endNode, llmNode, startNode, templateNode, workflowDsl } from '../helpers/workflow-dsl.js';

let s: TestServer;
let fake: FakeOpenAI;

beforeAll(async () => {
  fake = await startFakeOpenAI();
  s = await startServer({ runtime: { providers: openAiCompatibleProviders(fake.baseUrl) }, env: { WORKFLOW_MAX_EXECUTION_STEPS: '50' } });
});
afterAll(async () => {
  await s?.close();
  await fake?.close();
});
beforeEach(() => {
  fake.behaviour = {};
});

const headers = (key: string) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' });

async function run(key: string, inputs: Record<string, unknown>, mode: 'blocking' | 'streaming' = 'blocking', user = 'alice') {
  return fetch(`${s.api}/workflows/run`, { method: 'POST', headers: headers(key), body: JSON.stringify({ inputs, response_mode: mode, user }) });
}

async function streamEvents(key: string, inputs: Record<string, unknown>) {
  const r = await run(key, inputs, 'streaming');
  expect(r.status).toBe(200);
  expect(r.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
  const frames = parseSse(await r.text());
  return { frames, events: dataFrames(frames) };
}

const names = (events: Record<string, unknown>[]) => events.map((e) => e.event);

describe('branching example (if-else, template-transform, variable-aggregator)', () => {
  let key: string;
  beforeAll(async () => {
    ({ apiKey: key } = await s.importApp(example('workflow-branching.yml')));
  });

  it('blocking: takes the case that holds and returns the End outputs', async () => {
    const r = await run(key, { name: 'ada lovelace', tone: 'formal' });
    expect(r.status).toBe(200);
    const body = await r.json();
    expect(Object.keys(body)).toEqual(['task_id', 'workflow_run_id', 'data']);
    expect(body.data).toMatchObject({
      id: body.workflow_run_id,
      status: 'succeeded',
      outputs: { greeting: 'Good day, Ada Lovelace.', signature: '-- Dovetail' },
      error: null,
      total_tokens: 0,
      total_steps: 5,
    });
    expect(typeof body.data.elapsed_time).toBe('number');
    expect(body.data.finished_at).toBeGreaterThanOrEqual(body.data.created_at);
  });

  it('blocking: the else branch runs a Jinja conditional', async () => {
    const body = await (await run(key, { name: 'Grace', tone: 'casual' })).json();
    expect(body.data.outputs.greeting).toBe('Hey Grace!');
    const long = await (await run(key, { name: 'Margaret', tone: 'casual' })).json();
    expect(long.data.outputs.greeting).toBe('Hey Margaret! Long name!');
  });

  it('streaming: exact framing, event order and every documented field', async () => {
    const r = await run(key, { name: 'Ada', tone: 'formal' }, 'streaming');
    const text = await r.text();
    const frames = parseSse(text);
    expect(frames[0]).toEqual({ kind: 'event', event: 'ping', raw: 'event: ping' });
    const events = dataFrames(frames);
    expect(names(events)).toEqual([
      'workflow_started',
      'node_started', 'node_finished', // start
      'node_started', 'node_finished', // if-else
      'node_started', 'node_finished', // formal
      'node_started', 'node_finished', // join
      'node_started', 'node_finished', // end
      'workflow_finished',
    ]);
    for (const e of events) expect(Object.keys(e).slice(0, 3)).toEqual(['event', 'workflow_run_id', 'task_id']);
    expect(Object.keys(events[0]!.data as object)).toEqual(['id', 'workflow_id', 'inputs', 'created_at', 'reason']);
    expect((events[0]!.data as Record<string, unknown>).reason).toBe('initial');
    const started = events[3]!.data as Record<string, unknown>;
    expect(Object.keys(started)).toEqual([
      'id', 'node_id', 'node_type', 'title', 'index', 'predecessor_node_id', 'inputs', 'inputs_truncated', 'created_at', 'extras', 'iteration_id', 'loop_id',
    ]);
    expect(started).toMatchObject({ node_id: 'branch', node_type: 'if-else', title: 'Formal?', index: 2, predecessor_node_id: 'start' });
    const finished = events[4]!.data as Record<string, unknown>;
    for (const k of ['process_data', 'outputs', 'status', 'error', 'elapsed_time', 'execution_metadata', 'finished_at', 'files']) expect(finished).toHaveProperty(k);
    expect(finished).toMatchObject({ id: started.id, status: 'succeeded', outputs: { result: true, selected_case_id: 'true' } });
    const wf = events.at(-1)!.data as Record<string, unknown>;
    expect(Object.keys(wf)).toEqual([
      'id', 'workflow_id', 'status', 'outputs', 'error', 'elapsed_time', 'total_tokens', 'total_steps', 'created_by', 'created_at', 'finished_at', 'exceptions_count', 'files',
    ]);
    expect(wf).toMatchObject({ status: 'succeeded', outputs: { greeting: 'Good day, Ada.' }, created_by: { user: 'alice' }, exceptions_count: 0 });
    // the casual branch never started
    expect(events.some((e) => (e.data as Record<string, unknown>)?.node_id === 'casual')).toBe(false);
  });

  it('GET /workflows/run/{id}: inputs as the stored JSON string; unknown id is 404', async () => {
    const body = await (await run(key, { name: 'Ada', tone: 'formal' })).json();
    const r = await fetch(`${s.api}/workflows/run/${body.workflow_run_id}`, { headers: headers(key) });
    expect(r.status).toBe(200);
    const detail = await r.json();
    expect(Object.keys(detail)).toEqual(['id', 'workflow_id', 'status', 'inputs', 'outputs', 'error', 'total_steps', 'total_tokens', 'created_at', 'finished_at', 'elapsed_time']);
    expect(JSON.parse(detail.inputs)).toEqual({ name: 'Ada', tone: 'formal' });
    expect(detail.outputs.greeting).toBe('Good day, Ada.');
    const missing = await fetch(`${s.api}/workflows/run/00000000-0000-0000-0000-000000000000`, { headers: headers(key) });
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({ code: 'not_found', message: 'Workflow run not found.', status: 404 });
  });

  it('input validation as completion: a missing required input is 400 naming it', async () => {
    const r = await run(key, { tone: 'formal' });
    expect(r.status).toBe(400);
    expect(await r.json()).toEqual({ code: 'invalid_param', message: 'name is required in input form', status: 400 });
    const bad = await run(key, { name: 'x', tone: 'rude' });
    expect((await bad.json()).message).toBe("tone in input form must be one of the following: ['formal', 'casual']");
  });

  it('missing user and missing inputs are 400s naming the field', async () => {
    const r = await fetch(`${s.api}/workflows/run`, { method: 'POST', headers: headers(key), body: JSON.stringify({ inputs: {} }) });
    expect(r.status).toBe(400);
    expect((await r.json()).message).toBe('Arg user must be provided.');
    const r2 = await fetch(`${s.api}/workflows/run`, { method: 'POST', headers: headers(key), body: JSON.stringify({ user: 'u' }) });
    expect(r2.status).toBe(400);
    expect((await r2.json()).message).toBe('inputs is required');
  });
});

describe('mode and import checks', () => {
  it('a completion app on /workflows/run is 400 not_workflow_app', async () => {
    const { apiKey } = await s.importApp(example('completion-writer.yml'));
    const r = await run(apiKey, {});
    expect(r.status).toBe(400);
    expect((await r.json()).code).toBe('not_workflow_app');
    const stop = await fetch(`${s.api}/workflows/tasks/x/stop`, { method: 'POST', headers: headers(apiKey), body: JSON.stringify({ user: 'u' }) });
    expect((await stop.json()).code).toBe('not_workflow_app');
  });

  it('an unsupported node type is refused at import, naming the node id and type', async () => {
    const yaml = workflowDsl([startNode(), { id: 'ds1', type: 'email-sender' }, endNode({})], [['start', 'ds1'], ['ds1', 'end']]);
    await expect(s.importApp(yaml)).rejects.toThrow(/node ds1 has type "email-sender"/);
  });

  it('a node unreachable from start and a bad template are import errors', async () => {
    await expect(s.importApp(workflowDsl([startNode(), endNode({}), endNode({}, 'end2')], [['start', 'end']]))).rejects.toThrow(/end2 .*not reachable/);
    await expect(s.importApp(workflowDsl([startNode(), templateNode('t', '{% if %}'), endNode({})], [['start', 't'], ['t', 'end']]))).rejects.toThrow(/node t \(template-transform\): template is not valid Jinja/);
  });

  it('without a Human Input gateway a human-input node fails the run with a clear error', async () => {
    const { apiKey } = await s.importApp(example('workflow-approval.yml'));
    const gateway = s.runtime.humanInput;
    s.runtime.humanInput = undefined;
    try {
      const body = await (await run(apiKey, { draft: 'x' })).json();
      expect(body.data.status).toBe('failed');
      expect(body.data.error).toMatch(/Human Input forms are not available/);
    } finally {
      s.runtime.humanInput = gateway;
    }
  });

  it('stop of an unknown task is 200 success with no effect', async () => {
    const { apiKey } = await s.importApp(example('workflow-branching.yml'));
    const r = await fetch(`${s.api}/workflows/tasks/nope/stop`, { method: 'POST', headers: headers(apiKey), body: JSON.stringify({ user: 'bob' }) });
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({ result: 'success' });
  });
});

describe('parallel branches and joins', () => {
  it('fan-out runs every branch once and the join waits for all of them', async () => {
    const yaml = workflowDsl(
      [startNode([{ variable: 'x' }]), templateNode('a', 'A{{ x }}', { x: ['start', 'x'] }), templateNode('b', 'B{{ x }}', { x: ['start', 'x'] }), templateNode('c', '{{ a }}+{{ b }}', { a: ['a', 'output'], b: ['b', 'output'] }), endNode({ out: ['c', 'output'] })],
      [['start', 'a'], ['start', 'b'], ['a', 'c'], ['b', 'c'], ['c', 'end']],
    );
    const { apiKey } = await s.importApp(yaml);
    const { events } = await streamEvents(apiKey, { x: '1' });
    const started = events.filter((e) => e.event === 'node_started').map((e) => (e.data as { node_id: string }).node_id);
    expect(started.sort()).toEqual(['a', 'b', 'c', 'end', 'start']);
    expect((events.at(-1)!.data as Record<string, unknown>).outputs).toEqual({ out: 'A1+B1' });
  });

  it('a skipped branch propagates to its subtree but not past a join with a taken edge', async () => {
    const yaml = workflowDsl(
      [
        startNode([{ variable: 'q' }]),
        { id: 'if', type: 'if-else', cases: [{ case_id: 'yes', logical_operator: 'or', conditions: [{ variable_selector: ['start', 'q'], comparison_operator: 'start with', value: 'y' }, { variable_selector: ['start', 'q'], comparison_operator: '=', value: '1' }] }] },
        templateNode('t1', 'yes'),
        templateNode('t1b', 'after {{ v }}', { v: ['t1', 'output'] }),
        templateNode('t2', 'no'),
        { id: 'agg', type: 'variable-aggregator', variables: [['t1b', 'output'], ['t2', 'output']] },
        endNode({ out: ['agg', 'output'], skipped: ['t1', 'output'] }),
      ],
      [['start', 'if'], ['if', 't1', 'yes'], ['t1', 't1b'], ['if', 't2', 'false'], ['t1b', 'agg'], ['t2', 'agg'], ['agg', 'end']],
    );
    const { apiKey } = await s.importApp(yaml);
    const yes = await (await run(apiKey, { q: 'yes' })).json();
    expect(yes.data.outputs).toEqual({ out: 'after yes', skipped: 'yes' });
    const one = await (await run(apiKey, { q: '1' })).json();
    expect(one.data.outputs.out).toBe('after yes');
    const no = await (await run(apiKey, { q: 'nope' })).json();
    expect(no.data.outputs).toEqual({ out: 'no', skipped: null });
    expect(no.data.total_steps).toBe(5);
  });

  it('the step limit fails the run with a message naming the limit', async () => {
    const nodes = [startNode()];
    const edges: [string, string][] = [];
    let prev = 'start';
    for (let i = 0; i < 60; i++) {
      nodes.push(templateNode(`t${i}`, `${i}`));
      edges.push([prev, `t${i}`]);
      prev = `t${i}`;
    }
    nodes.push(endNode({}));
    edges.push([prev, 'end']);
    const { apiKey } = await s.importApp(workflowDsl(nodes, edges));
    const body = await (await run(apiKey, {})).json();
    expect(body.data.status).toBe('failed');
    expect(body.data.error).toBe('Max steps 50 reached.');
    expect(body.data.total_steps).toBe(50);
  });
});

describe('llm node against an OpenAI-compatible upstream', () => {
  it('streams text_chunk events and returns the text and usage', async () => {
    fake.behaviour = { reply: 'hello there, friend', chunkSize: 5 };
    const { apiKey } = await s.importApp(workflowDsl([startNode([{ variable: 'q' }]), llmNode('llm', 'Say: {{#start.q#}}'), endNode({ answer: ['llm', 'text'] })], [['start', 'llm'], ['llm', 'end']]));
    const { events } = await streamEvents(apiKey, { q: 'hi' });
    const chunks = events.filter((e) => e.event === 'text_chunk');
    expect(chunks.map((c) => (c.data as { text: string }).text).join('')).toBe('hello there, friend');
    expect((chunks[0]!.data as Record<string, unknown>).from_variable_selector).toEqual(['llm', 'text']);
    const sent = fake.requests.at(-1)!.body.messages as { role: string; content: string }[];
    expect(sent).toEqual([{ role: 'user', content: 'Say: hi' }]);
    const finished = events.find((e) => e.event === 'node_finished' && (e.data as { node_id: string }).node_id === 'llm')!.data as Record<string, unknown>;
    expect((finished.execution_metadata as Record<string, unknown>).total_tokens).toBeGreaterThan(0);
    const wf = events.at(-1)!.data as Record<string, unknown>;
    expect(wf.outputs).toEqual({ answer: 'hello there, friend' });
    expect(wf.total_tokens).toBeGreaterThan(0);
  });

  it('retry_config retries a failing call with node_retry, then fails the run', async () => {
    fake.behaviour = { failStatus: 500, failMessage: 'boom' };
    const { apiKey } = await s.importApp(
      workflowDsl([startNode(), llmNode('llm', 'x', { retry_config: { retry_enabled: true, max_retries: 2, retry_interval: 1 } }), endNode({ a: ['llm', 'text'] })], [['start', 'llm'], ['llm', 'end']]),
    );
    const { events } = await streamEvents(apiKey, {});
    const retries = events.filter((e) => e.event === 'node_retry');
    expect(retries.map((e) => (e.data as { retry_index: number }).retry_index)).toEqual([0, 1]);
    expect(events.filter((e) => e.event === 'node_started' && (e.data as { node_id: string }).node_id === 'llm')).toHaveLength(1);
    const wf = events.at(-1)!;
    expect(wf.event).toBe('workflow_finished');
    expect(wf.data).toMatchObject({ status: 'failed', outputs: null });
    expect((wf.data as { error: string }).error).toMatch(/boom/);
    expect(events.some((e) => e.event === 'error')).toBe(false);
    expect(events.some((e) => (e.data as { node_id?: string })?.node_id === 'end')).toBe(false);
  });

  it('fail-branch follows the fail edge; default-value uses defaults; both end partial-succeeded', async () => {
    fake.behaviour = { failStatus: 500 };
    const fb = await s.importApp(
      workflowDsl(
        [startNode(), llmNode('llm', 'x', { error_strategy: 'fail-branch' }), templateNode('ok', 'ok'), templateNode('bad', 'handled: {{ e }}', { e: ['llm', 'error_type'] }), { id: 'agg', type: 'variable-aggregator', variables: [['ok', 'output'], ['bad', 'output']] }, endNode({ r: ['agg', 'output'] })],
        [['start', 'llm'], ['llm', 'ok', 'success-branch'], ['llm', 'bad', 'fail-branch'], ['ok', 'agg'], ['bad', 'agg'], ['agg', 'end']],
      ),
    );
    const a = await (await run(fb.apiKey, {})).json();
    expect(a.data.status).toBe('partial-succeeded');
    expect(a.data.outputs).toEqual({ r: 'handled: LLMInvokeError' });
    const dv = await s.importApp(
      workflowDsl([startNode(), llmNode('llm', 'x', { error_strategy: 'default-value', default_value: [{ key: 'text', type: 'string', value: 'fallback response' }] }), endNode({ a: ['llm', 'text'] })], [['start', 'llm'], ['llm', 'end']]),
    );
    const { events } = await streamEvents(dv.apiKey, {});
    const nf = events.find((e) => e.event === 'node_finished' && (e.data as { node_id: string }).node_id === 'llm')!.data as Record<string, unknown>;
    expect(nf.status).toBe('exception');
    expect(nf.execution_metadata).toEqual({ error_strategy: 'default-value' });
    expect(events.at(-1)!.data).toMatchObject({ status: 'partial-succeeded', outputs: { a: 'fallback response' }, exceptions_count: 1 });
  });
});

describe('stop and disconnect', () => {
  const slowChain = () =>
    workflowDsl([startNode(), llmNode('llm', 'go'), templateNode('after', 'after'), endNode({ a: ['llm', 'text'] })], [['start', 'llm'], ['llm', 'after'], ['after', 'end']]);

  it('stop during a streaming LLM node: upstream sees the abort, the stream ends stopped, no later node runs', async () => {
    fake.behaviour = { reply: 'x'.repeat(400), chunkSize: 1, delayMs: 20 };
    const before = fake.requests.length;
    const { apiKey } = await s.importApp(slowChain());
    const r = await run(apiKey, {}, 'streaming');
    const seen: SseFrame[] = [];
    let stopped = false;
    for await (const f of readSse(r)) {
      seen.push(f);
      if (!stopped && f.kind === 'data' && f.data.event === 'text_chunk') {
        stopped = true;
        const stop = await fetch(`${s.api}/workflows/tasks/${f.data.task_id}/stop`, { method: 'POST', headers: headers(apiKey), body: JSON.stringify({ user: 'someone-else' }) });
        expect(await stop.json()).toEqual({ result: 'success' });
      }
    }
    const events = dataFrames(seen);
    const last = events.at(-1)!;
    expect(last.event).toBe('workflow_finished');
    expect(last.data).toMatchObject({ status: 'stopped', error: 'Stopped by user.' });
    expect(events.some((e) => (e.data as { node_id?: string })?.node_id === 'after')).toBe(false);
    const aborted = await fake.waitForAbort();
    expect(fake.requests.indexOf(aborted)).toBeGreaterThanOrEqual(before);
    const detail = await (await fetch(`${s.api}/workflows/run/${last.workflow_run_id}`, { headers: headers(apiKey) })).json();
    expect(detail.status).toBe('stopped');
    // stopping again is a no-op
    const again = await fetch(`${s.api}/workflows/tasks/${last.task_id}/stop`, { method: 'POST', headers: headers(apiKey), body: JSON.stringify({ user: 'x' }) });
    expect(await again.json()).toEqual({ result: 'success' });
    expect((await (await fetch(`${s.api}/workflows/run/${last.workflow_run_id}`, { headers: headers(apiKey) })).json()).status).toBe('stopped');
  });

  it('a client that disconnects does not stop the run; its events and final status are kept', async () => {
    fake.behaviour = { reply: 'y'.repeat(30), chunkSize: 3, delayMs: 10 };
    const { apiKey } = await s.importApp(slowChain());
    const ac = new AbortController();
    const r = await fetch(`${s.api}/workflows/run`, { method: 'POST', headers: headers(apiKey), body: JSON.stringify({ inputs: {}, response_mode: 'streaming', user: 'alice' }), signal: ac.signal });
    let runId = '';
    for await (const f of readSse(r)) {
      if (f.kind === 'data' && f.data.event === 'workflow_started') {
        runId = String(f.data.workflow_run_id);
        ac.abort();
        break;
      }
    }
    expect(runId).not.toBe('');
    let status = 'running';
    for (let i = 0; i < 200 && status === 'running'; i++) {
      await new Promise((res) => setTimeout(res, 25));
      status = (await (await fetch(`${s.api}/workflows/run/${runId}`, { headers: headers(apiKey) })).json()).status;
    }
    expect(status).toBe('succeeded');
    const log = await s.runtime.store.db.selectFrom('workflow_run_events').select(['seq', 'event']).where('run_id', '=', runId).orderBy('seq').execute();
    expect(log.map((e) => Number(e.seq))).toEqual(log.map((_, i) => i + 1));
    expect(log.at(-1)!.event).toBe('workflow_finished');
    expect(log.some((e) => e.event === 'node_started')).toBe(true);
  });
});

describe('examples', () => {
  it('every examples/*.yml imports (they double as `npm start` seeds)', async () => {
    const { readdirSync } = await import('node:fs');
    const { PROJECT_ROOT } = await import('../helpers/fixtures.js');
    const files = readdirSync(`${PROJECT_ROOT}/examples`).filter((f) => f.endsWith('.yml'));
    expect(files.length).toBeGreaterThanOrEqual(5);
    for (const f of files) await expect(s.importApp(example(f)), f).resolves.toHaveProperty('apiKey');
  });
});
