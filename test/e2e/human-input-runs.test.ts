import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.js';
import { example } from '../helpers/fixtures.js';
import { MemoryHumanInput } from '../helpers/memory-human-input.js';
import { dataFrames, parseSse, readSse, type SseFrame } from '../helpers/sse.js';
import { endNode, startNode, templateNode, workflowDsl } from '../helpers/workflow-dsl.js';

let s: TestServer;
const gateway = new MemoryHumanInput();

beforeAll(async () => {
  s = await startServer();
  // the plug point the form store uses
  s.runtime.humanInput = gateway;
  gateway.resumer = s.runtime.runs;
});
afterAll(async () => s?.close());

const headers = (key: string) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' });
type Ev = Record<string, unknown> & { data: Record<string, unknown> };

async function startStreaming(key: string, inputs: Record<string, unknown>, user = 'alice'): Promise<Ev[]> {
  const r = await fetch(`${s.api}/workflows/run`, { method: 'POST', headers: headers(key), body: JSON.stringify({ inputs, response_mode: 'streaming', user }) });
  expect(r.status).toBe(200);
  return dataFrames(parseSse(await r.text())) as Ev[];
}

async function events(key: string, runId: string, query: string): Promise<{ frames: SseFrame[]; events: Ev[]; status: number; headers: Headers }> {
  const r = await fetch(`${s.api}/workflow/${runId}/events?${query}`, { headers: { authorization: `Bearer ${key}` } });
  if (r.status !== 200) return { frames: [], events: [], status: r.status, headers: r.headers };
  const frames = parseSse(await r.text());
  return { frames, events: dataFrames(frames) as Ev[], status: r.status, headers: r.headers };
}

/** Opens the events stream, waits for its leading ping, runs `act`, then collects the rest. */
async function eventsAround(key: string, runId: string, query: string, act: () => Promise<void>): Promise<{ frames: SseFrame[]; events: Ev[]; headers: Headers }> {
  const r = await fetch(`${s.api}/workflow/${runId}/events?${query}`, { headers: { authorization: `Bearer ${key}` } });
  const it = readSse(r)[Symbol.asyncIterator]();
  const frames: SseFrame[] = [(await it.next()).value as SseFrame];
  await act();
  for (let n = await it.next(); !n.done; n = await it.next()) frames.push(n.value);
  return { frames, events: dataFrames(frames) as Ev[], headers: r.headers };
}

async function status(key: string, runId: string): Promise<Record<string, unknown>> {
  return (await fetch(`${s.api}/workflows/run/${runId}`, { headers: headers(key) })).json();
}

const hiNode = (id: string, actions = ['ok']) => ({
  id,
  type: 'human-input',
  delivery_methods: [{ type: 'webapp', enabled: true, config: {} }],
  form_content: `Form ${id}: {{#start.x#}} {{#$output.note#}}`,
  inputs: [{ type: 'paragraph', output_variable_name: 'note' }],
  user_actions: actions.map((a) => ({ id: a, title: a.toUpperCase(), button_style: 'primary' })),
  timeout: 1,
  timeout_unit: 'day',
});

describe('human-input: pause, resume, branch (approval example)', () => {
  let key: string;
  beforeAll(async () => {
    ({ apiKey: key } = await s.importApp(example('workflow-approval.yml')));
  });

  it('pauses with human_input_required then workflow_paused, and holds the run paused', async () => {
    const ev = await startStreaming(key, { draft: 'Hello world' });
    expect(ev.map((e) => e.event)).toEqual(['workflow_started', 'node_started', 'node_finished', 'node_started', 'human_input_required', 'workflow_paused']);
    const req = ev[4]!.data;
    expect(Object.keys(req)).toEqual(['form_id', 'node_id', 'node_title', 'form_content', 'inputs', 'actions', 'display_in_ui', 'form_token', 'resolved_default_values', 'expiration_time']);
    expect(req.form_content).toBe('Please review:\n\nHello world\n\nComment: {{#$output.comment#}}');
    const paused = ev[5]!.data;
    expect(Object.keys(paused)).toEqual(['workflow_run_id', 'paused_nodes', 'outputs', 'reasons', 'status', 'created_at', 'elapsed_time', 'total_tokens', 'total_steps']);
    expect(paused).toMatchObject({ workflow_run_id: ev[0]!.workflow_run_id, paused_nodes: ['review'], outputs: {}, status: 'paused', total_steps: 2 });
    expect((paused.reasons as Record<string, unknown>[])[0]).toEqual({ TYPE: 'human_input_required', ...req });
    const detail = await status(key, String(ev[0]!.workflow_run_id));
    expect(detail).toMatchObject({ status: 'paused', outputs: {}, finished_at: null });
    const snap = await s.runtime.store.db.selectFrom('workflow_run_snapshots').selectAll().where('run_id', '=', String(ev[0]!.workflow_run_id)).executeTakeFirstOrThrow();
    const state = JSON.parse(snap.state);
    expect(state.v).toBe(1);
    expect(state.pending).toEqual([{ node: 'review', from: 'start' }]);
  });

  it('blocking mode answers with status paused', async () => {
    const r = await fetch(`${s.api}/workflows/run`, { method: 'POST', headers: headers(key), body: JSON.stringify({ inputs: { draft: 'b' }, user: 'alice' }) });
    const body = await r.json();
    expect(body.data).toMatchObject({ status: 'paused', outputs: {}, finished_at: null, error: null });
  });

  it('a submit resumes along the chosen action; the reopened stream starts with the resumption', async () => {
    const ev = await startStreaming(key, { draft: 'D' });
    const runId = String(ev[0]!.workflow_run_id);
    const taskId = ev[0]!.task_id;
    const token = String(ev.find((e) => e.event === 'human_input_required')!.data.form_token);
    const { events: resumed, frames, headers: h } = await eventsAround(key, runId, 'user=alice', () => gateway.submit(token, 'approve', { comment: 'looks good' }));
    expect(h.get('cache-control')).toBe('no-cache');
    expect(frames[0]).toMatchObject({ kind: 'event', event: 'ping' });
    expect(resumed.map((e) => e.event)).toEqual([
      'workflow_started', 'node_started', 'human_input_form_filled', 'node_finished',
      'node_started', 'node_finished', 'node_started', 'node_finished', 'node_started', 'node_finished', 'workflow_finished',
    ]);
    expect(resumed[0]!.data.reason).toBe('resumption');
    expect(resumed[0]!.task_id).toBe(taskId);
    expect(resumed[2]!.data).toEqual({
      node_id: 'review', node_title: 'Review', rendered_content: 'Please review:\n\nD\n\nComment: looks good', action_id: 'approve', action_text: 'Approve', submitted_data: { comment: 'looks good' },
    });
    expect(resumed[3]!.data).toMatchObject({ node_id: 'review', status: 'succeeded', outputs: { comment: 'looks good', __action_id: 'approve', __action_value: 'Approve' } });
    expect(resumed.at(-1)!.data).toMatchObject({ status: 'succeeded', outputs: { decision: 'approved: looks good' } });
    expect(resumed.some((e) => e.data.node_id === 'rejected' || e.data.node_id === 'expired')).toBe(false);
    // resume is idempotent: a second resume of a finished run does nothing
    await s.runtime.runs.resume(runId);
    expect((await status(key, runId)).status).toBe('succeeded');
    // the finished run reopens as exactly one workflow_finished frame, task_id = run id
    const done = await events(key, runId, 'user=alice&include_state_snapshot=true');
    expect(done.events).toHaveLength(1);
    expect(done.events[0]).toMatchObject({ event: 'workflow_finished', task_id: runId, workflow_run_id: runId, data: { status: 'succeeded' } });
  });

  it('a timeout resumes along __timeout with human_input_form_timeout', async () => {
    const ev = await startStreaming(key, { draft: 'D' });
    const runId = String(ev[0]!.workflow_run_id);
    const { events: resumed } = await eventsAround(key, runId, 'user=alice', () => gateway.expire(String(ev.at(-2)!.data.form_token)));
    const t = resumed.find((e) => e.event === 'human_input_form_timeout')!;
    expect(Object.keys(t.data)).toEqual(['node_id', 'node_title', 'expiration_time']);
    expect(resumed.indexOf(t)).toBeLessThan(resumed.findIndex((e) => e.event === 'node_finished'));
    expect(resumed.at(-1)!.data).toMatchObject({ status: 'succeeded', outputs: { decision: 'no decision' } });
  });

  it('stopping a paused run ends it stopped and closes its forms', async () => {
    const ev = await startStreaming(key, { draft: 'D' });
    const runId = String(ev[0]!.workflow_run_id);
    const r = await fetch(`${s.api}/workflows/tasks/${ev[0]!.task_id}/stop`, { method: 'POST', headers: headers(key), body: JSON.stringify({ user: 'admin' }) });
    expect(await r.json()).toEqual({ result: 'success' });
    expect(await status(key, runId)).toMatchObject({ status: 'stopped', error: 'Stopped by user.' });
    expect(gateway.closed).toContain(runId);
    const token = String(ev.at(-2)!.data.form_token);
    await expect(gateway.submit(token, 'approve')).rejects.toThrow(/closed/);
    const after = await events(key, runId, 'user=alice');
    expect(after.events.map((e) => e.event)).toEqual(['workflow_finished']);
    expect(after.events[0]!.data.status).toBe('stopped');
  });
});

describe('GET /workflow/{id}/events', () => {
  let key: string;
  let runId: string;
  beforeAll(async () => {
    ({ apiKey: key } = await s.importApp(example('workflow-approval.yml')));
    const ev = await startStreaming(key, { draft: 'D' }, 'carol');
    runId = String(ev[0]!.workflow_run_id);
  });

  it('404 "Workflow run not found" for another user, another app or an unknown id', async () => {
    for (const [k, id, user] of [[key, runId, 'mallory'], [key, 'nope', 'carol']] as const) {
      const r = await fetch(`${s.api}/workflow/${id}/events?user=${user}`, { headers: { authorization: `Bearer ${k}` } });
      expect(r.status).toBe(404);
      expect(await r.json()).toEqual({ code: 'not_found', message: 'Workflow run not found', status: 404 });
    }
    const other = await s.importApp(example('workflow-approval.yml'));
    const r = await fetch(`${s.api}/workflow/${runId}/events?user=carol`, { headers: { authorization: `Bearer ${other.apiKey}` } });
    expect(r.status).toBe(404);
  });

  it('user is required', async () => {
    const r = await fetch(`${s.api}/workflow/${runId}/events`, { headers: { authorization: `Bearer ${key}` } });
    expect(r.status).toBe(400);
    expect((await r.json()).message).toMatch(/user/);
  });

  it('include_state_snapshot=true replays the log up to the pause; other spellings are false', async () => {
    const snap = await events(key, runId, 'user=carol&include_state_snapshot=true');
    expect(snap.events.map((e) => e.event)).toEqual(['workflow_started', 'node_started', 'node_finished', 'node_started', 'human_input_required', 'workflow_paused']);
    const ac = new AbortController();
    const r = await fetch(`${s.api}/workflow/${runId}/events?user=carol&include_state_snapshot=1`, { headers: { authorization: `Bearer ${key}` }, signal: ac.signal });
    const it = readSse(r)[Symbol.asyncIterator]();
    const first = await it.next();
    expect(first.value).toMatchObject({ kind: 'event', event: 'ping' });
    // no snapshot: the paused run's stream waits for the resume rather than replaying
    const token = String(snap.events[4]!.data.form_token);
    await gateway.submit(token, 'reject', { comment: 'no' });
    const rest: string[] = [];
    for (let n = await it.next(); !n.done; n = await it.next()) if (n.value.kind === 'data') rest.push(String(n.value.data.event));
    expect(rest[0]).toBe('workflow_started');
    expect(rest.at(-1)).toBe('workflow_finished');
  });

  it('continue_on_pause=true keeps one stream open across consecutive pauses', async () => {
    const { apiKey } = await s.importApp(
      workflowDsl([startNode([{ variable: 'x' }]), hiNode('h1'), hiNode('h2'), endNode({ a: ['h1', 'note'], b: ['h2', 'note'] })], [['start', 'h1'], ['h1', 'h2', 'ok'], ['h2', 'end', 'ok']]),
    );
    const ev = await startStreaming(apiKey, { x: 'X' });
    const id = String(ev[0]!.workflow_run_id);
    const r = await fetch(`${s.api}/workflow/${id}/events?user=alice&include_state_snapshot=TRUE&continue_on_pause=true`, { headers: { authorization: `Bearer ${apiKey}` } });
    const seen: string[] = [];
    for await (const f of readSse(r)) {
      if (f.kind !== 'data') continue;
      seen.push(String(f.data.event));
      if (f.data.event === 'human_input_required') await gateway.submit(String((f.data.data as Record<string, unknown>).form_token), 'ok', { note: String((f.data.data as Record<string, unknown>).node_id) });
    }
    expect(seen.filter((e) => e === 'workflow_paused')).toHaveLength(2);
    expect(seen.filter((e) => e === 'workflow_started')).toHaveLength(3);
    expect(seen.at(-1)).toBe('workflow_finished');
    expect((await status(apiKey, id)).outputs).toEqual({ a: 'h1', b: 'h2' });
  });
});

describe('parallel human-input branches', () => {
  const parallel = () =>
    workflowDsl(
      [startNode([{ variable: 'x' }]), hiNode('a'), hiNode('b'), templateNode('slow', '{{ x }}', { x: ['start', 'x'] }), templateNode('after', 'after {{ s }}', { s: ['slow', 'output'] }), endNode({ a: ['a', 'note'], b: ['b', 'note'], s: ['after', 'output'] })],
      [['start', 'a'], ['start', 'b'], ['start', 'slow'], ['slow', 'after'], ['a', 'end', 'ok'], ['b', 'end', 'ok'], ['after', 'end']],
    );

  it('pause together with one form each; resolving them one by one finishes the run', async () => {
    const { apiKey } = await s.importApp(parallel());
    const ev = await startStreaming(apiKey, { x: 'X' });
    const reqs = ev.filter((e) => e.event === 'human_input_required');
    expect(reqs.map((e) => e.data.node_id).sort()).toEqual(['a', 'b']);
    const paused = ev.at(-1)!;
    expect(paused.event).toBe('workflow_paused');
    expect((paused.data.paused_nodes as string[]).sort()).toEqual(['a', 'b']);
    expect(paused.data.reasons).toHaveLength(2);
    // the in-flight / ready branch (slow → after) is deferred or drained, never lost
    const runId = String(ev[0]!.workflow_run_id);
    await gateway.submit(String(reqs[0]!.data.form_token), 'ok', { note: 'first' });
    let st = await status(apiKey, runId);
    for (let i = 0; i < 100 && st.status === 'running'; i++) st = await status(apiKey, runId);
    expect(st.status).toBe('paused');
    await gateway.submit(String(reqs[1]!.data.form_token), 'ok', { note: 'second' });
    const { events: tail } = await events(apiKey, runId, 'user=alice');
    expect(tail.at(-1)!.data).toMatchObject({ status: 'succeeded' });
    const out = (await status(apiKey, runId)).outputs as Record<string, string>;
    expect(out.s).toBe('after X');
    expect([out.a, out.b].sort()).toEqual(['first', 'second']);
  });

  it('a form submitted while the run is pausing again is picked up by the re-check (Dify #42103)', async () => {
    const { apiKey } = await s.importApp(parallel());
    const ev = await startStreaming(apiKey, { x: 'X' });
    const runId = String(ev[0]!.workflow_run_id);
    const reqs = ev.filter((e) => e.event === 'human_input_required');
    const second = reqs[1]!;
    // when the resumed run asks about the second form again, it is submitted at that moment, while
    // the run is still `running`: the submit's own resume is refused, so only the re-check can finish it
    gateway.onPause = (form) => {
      if (form.token === second.data.form_token && form.runId === runId) {
        gateway.onPause = undefined;
        void gateway.submit(form.token, 'ok', { note: 'raced' });
      }
    };
    await gateway.submit(String(reqs[0]!.data.form_token), 'ok', { note: 'first' });
    let st = await status(apiKey, runId);
    for (let i = 0; i < 200 && st.status !== 'succeeded'; i++) {
      await new Promise((r) => setTimeout(r, 10));
      st = await status(apiKey, runId);
    }
    expect(st.status).toBe('succeeded');
  });
});

describe('durability', () => {
  it('a run paused by one server is resumed by another process after a restart (no memory held)', async () => {
    const gw = new MemoryHumanInput();
    const first = await startServer({ runtime: { humanInput: gw } });
    gw.resumer = first.runtime.runs;
    const { apiKey } = await first.importApp(example('workflow-approval.yml'));
    const r = await fetch(`${first.api}/workflows/run`, { method: 'POST', headers: headers(apiKey), body: JSON.stringify({ inputs: { draft: 'persisted' }, response_mode: 'streaming', user: 'dana' }) });
    const ev = dataFrames(parseSse(await r.text())) as Ev[];
    const runId = String(ev[0]!.workflow_run_id);
    const token = String(ev.find((e) => e.event === 'human_input_required')!.data.form_token);
    const { restartServer } = await import('../helpers/server.js');
    const second = await restartServer(first, { runtime: { humanInput: gw } });
    try {
      gw.resumer = second.runtime.runs;
      expect((await second.runtime.runs.find(runId))!.status).toBe('paused');
      await gw.submit(token, 'reject', { comment: 'after restart' });
      const res = await fetch(`${second.api}/workflow/${runId}/events?user=dana&include_state_snapshot=true`, { headers: { authorization: `Bearer ${apiKey}` } });
      const all = dataFrames(parseSse(await res.text())) as Ev[];
      const last = all.at(-1)!;
      expect(last.event).toBe('workflow_finished');
      expect(last.data).toMatchObject({ status: 'succeeded', outputs: { decision: 'rejected: after restart' } });
    } finally {
      await second.close();
    }
  });
});
