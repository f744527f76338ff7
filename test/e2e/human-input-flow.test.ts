import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ManualClock, restartServer, startServer, type TestServer } from '../helpers/server.js';
import { dataFrames, parseSse, readSse, type SseFrame } from '../helpers/sse.js';
import { endNode, startNode, templateNode, workflowDsl, type NodeSpec } from '../helpers/workflow-dsl.js';

/**
 * The spec's "Human Input flow" over HTTP with the real form store and the real run side:
 * files (uploaded and remote), timeouts, restarts, parallel forms, global timeout and chatflow.
 */

const reviewNode = (id: string, extra: Record<string, unknown> = {}): NodeSpec => ({
  id,
  type: 'human-input',
  title: `Review ${id}`,
  delivery_methods: [{ id: `${id}-web`, type: 'webapp', enabled: true, config: {} }],
  form_content: 'Draft: {{#start.draft#}}\nComment: {{#$output.comment#}}\nFiles: {{#$output.files#}}',
  inputs: [
    { type: 'paragraph', output_variable_name: 'comment', default: { type: 'variable', selector: ['start', 'draft'], value: '' } },
    { type: 'file-list', output_variable_name: 'files', allowed_file_types: ['document'], allowed_file_upload_methods: ['local_file', 'remote_url'], number_limits: 2 },
  ],
  user_actions: [
    { id: 'approve', title: 'Approve', button_style: 'primary' },
    { id: 'reject', title: 'Reject', button_style: 'default' },
  ],
  timeout: 1,
  timeout_unit: 'hour',
  ...extra,
});

const APPROVAL = workflowDsl(
  [
    startNode([{ variable: 'draft' }]),
    reviewNode('review'),
    templateNode('ok', 'approved {{ c }} with {{ f | length }} files: {{ f | map(attribute="filename") | join(",") }}', { c: ['review', 'comment'], f: ['review', 'files'] }),
    templateNode('no', 'rejected {{ c }}', { c: ['review', 'comment'] }),
    templateNode('late', 'no decision ({{ a }})', { a: ['review', '__action_id'] }),
    { id: 'join', type: 'variable-aggregator', variables: [['ok', 'output'], ['no', 'output'], ['late', 'output']] },
    endNode({ decision: ['join', 'output'], rendered: ['review', '__rendered_content'] }),
  ],
  [
    ['start', 'review'],
    ['review', 'ok', 'approve'],
    ['review', 'no', 'reject'],
    ['review', 'late', '__timeout'],
    ['ok', 'join'],
    ['no', 'join'],
    ['late', 'join'],
    ['join', 'end'],
  ],
  { name: 'approval with files' },
);

const PARALLEL = workflowDsl(
  [
    startNode([{ variable: 'draft' }]),
    reviewNode('legal', { inputs: [{ type: 'paragraph', output_variable_name: 'comment' }], form_content: 'Legal: {{#$output.comment#}}' }),
    reviewNode('tech', { inputs: [{ type: 'paragraph', output_variable_name: 'comment' }], form_content: 'Tech: {{#$output.comment#}}' }),
    templateNode('both', '{{ a }} + {{ b }}', { a: ['legal', 'comment'], b: ['tech', 'comment'] }),
    endNode({ result: ['both', 'output'] }),
  ],
  [
    ['start', 'legal'],
    ['start', 'tech'],
    ['legal', 'both', 'approve'],
    ['tech', 'both', 'approve'],
    ['both', 'end'],
  ],
  { name: 'parallel reviews' },
);

const CHATFLOW = workflowDsl(
  [
    startNode(),
    reviewNode('gate', { inputs: [{ type: 'paragraph', output_variable_name: 'comment' }], form_content: 'Answer {{#sys.query#}}? {{#$output.comment#}}' }),
    { id: 'answer', type: 'answer', answer: 'Reviewer said: {{#gate.comment#}}' },
  ],
  [
    ['start', 'gate'],
    ['gate', 'answer', 'approve'],
  ],
  { mode: 'advanced-chat', name: 'gated chat' },
);

let s: TestServer;
let key: string;
let parallelKey: string;
let chatKey: string;
const clock = new ManualClock();
let files: http.Server;
let filesUrl: string;

const h = (k = key) => ({ authorization: `Bearer ${k}`, 'content-type': 'application/json' });
const post = (path: string, body: unknown, k = key) => fetch(`${s.api}${path}`, { method: 'POST', headers: h(k), body: JSON.stringify(body) });

/** Starts a streaming run and returns its events (the stream ends at the pause). */
async function runUntilPause(body: Record<string, unknown>, k = key, path = '/workflows/run') {
  const r = await post(path, { response_mode: 'streaming', ...body }, k);
  expect(r.status).toBe(200);
  const events = dataFrames(parseSse(await r.text()));
  const required = events.filter((e) => e.event === 'human_input_required').map((e) => e.data as Record<string, unknown>);
  return { events, required, runId: String(events.find((e) => e.workflow_run_id)!.workflow_run_id), taskId: String(events[0]!.task_id) };
}

async function runStatus(runId: string, k = key): Promise<Record<string, unknown>> {
  for (let i = 0; i < 200; i++) {
    const r = await (await fetch(`${s.api}/workflows/run/${runId}`, { headers: h(k) })).json();
    if (!['running', 'paused'].includes(r.status)) return r;
    await new Promise((res) => setTimeout(res, 25));
  }
  throw new Error(`run ${runId} did not finish`);
}

/** The run's whole persisted event log (what every stream replays from). */
async function eventLog(runId: string): Promise<Record<string, unknown>[]> {
  const rows = await s.runtime.store.db.selectFrom('workflow_run_events').select('payload').where('run_id', '=', runId).orderBy('seq').execute();
  return rows.map((r) => JSON.parse(r.payload) as Record<string, unknown>);
}

async function upload(user: string, name: string, content: string): Promise<string> {
  const fd = new FormData();
  fd.append('file', new Blob([content], { type: 'text/markdown' }), name);
  fd.append('user', user);
  const r = await fetch(`${s.api}/files/upload`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: fd });
  expect(r.status).toBe(201);
  return (await r.json()).id;
}

beforeAll(async () => {
  files = http.createServer((req, res) => {
    if (req.url === '/brief.pdf') res.writeHead(200, { 'content-type': 'application/pdf' }).end('%PDF-1.4 brief');
    else res.writeHead(503).end('down');
  });
  await new Promise<void>((r) => files.listen(0, '127.0.0.1', r));
  filesUrl = `http://localhost:${(files.address() as AddressInfo).port}`;
  s = await startServer({ clock, env: { SSRF_ALLOW_HOSTS: 'localhost' } });
  ({ apiKey: key } = await s.importApp(APPROVAL));
  ({ apiKey: parallelKey } = await s.importApp(PARALLEL));
  ({ apiKey: chatKey } = await s.importApp(CHATFLOW));
});
afterAll(async () => {
  await s?.close();
  files?.close();
});

describe('Human Input flow (spec sequence) with the real form store', () => {
  it('run → token → GET form → upload → submit (local + remote file) → reopened stream carries the rest', async () => {
    // 1. start streaming, capture form_token and workflow_run_id
    const { events, required, runId } = await runUntilPause({ inputs: { draft: 'Q3 plan' }, user: 'dana' });
    expect(events.map((e) => e.event).slice(-2)).toEqual(['human_input_required', 'workflow_paused']);
    const req = required[0]!;
    expect(req).toMatchObject({ node_id: 'review', node_title: 'Review review', display_in_ui: true, resolved_default_values: { comment: 'Q3 plan' } });
    expect(req.form_content).toBe('Draft: Q3 plan\nComment: {{#$output.comment#}}\nFiles: {{#$output.files#}}');
    const token = String(req.form_token);

    // 2. GET the form definition
    const form = await (await fetch(`${s.api}/form/human_input/${token}`, { headers: h() })).json();
    expect(form.user_actions.map((a: { id: string }) => a.id)).toEqual(['approve', 'reject']);
    expect(form.expiration_time).toBe(req.expiration_time);

    // 3. upload the local file with the same user
    const fileId = await upload('dana', 'notes.md', '# notes');

    // 5 (before 4, so nothing is missed). reopen the stream with the same user
    const reopened = await fetch(`${s.api}/workflow/${runId}/events?user=dana`, { headers: h() });
    expect(reopened.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    const it = readSse(reopened)[Symbol.asyncIterator]();
    const frames: SseFrame[] = [(await it.next()).value as SseFrame];
    expect(frames[0]).toMatchObject({ kind: 'event', event: 'ping' });

    // 4. a failing remote file rejects the whole submission and leaves the form open …
    const files = [{ transfer_method: 'local_file', upload_file_id: fileId, type: 'document' }];
    const bad = await post(`/form/human_input/${token}`, { user: 'dana', action: 'approve', inputs: { comment: 'go', files: [...files, { transfer_method: 'remote_url', url: `${filesUrl}/gone.pdf` }] } });
    expect(bad.status).toBe(400);
    expect((await bad.json()).message).toMatch(/files\[1\]: fetching .* failed with HTTP 503/);
    // … and the same token takes the fixed submission
    const ok = await post(`/form/human_input/${token}`, { user: 'dana', action: 'approve', inputs: { comment: 'go', files: [...files, { transfer_method: 'remote_url', url: `${filesUrl}/brief.pdf` }] } });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({});

    for (let n = await it.next(); !n.done; n = await it.next()) frames.push(n.value);
    const resumed = dataFrames(frames);
    const names = resumed.map((e) => e.event);
    expect(names[0]).toBe('workflow_started');
    expect(resumed[0]!.data).toMatchObject({ reason: 'resumption' });
    const filledAt = names.indexOf('human_input_form_filled');
    expect(names[filledAt - 1]).toBe('node_started');
    expect(names[filledAt + 1]).toBe('node_finished');
    expect(resumed[filledAt]!.data).toMatchObject({ node_id: 'review', action_id: 'approve', action_text: 'Approve', rendered_content: 'Draft: Q3 plan\nComment: go\nFiles: [2 files]' });
    expect(names.at(-1)).toBe('workflow_finished');
    expect(resumed.at(-1)!.data, JSON.stringify(resumed.at(-1))).toMatchObject({ status: "succeeded", outputs: { decision: "approved go with 2 files: notes.md,brief.pdf" } });

    // the form is closed for good; a finished run's stream is one workflow_finished frame
    expect((await post(`/form/human_input/${token}`, { user: 'dana', action: 'reject', inputs: { comment: 'x', files: [] } })).status).toBe(412);
    const after = parseSse(await (await fetch(`${s.api}/workflow/${runId}/events?user=dana`, { headers: h() })).text());
    expect(dataFrames(after).map((e) => e.event)).toEqual(['workflow_finished']);
  });

  it('the node timeout resumes along __timeout with human_input_form_timeout; later submits get 412', async () => {
    const { required, runId } = await runUntilPause({ inputs: { draft: 'late' }, user: 'tim' });
    clock.advance(3_600_000 + 1000);
    await s.runtime.forms.scanTimeouts();
    const run = await runStatus(runId);
    expect(run).toMatchObject({ status: 'succeeded', outputs: { decision: 'no decision ()' } });
    const all = await eventLog(runId);
    const timeout = all.find((e) => e.event === 'human_input_form_timeout');
    expect(timeout?.data).toEqual({ node_id: 'review', node_title: 'Review review', expiration_time: required[0]!.expiration_time });
    expect(all.some((e) => e.event === 'human_input_form_filled')).toBe(false);
    const late = await post(`/form/human_input/${required[0]!.form_token}`, { user: 'tim', action: 'approve', inputs: { comment: 'x', files: [] } });
    expect(late.status).toBe(412);
    expect((await late.json()).code).toBe('human_input_form_expired');
  });

  it('parallel Human Input nodes pause together with one form each; submitting both finishes the run once', async () => {
    const { events, required, runId } = await runUntilPause({ inputs: { draft: 'contract' }, user: 'pat' }, parallelKey);
    expect(required.map((r) => r.node_id).sort()).toEqual(['legal', 'tech']);
    expect(new Set(required.map((r) => r.form_token)).size).toBe(2);
    expect((events.at(-1)!.data as { paused_nodes: string[] }).paused_nodes.sort()).toEqual(['legal', 'tech']);
    const results = await Promise.all(
      required.map((r) => post(`/form/human_input/${r.form_token}`, { user: 'pat', action: 'approve', inputs: { comment: String(r.node_id) } }, parallelKey)),
    );
    expect(results.map((r) => r.status)).toEqual([200, 200]);
    const run = await runStatus(runId, parallelKey);
    expect(run).toMatchObject({ status: 'succeeded', outputs: { result: 'legal + tech' } });
    const all = await eventLog(runId);
    expect(all.filter((e) => e.event === 'workflow_finished')).toHaveLength(1);
    expect(all.filter((e) => e.event === 'human_input_form_filled')).toHaveLength(2);
  });

  it('past the global timeout the paused run is stopped and its form refuses submits', async () => {
    const { required, runId } = await runUntilPause({ inputs: { draft: 'forgotten' }, user: 'gil' });
    // The node timeout (1 h) would fire first; make only the global deadline due by moving the form's node deadline.
    await s.runtime.store.db.updateTable('human_input_forms').set({ expiration_time: clock.now() + 30 * 86_400_000 }).where('workflow_run_id', '=', runId).execute();
    clock.advance(7 * 86_400_000 + 1000);
    await s.runtime.forms.scanTimeouts();
    const run = await runStatus(runId);
    expect(run.status).toBe('stopped');
    expect((await post(`/form/human_input/${required[0]!.form_token}`, { user: 'gil', action: 'approve', inputs: { comment: 'x', files: [] } })).status).toBe(412);
  });

  it('chatflow pauses on /chat-messages and resumes the same way, ending with message_end', async () => {
    const { events, required, runId } = await runUntilPause({ inputs: {}, query: 'ship on Friday', user: 'cy' }, chatKey, '/chat-messages');
    expect(events.at(-1)!.event).toBe('workflow_paused');
    expect(events[0]).toHaveProperty('conversation_id');
    expect(required[0]!.form_content).toBe('Answer ship on Friday? {{#$output.comment#}}');
    const reopened = fetch(`${s.api}/workflow/${runId}/events?user=cy`, { headers: h(chatKey) });
    const r = await reopened;
    const it = readSse(r)[Symbol.asyncIterator]();
    await it.next(); // leading ping
    expect((await post(`/form/human_input/${required[0]!.form_token}`, { user: 'cy', action: 'approve', inputs: { comment: 'yes' } }, chatKey)).status).toBe(200);
    const frames: SseFrame[] = [];
    for (let n = await it.next(); !n.done; n = await it.next()) frames.push(n.value);
    const resumed = dataFrames(frames);
    const answer = resumed.filter((e) => e.event === 'message').map((e) => e.answer).join('');
    expect(answer).toBe('Reviewer said: yes');
    const names = resumed.map((e) => e.event);
    expect(names.indexOf('message_end')).toBeLessThan(names.indexOf('workflow_finished'));
    const msgs = await (await fetch(`${s.api}/messages?user=cy&conversation_id=${events[0]!.conversation_id}`, { headers: h(chatKey) })).json();
    expect(msgs.data[0].answer).toBe('Reviewer said: yes');
  });
});

describe('blocking run that pauses (issue 13 item 8)', () => {
  it('workflow: the blocking body is Dify\'s paused response, whose form_token answers the form; the events stream carries the rest', async () => {
    const r = await post('/workflows/run', { inputs: { draft: 'blocking plan' }, user: 'bo', response_mode: 'blocking' });
    expect(r.status).toBe(200);
    const body = await r.json();
    // 1. WorkflowPausedBlockingResponse: {task_id, workflow_run_id, data{…, status paused, paused_nodes, reasons}}
    expect(Object.keys(body)).toEqual(['task_id', 'workflow_run_id', 'data']);
    expect(Object.keys(body.data)).toEqual(['id', 'workflow_id', 'status', 'outputs', 'error', 'elapsed_time', 'total_tokens', 'total_steps', 'created_at', 'finished_at', 'paused_nodes', 'reasons']);
    expect(body.data).toMatchObject({ id: body.workflow_run_id, status: 'paused', finished_at: null, paused_nodes: ['review'] });
    const reason = body.data.reasons[0];
    expect(Object.keys(reason)[0]).toBe('TYPE');
    expect(reason).toMatchObject({ TYPE: 'human_input_required', node_id: 'review', resolved_default_values: { comment: 'blocking plan' } });
    expect(typeof reason.form_token).toBe('string');
    // the same reason as the streamed workflow_paused event
    const paused = (await eventLog(body.workflow_run_id)).find((e) => e.event === 'workflow_paused')!;
    expect((paused.data as { reasons: unknown[] }).reasons[0]).toEqual(reason);

    // the paused run is listed by GET /workflows/logs?status=paused (issue 13 item 9)
    const logs = await (await fetch(`${s.api}/workflows/logs?status=paused&limit=100`, { headers: h() })).json();
    expect(logs.data.map((l: { workflow_run: { id: string; status: string } }) => l.workflow_run)).toContainEqual(expect.objectContaining({ id: body.workflow_run_id, status: 'paused' }));

    // 2. open the events stream (no snapshot), 3. submit with the token, 4. the stream carries the resumed run
    const events = await fetch(`${s.api}/workflow/${body.workflow_run_id}/events?user=bo`, { headers: h() });
    const it = readSse(events)[Symbol.asyncIterator]();
    await it.next(); // leading ping
    expect((await post(`/form/human_input/${reason.form_token}`, { user: 'bo', action: 'reject', inputs: { comment: 'not yet', files: [] } })).status).toBe(200);
    const frames: SseFrame[] = [];
    for (let n = await it.next(); !n.done; n = await it.next()) frames.push(n.value);
    const resumed = dataFrames(frames);
    expect(resumed[0]).toMatchObject({ event: 'workflow_started', data: { reason: 'resumption' } });
    expect(resumed.at(-1)).toMatchObject({ event: 'workflow_finished', data: { status: 'succeeded', outputs: { decision: 'rejected not yet' } } });
  });

  it('chatflow: the blocking body is Dify\'s ChatPausedBlockingResponse with the reasons in data', async () => {
    const r = await post('/chat-messages', { inputs: {}, query: 'deploy now', user: 'bea', response_mode: 'blocking' }, chatKey);
    expect(r.status).toBe(200);
    const body = await r.json();
    expect(Object.keys(body)).toEqual(['event', 'task_id', 'id', 'message_id', 'conversation_id', 'mode', 'answer', 'metadata', 'created_at', 'workflow_run_id', 'data']);
    expect(body).toMatchObject({ event: 'workflow_paused', mode: 'advanced-chat', answer: '' });
    expect(body.id).toBe(body.message_id);
    expect(body.data).toMatchObject({ id: body.message_id, message_id: body.message_id, conversation_id: body.conversation_id, workflow_run_id: body.workflow_run_id, status: 'paused', paused_nodes: ['gate'] });
    expect(body.data.metadata.usage).toMatchObject({ total_tokens: 0, total_price: '0' });
    const reason = body.data.reasons[0];
    expect(reason).toMatchObject({ TYPE: 'human_input_required', node_id: 'gate', form_content: 'Answer deploy now? {{#$output.comment#}}' });
    expect((await post(`/form/human_input/${reason.form_token}`, { user: 'bea', action: 'approve', inputs: { comment: 'go' } }, chatKey)).status).toBe(200);
    const run = await runStatus(body.workflow_run_id, chatKey);
    expect(run.status).toBe('succeeded');
    const msgs = await (await fetch(`${s.api}/messages?user=bea&conversation_id=${body.conversation_id}`, { headers: h(chatKey) })).json();
    expect(msgs.data[0].answer).toBe('Reviewer said: go');
  });
});

describe('restart while paused', () => {
  it('a run paused before a restart is resumed by a submit to the new process', async () => {
    const { required, runId } = await runUntilPause({ inputs: { draft: 'durable' }, user: 'rex' });
    s = await restartServer(s, { clock, env: { SSRF_ALLOW_HOSTS: 'localhost' } });
    const ok = await post(`/form/human_input/${required[0]!.form_token}`, { user: 'rex', action: 'reject', inputs: { comment: 'after restart', files: [] } });
    expect(ok.status).toBe(200);
    expect(await runStatus(runId)).toMatchObject({ status: 'succeeded', outputs: { decision: 'rejected after restart' } });
  });
});
