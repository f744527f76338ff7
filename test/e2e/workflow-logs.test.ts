import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, testDialect, type TestServer } from '../helpers/server.js';
import { example } from '../helpers/fixtures.js';
import { validateResponse } from '../helpers/openapi.js';

let s: TestServer;
let key: string;
const runIds: string[] = [];

const headers = (k = key) => ({ authorization: `Bearer ${k}`, 'content-type': 'application/json' });
const logs = async (query = '', k = key) => {
  const r = await fetch(`${s.api}/workflows/logs${query}`, { headers: headers(k) });
  return { status: r.status, body: await r.json() };
};

beforeAll(async () => {
  s = await startServer();
  ({ apiKey: key } = await s.importApp(example('workflow-branching.yml')));
  // Four runs: three users, two tones, one run stopped after it finished (stays succeeded).
  for (const [name, tone, user] of [['Ada', 'formal', 'u-1'], ['Bob_%', 'casual', 'u-2'], ['Cy', 'formal', 'u-1'], ['Dee', 'casual', 'u-3']]) {
    const r = await fetch(`${s.api}/workflows/run`, { method: 'POST', headers: headers(), body: JSON.stringify({ inputs: { name, tone }, user, response_mode: 'blocking' }) });
    runIds.push((await r.json()).workflow_run_id);
    await new Promise((res) => setTimeout(res, 5));
  }
});
afterAll(async () => s?.close());

describe('GET /workflows/logs', () => {
  it('lists the runs newest first with a total, in Dify\'s shape', async () => {
    const { status, body } = await logs();
    expect(status).toBe(200);
    validateResponse('/workflows/logs', 'get', 200, body);
    expect(body).toMatchObject({ page: 1, limit: 20, total: 4, has_more: false });
    expect(body.data.map((d: { id: string }) => d.id)).toEqual([...runIds].reverse());
    expect(body.data[0]).toMatchObject({
      workflow_run: { id: runIds[3], status: 'succeeded', error: null, triggered_from: 'app-run' },
      created_from: 'service-api',
      created_by_role: 'end_user',
      created_by_account: null,
      created_by_end_user: { type: 'service_api', session_id: 'u-3', is_anonymous: false },
    });
    expect(body.data[0].workflow_run.total_steps).toBeGreaterThan(0);
  });

  it('pages by page and limit', async () => {
    const p1 = (await logs('?limit=3')).body;
    const p2 = (await logs('?limit=3&page=2')).body;
    expect(p1).toMatchObject({ total: 4, has_more: true });
    expect(p2).toMatchObject({ page: 2, total: 4, has_more: false });
    expect([...p1.data, ...p2.data].map((d: { id: string }) => d.id)).toEqual([...runIds].reverse());
  });

  it('filters by status, session, keyword (literal, case-insensitive) and time', async () => {
    expect((await logs('?status=failed')).body.total).toBe(0);
    expect((await logs('?status=succeeded')).body.total).toBe(4);
    expect((await logs('?created_by_end_user_session_id=u-1')).body.data.map((d: { id: string }) => d.id)).toEqual([runIds[2], runIds[0]]);
    expect((await logs('?keyword=ADA')).body.data.map((d: { id: string }) => d.id)).toEqual([runIds[0]]);
    // `_` and `%` in a keyword are literal characters, not wildcards.
    expect((await logs(`?keyword=${encodeURIComponent('b_%')}`)).body.data.map((d: { id: string }) => d.id)).toEqual([runIds[1]]);
    expect((await logs('?keyword=a_a')).body.total).toBe(0);
    const future = new Date(Date.now() + 60_000).toISOString();
    expect((await logs(`?created_at__after=${future}`)).body.total).toBe(0);
    expect((await logs(`?created_at__before=${future}`)).body.total).toBe(4);
  });

  it('bad parameters are 400 invalid_param naming the field; other app modes are refused', async () => {
    for (const [q, field] of [['?status=done', 'status'], ['?limit=0', 'limit'], ['?page=0', 'page'], ['?created_at__before=yesterday', 'created_at__before'], ['?created_by_account=nobody@example.com', 'created_by_account']]) {
      const r = await logs(q);
      expect(r.status, q).toBe(400);
      expect(r.body.code).toBe('invalid_param');
      expect(r.body.message).toContain(field);
    }
    // an enum error lists every allowed value (Dify's WorkflowExecutionStatus), not just the first
    expect((await logs('?status=done')).body.message).toBe('status must be one of: "succeeded", "failed", "stopped", "partial-succeeded", "paused", "running"');
    expect((await logs('?status=running')).status).toBe(200);
    // PostgreSQL cannot store or compare NUL characters: a clear 400 there, never a 500.
    const nul = await logs('?keyword=a%00b');
    expect(nul.status).toBe(testDialect() === 'postgres' ? 400 : 200);
    const chat = await s.importApp(example('chat-helper.yml'));
    const r = await logs('', chat.apiKey);
    expect(r.status).toBe(400);
    expect(r.body.code).toBe('not_workflow_app');
  });
});

describe('POST /workflows/{workflow_id}/run', () => {
  it('runs the app\'s published workflow by its id; other ids are 404, malformed ones 400', async () => {
    const detail = await (await fetch(`${s.api}/workflows/run/${runIds[0]}`, { headers: headers() })).json();
    const run = (id: string) =>
      fetch(`${s.api}/workflows/${id}/run`, { method: 'POST', headers: headers(), body: JSON.stringify({ inputs: { name: 'Eve', tone: 'casual' }, user: 'u-9' }) });
    const ok = await run(detail.workflow_id);
    expect(ok.status).toBe(200);
    const body = await ok.json();
    validateResponse('/workflows/{workflow_id}/run', 'post', 200, body);
    expect(body.data.status).toBe('succeeded');
    const other = await run('00000000-0000-4000-8000-000000000000');
    expect(other.status).toBe(404);
    expect(await other.json()).toEqual({ code: 'not_found', message: 'Workflow not found with id: 00000000-0000-4000-8000-000000000000', status: 404 });
    const bad = await run('latest');
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual({ code: 'bad_request', message: "Invalid workflow_id format: 'latest'. ", status: 400 });
  });
});
