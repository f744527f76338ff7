import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ManualClock, startServer, type TestServer } from '../helpers/server.js';
import { example } from '../helpers/fixtures.js';
import type { HumanInputContext, HumanInputDecision, RunResumer } from '../../src/forms/human-input-port.js';
import { newId } from '../../src/infra/ids.js';

/** Records what the form store asks of the run side. */
class RecordingResumer implements RunResumer {
  resumed: string[] = [];
  stopped: { runId: string; reason: string }[] = [];
  async resume(runId: string) {
    this.resumed.push(runId);
  }
  async stop(runId: string, reason: string) {
    this.stopped.push({ runId, reason });
  }
}

const NODE_DATA = {
  type: 'human-input',
  title: 'Review',
  delivery_methods: [{ id: 'd1', type: 'webapp', enabled: true, config: {} }],
  form_content: '# Review for {{#start.name#}}\n\nComment: {{#$output.comment#}}\nDecision: {{#$output.choice#}}\nFiles: {{#$output.docs#}}',
  inputs: [
    { type: 'paragraph', output_variable_name: 'comment', default: { type: 'variable', selector: ['start', 'name'], value: '' } },
    { type: 'select', output_variable_name: 'choice', option_source: { type: 'constant', value: ['ok', 'redo'] } },
    {
      type: 'file-list',
      output_variable_name: 'docs',
      allowed_file_types: ['document'],
      allowed_file_extensions: [],
      allowed_file_upload_methods: ['local_file', 'remote_url'],
      number_limits: 2,
    },
  ],
  user_actions: [
    { id: 'approve', title: 'Approve', button_style: 'primary' },
    { id: 'reject', title: 'Reject', button_style: 'default' },
  ],
  timeout: 1,
  timeout_unit: 'hour',
};

let s: TestServer;
let key: string;
let otherKey: string;
let appId: string;
let resumer: RecordingResumer;
const clock = new ManualClock();
let files: http.Server;
let filesUrl: string;

function ctx(runId: string, data: Record<string, unknown> = NODE_DATA, nodeId = 'review'): HumanInputContext {
  const vars: Record<string, unknown> = { 'start.name': 'Ada' };
  return {
    runId,
    appId,
    endUserId: 'eu-1',
    nodeId,
    nodeTitle: String(data.title),
    data,
    resolve: (sel) => vars[sel.join('.')],
    render: (t) => t.replace(/\{\{#([A-Za-z0-9_]+)\.([A-Za-z0-9_]+)#\}\}/g, (_m, a: string, b: string) => String(vars[`${a}.${b}`] ?? '')),
    now: clock.now(),
  };
}

async function openForm(data: Record<string, unknown> = NODE_DATA): Promise<{ runId: string; decision: Extract<HumanInputDecision, { type: 'pause' }> }> {
  const runId = newId();
  const decision = await s.runtime.forms.decide(ctx(runId, data));
  if (decision.type !== 'pause') throw new Error('expected a pause');
  return { runId, decision };
}

const auth = (k = key) => ({ authorization: `Bearer ${k}` });
const post = (token: string, body: unknown, k = key) =>
  fetch(`${s.api}/form/human_input/${token}`, { method: 'POST', headers: { ...auth(k), 'content-type': 'application/json' }, body: JSON.stringify(body) });

async function upload(user: string, name: string, content = 'hello', type = 'text/plain'): Promise<string> {
  const fd = new FormData();
  fd.append('file', new Blob([content], { type }), name);
  fd.append('user', user);
  const r = await fetch(`${s.api}/files/upload`, { method: 'POST', headers: auth(), body: fd });
  expect(r.status).toBe(201);
  return (await r.json()).id as string;
}

beforeAll(async () => {
  files = http.createServer((req, res) => {
    if (req.url === '/report.pdf') res.writeHead(200, { 'content-type': 'application/pdf' }).end('%PDF-1.4 fake');
    else if (req.url === '/big.pdf') res.writeHead(200, { 'content-type': 'application/pdf' }).end(Buffer.alloc(2 * 1024 * 1024));
    else if (req.url === '/redirect') res.writeHead(302, { location: '/report.pdf' }).end();
    else res.writeHead(404).end('nope');
  });
  await new Promise<void>((r) => files.listen(0, '127.0.0.1', r));
  filesUrl = `http://localhost:${(files.address() as AddressInfo).port}`;
  s = await startServer({ clock, env: { SSRF_ALLOW_HOSTS: 'localhost', UPLOAD_FILE_SIZE_LIMIT: '1' } });
  resumer = new RecordingResumer();
  s.runtime.bindRunResumer(resumer);
  ({ apiKey: key, appId } = await s.importApp(example('completion-writer.yml')));
  ({ apiKey: otherKey } = await s.importApp(example('completion-writer.yml')));
});
afterAll(async () => {
  await s?.close();
  files?.close();
});
beforeEach(() => {
  resumer.resumed = [];
  resumer.stopped = [];
});

describe('a run reaching a Human Input node', () => {
  it('stores the form and answers pause with every human_input_required field', async () => {
    const { decision } = await openForm();
    const r = decision.required;
    expect(Object.keys(r).sort()).toEqual(
      ['actions', 'display_in_ui', 'expiration_time', 'form_content', 'form_id', 'form_token', 'inputs', 'node_id', 'node_title', 'resolved_default_values'].sort(),
    );
    expect(r.form_content).toBe('# Review for Ada\n\nComment: {{#$output.comment#}}\nDecision: {{#$output.choice#}}\nFiles: {{#$output.docs#}}');
    expect(r.node_id).toBe('review');
    expect(r.node_title).toBe('Review');
    expect(r.display_in_ui).toBe(true);
    expect(r.resolved_default_values).toEqual({ comment: 'Ada' });
    expect(r.expiration_time).toBe(Math.floor((clock.now() + 3_600_000) / 1000));
    expect(r.form_token).toMatch(/^[A-Za-z0-9_-]{32}$/); // 192 random bits
    expect(r.actions).toEqual(NODE_DATA.user_actions);
    expect(r.inputs.map((i) => i.type)).toEqual(['paragraph', 'select', 'file-list']);
  });

  it('asking again while open re-issues the same pause (no second form)', async () => {
    const { runId, decision } = await openForm();
    const again = await s.runtime.forms.decide(ctx(runId));
    expect(again).toEqual(decision);
  });

  it('email-only delivery: form_token is null and the form is unreachable through the API', async () => {
    const { decision } = await openForm({ ...NODE_DATA, delivery_methods: [{ id: 'e', type: 'email', enabled: true, config: { recipients: { items: [{ type: 'external', email: 'a@example.com' }] }, subject: 's', body: 'b' } }] });
    expect(decision.required.form_token).toBeNull();
    expect(decision.required.display_in_ui).toBe(false);
    const rows = await s.runtime.store.db.selectFrom('human_input_deliveries').selectAll().where('form_id', '=', decision.required.form_id).execute();
    expect(rows.map((d) => [d.type, d.status])).toEqual([['email', 'pending']]);
  });
});

describe('GET /form/human_input/{token}', () => {
  it('returns the definition', async () => {
    const { decision } = await openForm();
    const r = await fetch(`${s.api}/form/human_input/${decision.required.form_token}`, { headers: auth() });
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({
      form_content: decision.required.form_content,
      inputs: decision.required.inputs,
      resolved_default_values: { comment: 'Ada' },
      user_actions: NODE_DATA.user_actions,
      expiration_time: decision.required.expiration_time,
    });
  });

  it('unknown token or another app → 404 not_found "Form not found"', async () => {
    const { decision } = await openForm();
    for (const [token, k] of [['nope', key], [decision.required.form_token!, otherKey]] as const) {
      const r = await fetch(`${s.api}/form/human_input/${token}`, { headers: auth(k) });
      expect(r.status).toBe(404);
      expect(await r.json()).toEqual({ code: 'not_found', message: 'Form not found', status: 404 });
    }
  });
});

describe('POST /form/human_input/{token}', () => {
  it('checks in order: user, body, action, missing inputs — and every rejection leaves the form open', async () => {
    const { decision } = await openForm();
    const t = decision.required.form_token!;
    expect(await (await post(t, { inputs: {}, action: 'approve' })).json()).toEqual({ code: 'invalid_param', message: 'Arg user must be provided.', status: 400 });
    expect((await (await post(t, { user: 'u', action: 'approve' })).json()).message).toBe('inputs is required');
    const bad = await post(t, { user: 'u', inputs: {}, action: 'maybe' });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual({ code: 'invalid_form_data', message: 'Invalid action: maybe', status: 400 });
    const missing = await post(t, { user: 'u', inputs: { choice: 'ok' }, action: 'approve' });
    expect(await missing.json()).toEqual({ code: 'invalid_form_data', message: 'Missing required inputs: comment, docs', status: 400 });
    const r = await fetch(`${s.api}/form/human_input/${t}`, { method: 'POST', headers: { ...auth(), 'content-type': 'text/plain' }, body: 'x' });
    expect(r.status).toBe(415);
    expect((await fetch(`${s.api}/form/human_input/${t}`, { headers: auth() })).status).toBe(200);
    expect(resumer.resumed).toEqual([]);
  });

  it('rejects bad values: select option, upload of another user, disallowed type, too many files, SSRF, fetch failure, oversize', async () => {
    const { decision } = await openForm();
    const t = decision.required.form_token!;
    const mine = await upload('alice', 'notes.txt');
    const theirs = await upload('bob', 'other.txt');
    const image = await upload('alice', 'pic.png', 'png', 'image/png');
    const base = { comment: 'fine', choice: 'ok', docs: [{ transfer_method: 'local_file', upload_file_id: mine, type: 'document' }] };
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ ...base, choice: 'perhaps' }, /^choice must be one of: ok, redo$/],
      [{ ...base, docs: [{ transfer_method: 'local_file', upload_file_id: theirs }] }, /docs\[0\]: upload_file_id .* is not a file uploaded by this user/],
      [{ ...base, docs: [{ transfer_method: 'local_file', upload_file_id: image }] }, /docs\[0\]: file pic\.png is not an allowed type \(allowed: document\)/],
      [{ ...base, docs: [base.docs[0], base.docs[0], base.docs[0]] }, /^docs accepts at most 2 files, got 3$/],
      [{ ...base, docs: [{ transfer_method: 'remote_url', url: 'http://127.0.0.1:9/secret.pdf' }] }, /private, loopback or reserved address/],
      [{ ...base, docs: [{ transfer_method: 'remote_url', url: `${filesUrl}/missing.pdf` }] }, /failed with HTTP 404/],
      [{ ...base, docs: [{ transfer_method: 'remote_url', url: `${filesUrl}/big.pdf` }] }, /over the limit of 1048576 bytes/],
      [{ ...base, docs: [{ transfer_method: 'ftp', url: 'x' }] }, /transfer_method must be local_file or remote_url/],
      [{ ...base, docs: { transfer_method: 'local_file', upload_file_id: mine } }, /^docs must be a list of file references$/],
    ];
    for (const [inputs, message] of cases) {
      const r = await post(t, { user: 'alice', inputs, action: 'approve' });
      const body = await r.json();
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(body.code).toBe('invalid_form_data');
      expect(body.message).toMatch(message);
    }
    expect((await fetch(`${s.api}/form/human_input/${t}`, { headers: auth() })).status).toBe(200);
    expect(resumer.resumed).toEqual([]);

    // Fixed: the same token accepts the corrected submission, with a local and a remote file.
    const ok = await post(t, { user: 'alice', inputs: { ...base, docs: [base.docs[0], { transfer_method: 'remote_url', url: `${filesUrl}/redirect`, type: 'document' }] }, action: 'approve' });
    expect(ok.status).toBe(200);
    expect(await ok.text()).toBe('{}');
    expect(resumer.resumed).toHaveLength(1);
  });

  it('success closes the form: 412 afterwards, the resumed node gets outputs, the filled event and the action handle', async () => {
    const { runId, decision } = await openForm();
    const t = decision.required.form_token!;
    const doc = await upload('alice', 'spec.md');
    const r = await post(t, { user: 'alice', inputs: { comment: 'Looks good', choice: 'redo', docs: [{ transfer_method: 'local_file', upload_file_id: doc }], extra: 'ignored' }, action: 'reject' });
    expect(r.status).toBe(200);
    expect(resumer.resumed).toEqual([runId]);
    const id = decision.required.form_id;
    expect(await (await fetch(`${s.api}/form/human_input/${t}`, { headers: auth() })).json()).toEqual({
      code: 'human_input_form_submitted',
      message: `This form has already been submitted by another user, form_id=${id}`,
      status: 412,
    });
    expect((await post(t, { user: 'alice', inputs: {}, action: 'approve' })).status).toBe(412);

    const done = await s.runtime.forms.decide(ctx(runId));
    expect(done.type).toBe('completed');
    if (done.type !== 'completed') return;
    expect(done.handle).toBe('reject');
    expect(done.outputs.__action_id).toBe('reject');
    expect(done.outputs.__action_value).toBe('Reject');
    expect(done.outputs.__rendered_content).toBe('# Review for Ada\n\nComment: Looks good\nDecision: redo\nFiles: [1 files]');
    expect(done.outputs).not.toHaveProperty('extra');
    expect((done.outputs.docs as { filename: string }[])[0]!.filename).toBe('spec.md');
    expect(done.filled).toMatchObject({ node_id: 'review', node_title: 'Review', action_id: 'reject', action_text: 'Reject', rendered_content: done.outputs.__rendered_content });
  });

  it('concurrent submits of one token: exactly one 200, 412 for the rest, one resume', async () => {
    const { decision } = await openForm({ ...NODE_DATA, inputs: [{ type: 'paragraph', output_variable_name: 'comment' }] });
    const t = decision.required.form_token!;
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => post(t, { user: `u${i}`, inputs: { comment: `c${i}` }, action: 'approve' })));
    const statuses = results.map((r) => r.status).sort();
    expect(statuses).toEqual([200, 412, 412, 412, 412, 412, 412, 412]);
    expect(resumer.resumed).toHaveLength(1);
  });
});

describe('timeouts and closing', () => {
  it('past expiration_time: 412 expired, the scanner resumes along __timeout exactly once', async () => {
    const { runId, decision } = await openForm();
    clock.advance(3_600_000 + 1000);
    const r = await fetch(`${s.api}/form/human_input/${decision.required.form_token}`, { headers: auth() });
    expect(r.status).toBe(412);
    expect(await r.json()).toEqual({ code: 'human_input_form_expired', message: `This form has expired, form_id=${decision.required.form_id}`, status: 412 });
    await s.runtime.forms.scanTimeouts();
    await s.runtime.forms.scanTimeouts();
    expect(resumer.resumed.filter((id) => id === runId)).toEqual([runId]);
    const d = await s.runtime.forms.decide(ctx(runId));
    expect(d.type).toBe('timeout');
    if (d.type !== 'timeout') return;
    expect(d.handle).toBe('__timeout');
    expect(d.outputs).toMatchObject({ __action_id: '', __action_value: '', comment: 'Ada' });
    expect(d.timeout).toEqual({ node_id: 'review', node_title: 'Review', expiration_time: decision.required.expiration_time });
    expect((await post(decision.required.form_token!, { user: 'u', inputs: {}, action: 'approve' })).status).toBe(412);
  });

  it('past the global timeout the run is stopped, never resumed', async () => {
    const { runId } = await openForm({ ...NODE_DATA, timeout: 30, timeout_unit: 'day' });
    clock.advance(7 * 86_400_000 + 1000);
    await s.runtime.forms.scanTimeouts();
    expect(resumer.stopped).toContainEqual({ runId, reason: 'Human input global timeout at node review' });
    expect(resumer.resumed).not.toContain(runId);
  });

  it('closing a run’s forms (stop while paused) makes them unusable', async () => {
    const { runId, decision } = await openForm();
    await s.runtime.forms.closeForms(runId);
    expect((await fetch(`${s.api}/form/human_input/${decision.required.form_token}`, { headers: auth() })).status).toBe(412);
    expect((await post(decision.required.form_token!, { user: 'u', inputs: {}, action: 'approve' })).status).toBe(412);
  });
});
