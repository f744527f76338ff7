import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.js';
import { createMember, memberClient, type ConsoleClient } from '../helpers/console.js';

/**
 * The console's knowledge API (`/console/api/datasets…`, `/console/api/dataset-keys`) over real
 * HTTP on the test's database: upload a file (the Service API's form and parsers) and watch its
 * progress reach `completed` in the documents list, segments read, searched, edited, disabled,
 * hit testing, the knowledge keys (admins; shown once, masked after, revoked), roles, CSRF and
 * workspaces kept apart.
 */

let s: TestServer;
let dsId: string;
let admin: ConsoleClient;
let editor: ConsoleClient;
let viewer: ConsoleClient;
let stranger: ConsoleClient;

beforeAll(async () => {
  s = await startServer();
  const ws = await s.runtime.apps.workspaceId();
  dsId = (await s.runtime.datasets.create(ws, { name: 'Handbook', indexingTechnique: 'economy', createdBy: 'test' })).id;
  admin = await memberClient(s, { name: 'Ada', email: 'ada@example.test', role: 'admin' });
  editor = await memberClient(s, { name: 'Eddie', email: 'eddie@example.test', role: 'editor' });
  viewer = await memberClient(s, { name: 'Vera', email: 'vera@example.test', role: 'viewer' });
  await createMember(s, { name: 'Otto', email: 'otto@example.test', role: 'owner', workspace: 'Other team' });
  stranger = await memberClient(s, { name: 'Olga', email: 'olga@example.test', role: 'owner', workspace: 'Other team' });
}, 120_000);
afterAll(async () => s?.close());

async function uploadDoc(c: ConsoleClient, name: string, text: string, csrf = true): Promise<{ status: number; body: Record<string, any> }> {
  const fd = new FormData();
  fd.append('data', JSON.stringify({ indexing_technique: 'economy', process_rule: { mode: 'custom', rules: { pre_processing_rules: [], segmentation: { separator: '\n\n', max_tokens: 60 } } } }));
  fd.append('file', new Blob([text], { type: 'text/markdown' }), name);
  const r = await fetch(`${s.url}/console/api/datasets/${dsId}/documents`, { method: 'POST', headers: { cookie: c.cookie, ...(csrf ? { 'x-csrf-token': c.csrfToken } : {}) }, body: fd });
  return { status: r.status, body: (await r.json()) as Record<string, any> };
}

describe('console knowledge', () => {
  it('uploads a file, whose progress reaches completed in the documents list; segments are searched, edited and disabled; hit testing finds it', async () => {
    expect((await viewer.get<{ data: { id: string; name: string }[] }>('/datasets')).body.data.map((d) => d.name)).toEqual(['Handbook']);
    expect((await stranger.get<{ total: number }>('/datasets')).body.total).toBe(0);
    expect((await stranger.get(`/datasets/${dsId}`)).status).toBe(404);
    expect((await viewer.get<{ supported_extensions: string[] }>(`/datasets/${dsId}`)).body.supported_extensions).toEqual(expect.arrayContaining(['pdf', 'docx', 'md', 'csv']));

    const text = '# Leave\n\nEvery employee has 25 days of paid leave.\n\n# Travel\n\nBook trains for trips under four hours.';
    expect((await uploadDoc(viewer, 'policy.md', text)).status).toBe(403);
    expect((await uploadDoc(editor, 'policy.md', text, false)).status).toBe(403);
    const bad = await uploadDoc(editor, 'policy.exe', text);
    expect(bad).toMatchObject({ status: 415, body: { code: 'unsupported_file_type' } });
    const up = await uploadDoc(editor, 'policy.md', text);
    expect(up.status).toBe(200);
    const docId = up.body.document.id as string;

    const done = await (async () => {
      for (;;) {
        const list = (await viewer.get<{ data: Record<string, any>[] }>(`/datasets/${dsId}/documents`)).body.data;
        const d = list.find((x) => x.id === docId)!;
        expect(d.indexing).not.toBeNull();
        if (d.indexing_status === 'completed' || d.indexing_status === 'error') return d;
        await new Promise((r) => setTimeout(r, 40));
      }
    })();
    expect(done).toMatchObject({ name: 'policy.md', indexing_status: 'completed', display_status: 'available', indexing: { id: docId, indexing_status: 'completed', completed_segments: 4, total_segments: 4 } });
    expect((await stranger.get(`/datasets/${dsId}/documents`)).status).toBe(404);

    const segs = await viewer.get<{ data: Record<string, any>[]; total: number }>(`/datasets/${dsId}/documents/${docId}/segments?keyword=leave`);
    expect(segs.body.total).toBe(2);
    const leave = segs.body.data.find((x) => String(x.content).includes('25 days'))!;
    expect((await viewer.request('PATCH', `/datasets/${dsId}/documents/${docId}/segments/${leave.id}`, { enabled: false })).status).toBe(403);
    const off = await editor.request<{ data: Record<string, any> }>('PATCH', `/datasets/${dsId}/documents/${docId}/segments/${leave.id}`, { enabled: false });
    expect(off).toMatchObject({ status: 200, body: { data: { id: leave.id, enabled: false } } });
    expect((await viewer.get<{ total: number }>(`/datasets/${dsId}/documents/${docId}/segments?enabled=false`)).body.total).toBe(1);
    const edited = await editor.request<{ data: Record<string, any> }>('PATCH', `/datasets/${dsId}/documents/${docId}/segments/${leave.id}`, { content: 'Every employee has 30 days of paid leave.', enabled: true });
    expect(edited).toMatchObject({ status: 200, body: { data: { content: 'Every employee has 30 days of paid leave.', enabled: true } } });

    const hits = await viewer.post<{ records: { segment: { id: string; content: string }; score: number }[] }>(`/datasets/${dsId}/hit-testing`, { query: 'paid leave days' });
    expect(hits.status).toBe(200);
    expect(hits.body.records[0]!.segment).toMatchObject({ id: leave.id, content: 'Every employee has 30 days of paid leave.' });
    expect(hits.body.records[0]!.score).toBeGreaterThan(0);
    expect((await viewer.post(`/datasets/${dsId}/hit-testing`, { query: ' ' })).status).toBe(400);
    expect((await stranger.post(`/datasets/${dsId}/hit-testing`, { query: 'leave' })).status).toBe(404);
  });

  it('knowledge keys: admins create one (shown once), list them masked and revoke them; the key works on the Service API until revoked', async () => {
    expect((await editor.get('/dataset-keys')).status).toBe(403);
    expect((await editor.post('/dataset-keys')).status).toBe(403);
    const made = await admin.post<{ id: string; token: string }>('/dataset-keys');
    expect(made.status).toBe(201);
    expect(made.body.token).toMatch(/^dataset-/);
    const listed = await admin.get<{ data: { id: string; token: string }[] }>('/dataset-keys');
    const row = listed.body.data.find((k) => k.id === made.body.id)!;
    expect(row.token).not.toBe(made.body.token);
    expect(made.body.token.startsWith(row.token.replace('…', ''))).toBe(true);
    expect(JSON.stringify(listed.body)).not.toContain(made.body.token);

    const call = () => fetch(`${s.api}/datasets`, { headers: { authorization: `Bearer ${made.body.token}` } });
    expect((await call()).status).toBe(200);
    expect((await stranger.delete(`/dataset-keys/${made.body.id}`)).status).toBe(404);
    expect((await admin.delete(`/dataset-keys/${made.body.id}`, { csrf: false })).status).toBe(403);
    expect((await admin.delete(`/dataset-keys/${made.body.id}`)).status).toBe(204);
    expect((await call()).status).toBe(401);
    expect((await admin.get<{ data: { id: string }[] }>('/dataset-keys')).body.data.map((k) => k.id)).not.toContain(made.body.id);
  });
});
