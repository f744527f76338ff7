import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { stringify, parse } from 'yaml';
import { startServer, type TestServer } from '../helpers/server.js';
import { dataFrames, parseSse } from '../helpers/sse.js';
import { endNode, startNode, workflowDsl, type NodeSpec } from '../helpers/workflow-dsl.js';
import { MASKED_SECRET, SecretMask } from '../../src/runs/secret-mask.js';

const SECRET = 'sk-SUPERSECRET-0123456789';

let s: TestServer;
let upstream: Server;
let base = '';
const seen: IncomingHttpHeaders[] = [];

beforeAll(async () => {
  upstream = createServer((req, res) => {
    seen.push(req.headers);
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ok: true }));
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  s = await startServer({ env: { SSRF_ALLOW_HOSTS: '127.0.0.1' } });
});
afterAll(async () => {
  await s?.close();
  upstream?.closeAllConnections();
  await new Promise((r) => upstream?.close(r));
});

const http = (id: string): NodeSpec => ({
  id,
  type: 'http-request',
  method: 'get',
  url: `${base}/${id}`,
  authorization: { type: 'no-auth' },
  headers: 'X-Key:{{#env.api_key#}}',
  params: '',
  body: { type: 'none', data: [] },
  timeout: { connect: 5, read: 5, write: 5 },
});
const form: NodeSpec = {
  id: 'review',
  type: 'human-input',
  delivery_methods: [{ type: 'webapp', enabled: true, config: {} }],
  form_content: 'Go on? {{#$output.note#}}',
  inputs: [{ type: 'paragraph', output_variable_name: 'note' }],
  user_actions: [{ id: 'go', title: 'Go', button_style: 'primary' }],
  timeout: 1,
  timeout_unit: 'day',
};

function dsl(): string {
  const doc = parse(
    workflowDsl(
      [startNode([]), http('before'), form, http('after'), endNode({ status: ['after', 'status_code'], echoed: ['env', 'api_key'] })],
      [['start', 'before'], ['before', 'review'], ['review', 'after', 'go'], ['after', 'end']],
    ),
  );
  doc.workflow.environment_variables = [
    { name: 'api_key', value_type: 'secret', value: SECRET, id: 'e1' },
    { name: 'region', value_type: 'string', value: 'eu', id: 'e2' },
  ];
  return stringify(doc);
}

describe('an environment variable declared `value_type: secret`', () => {
  it('is stored sealed, masked in streamed and stored events and the snapshot, and still works after a pause', async () => {
    const { apiKey, appId } = await s.importApp(dsl());
    const db = s.runtime.store.db;
    // 1. Stored sealed: the app row does not hold the value.
    const row = await db.selectFrom('apps').select('dsl').where('id', '=', appId).executeTakeFirstOrThrow();
    expect(row.dsl).not.toContain(SECRET);
    expect(row.dsl).toContain('dovetail-sealed:v1:');
    expect(row.dsl).toContain('"value":"eu"');

    // 2. The run reaches the form; the streamed events mask the header value.
    const r = await fetch(`${s.api}/workflows/run`, { method: 'POST', headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ inputs: {}, response_mode: 'streaming', user: 'u' }) });
    const streamed = await r.text();
    expect(streamed).not.toContain(SECRET);
    const events = dataFrames(parseSse(streamed)) as { event: string; workflow_run_id: string; data: Record<string, unknown> }[];
    const before = events.find((e) => e.event === 'node_finished' && e.data.node_id === 'before')!;
    expect(JSON.stringify(before.data.process_data)).toContain(`"X-Key":"${MASKED_SECRET}"`);
    expect(seen.at(-1)!['x-key']).toBe(SECRET);
    const runId = events[0]!.workflow_run_id;
    const token = String(events.find((e) => e.event === 'human_input_required')!.data.form_token);

    // 3. The paused run's snapshot names the variable instead of holding its value.
    const snap = await db.selectFrom('workflow_run_snapshots').select('state').where('run_id', '=', runId).executeTakeFirstOrThrow();
    expect(snap.state).not.toContain(SECRET);
    expect(snap.state).toContain('dovetail-secret:api_key');

    // 4. Resumed from that snapshot, the next node sends the real value again.
    const submit = await fetch(`${s.api}/form/human_input/${token}`, { method: 'POST', headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ inputs: { note: 'yes' }, action: 'go', user: 'u' }) });
    expect(submit.status).toBe(200);
    let status = '';
    for (let i = 0; i < 200 && status !== 'succeeded' && status !== 'failed'; i++) {
      status = (await (await fetch(`${s.api}/workflows/run/${runId}`, { headers: { authorization: `Bearer ${apiKey}` } })).json()).status;
      if (status !== 'succeeded') await new Promise((res) => setTimeout(res, 50));
    }
    expect(status).toBe('succeeded');
    expect(seen.map((h) => h['x-key'])).toEqual([SECRET, SECRET]);

    // 5. No stored event of the run holds the value.
    const stored = await db.selectFrom('workflow_run_events').select('payload').where('run_id', '=', runId).execute();
    expect(stored.length).toBeGreaterThan(5);
    expect(stored.map((e) => e.payload).join('')).not.toContain(SECRET);
    const snapAfter = await db.selectFrom('workflow_run_snapshots').select('state').where('run_id', '=', runId).executeTakeFirstOrThrow();
    expect(snapAfter.state).not.toContain(SECRET);
  });

  it('SecretMask: replaces values in strings only, longest first, and the reviver restores them', () => {
    const m = new SecretMask({ a: 'abc123', b: 'abc123xyz' });
    const value = { 'abc123': 'key abc123xyz and abc123', list: ['abc123'] };
    expect(JSON.parse(JSON.stringify(value, m.eventReplacer))).toEqual({ abc123: `key ${MASKED_SECRET} and ${MASKED_SECRET}`, list: [MASKED_SECRET] });
    const snap = JSON.stringify(value, m.snapshotReplacer);
    expect(snap).not.toContain('abc123xyz');
    expect(JSON.parse(snap, m.reviver)).toEqual(value);
  });
});
