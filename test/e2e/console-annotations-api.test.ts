import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openAiChatApp } from '../helpers/apps.js';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { createMember, memberClient, type ConsoleClient } from '../helpers/console.js';

/**
 * The console's annotation API (`/console/api/apps/{id}/annotations…`) over real HTTP on the test's
 * database: "improve this answer" from a message made through the Service API and the next
 * identical question answered from it, hit history, reply settings with the job's progress, CSV
 * import (multipart) and export (a download), roles, CSRF and workspaces kept apart.
 */

const chatApp = openAiChatApp;

let fake: FakeOpenAI;
let s: TestServer;
let appId: string;
let key: string;
let editor: ConsoleClient;
let viewer: ConsoleClient;
let stranger: ConsoleClient;

beforeAll(async () => {
  fake = await startFakeOpenAI();
  s = await startServer({ env: { OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: fake.baseUrl, EMBEDDINGS_BASE_URL: fake.baseUrl } });
  ({ appId, apiKey: key } = await s.importApp(chatApp('Support')));
  editor = await memberClient(s, { name: 'Eddie', email: 'eddie@example.test', role: 'editor' });
  viewer = await memberClient(s, { name: 'Vera', email: 'vera@example.test', role: 'viewer' });
  await createMember(s, { name: 'Otto', email: 'otto@example.test', role: 'owner', workspace: 'Other team' });
  stranger = await memberClient(s, { name: 'Olga', email: 'olga@example.test', role: 'owner', workspace: 'Other team' });
}, 120_000);
afterAll(async () => {
  await s?.close();
  await fake?.close();
});

async function chat(query: string): Promise<{ answer: string; message_id: string; metadata: Record<string, unknown> }> {
  const r = await fetch(`${s.api}/chat-messages`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ query, inputs: {}, user: 'customer', response_mode: 'blocking' }),
  });
  expect(r.status).toBe(200);
  return r.json();
}

async function until<T>(probe: () => Promise<T | undefined>): Promise<T> {
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** A multipart CSV upload with the member's cookie and CSRF token. */
async function upload(c: ConsoleClient, path: string, csv: string, csrf = true): Promise<{ status: number; body: Record<string, unknown> }> {
  const fd = new FormData();
  fd.append('file', new Blob([csv], { type: 'text/csv' }), 'annotations.csv');
  const r = await fetch(`${s.url}/console/api${path}`, { method: 'POST', headers: { cookie: c.cookie, ...(csrf ? { 'x-csrf-token': c.csrfToken } : {}) }, body: fd });
  return { status: r.status, body: (await r.json()) as Record<string, unknown> };
}

describe('console annotations', () => {
  it('improves an answer: the next identical question is answered from the annotation, and its hit is in the history', async () => {
    const first = await chat('Can I return a gift?');
    expect(first.answer).toContain('echo:');

    // a viewer may read but not write
    expect((await viewer.post(`/apps/${appId}/annotations`, { message_id: first.message_id, answer: 'Yes, within 30 days.' })).status).toBe(403);
    // no CSRF token: refused
    expect((await editor.post(`/apps/${appId}/annotations`, { message_id: first.message_id, answer: 'x' }, { csrf: false })).status).toBe(403);

    const made = await editor.post<{ id: string; question: string; answer: string; message_id: string }>(`/apps/${appId}/annotations`, { message_id: first.message_id, answer: 'Yes, within 30 days.' });
    expect(made.status).toBe(201);
    expect(made.body).toMatchObject({ question: 'Can I return a gift?', answer: 'Yes, within 30 days.', message_id: first.message_id, hit_count: 0 });
    expect((await viewer.get(`/apps/${appId}/messages/${first.message_id}/annotation`)).body).toEqual({
      message: { id: first.message_id, query: 'Can I return a gift?', answer: first.answer },
      annotation: { id: made.body.id, question: 'Can I return a gift?', answer: 'Yes, within 30 days.', hit_count: 0, created_at: expect.any(Number) },
    });
    expect((await stranger.get(`/apps/${appId}/messages/${first.message_id}/annotation`)).status).toBe(404);

    // reply settings: off, then on with the job's progress
    let setting = (await viewer.get<Record<string, any>>(`/apps/${appId}/annotation-setting`)).body;
    expect(setting).toMatchObject({ enabled: false, job: null, progress: { embedded: 0, total: 1 } });
    expect(setting.embedding_models.map((m: { embedding_model_name: string }) => m.embedding_model_name)).toContain('universal-sentence-encoder-lite');
    expect((await viewer.post(`/apps/${appId}/annotation-reply/enable`, { score_threshold: 0.9, embedding_provider_name: 'openai', embedding_model_name: 'text-embedding-3-small' })).status).toBe(403);
    const bad = await editor.post(`/apps/${appId}/annotation-reply/enable`, { score_threshold: 2, embedding_provider_name: 'openai', embedding_model_name: 'text-embedding-3-small' });
    expect(bad).toMatchObject({ status: 400, body: { code: 'invalid_param', message: expect.stringContaining('score_threshold') } });
    const job = await editor.post<{ job_id: string }>(`/apps/${appId}/annotation-reply/enable`, { score_threshold: 0.9, embedding_provider_name: 'openai', embedding_model_name: 'text-embedding-3-small' });
    expect(job.status).toBe(200);
    setting = await until(async () => {
      const b = (await viewer.get<Record<string, any>>(`/apps/${appId}/annotation-setting`)).body;
      return b.job?.job_status === 'completed' ? b : undefined;
    });
    expect(setting).toMatchObject({ enabled: true, score_threshold: 0.9, embedding_model: { embedding_model_name: 'text-embedding-3-small' }, job: { job_id: job.body.job_id, action: 'enable' }, progress: { embedded: 1, total: 1 } });

    const next = await chat('Can I return a gift?');
    expect(next.answer).toBe('Yes, within 30 days.');

    const listed = await viewer.get<{ data: { id: string; hit_count: number }[]; total: number }>(`/apps/${appId}/annotations?keyword=gift`);
    expect(listed.body).toMatchObject({ total: 1, data: [{ id: made.body.id, hit_count: 1 }] });
    const hits = await viewer.get<{ data: Record<string, unknown>[]; total: number }>(`/apps/${appId}/annotations/${made.body.id}/hit-histories`);
    expect(hits.body.total).toBe(1);
    expect(hits.body.data[0]).toMatchObject({ message_id: next.message_id, question: 'Can I return a gift?', match: 'Can I return a gift?', response: 'Yes, within 30 days.', source: 'api' });
    expect(hits.body.data[0]!.score).toBeGreaterThanOrEqual(0.9);

    // edit and delete: editors only
    expect((await viewer.request('PUT', `/apps/${appId}/annotations/${made.body.id}`, { question: 'q', answer: 'a' })).status).toBe(403);
    const edited = await editor.request('PUT', `/apps/${appId}/annotations/${made.body.id}`, { question: 'Can I return a gift?', answer: 'Yes, within 60 days.' });
    expect(edited).toMatchObject({ status: 200, body: { answer: 'Yes, within 60 days.' } });
    expect((await viewer.delete(`/apps/${appId}/annotations/${made.body.id}`)).status).toBe(403);

    // another workspace sees none of it
    expect((await stranger.get(`/apps/${appId}/annotations`)).status).toBe(404);
    expect((await stranger.get(`/apps/${appId}/annotations/${made.body.id}/hit-histories`)).status).toBe(404);
    expect((await stranger.post(`/apps/${appId}/annotations`, { message_id: first.message_id, answer: 'x' })).status).toBe(404);

    expect((await editor.delete(`/apps/${appId}/annotations/${made.body.id}`)).status).toBe(204);
    expect((await viewer.get<{ total: number }>(`/apps/${appId}/annotations`)).body.total).toBe(0);
  });

  it('imports CSV (multipart) and exports it as a download that imports back', async () => {
    const target = (await s.importApp(chatApp('CSV'))).appId;
    expect((await upload(viewer, `/apps/${target}/annotations/import`, 'question,answer\nq,a\n')).status).toBe(403);
    expect((await upload(editor, `/apps/${target}/annotations/import`, 'question,answer\nq,a\n', false)).status).toBe(403);
    const refused = await upload(editor, `/apps/${target}/annotations/import`, 'question,answer\nq1,a1\nq2,\n');
    expect(refused).toMatchObject({ status: 400, body: { code: 'invalid_param', message: 'file row 3: the answer (second column) is empty' } });
    const ok = await upload(editor, `/apps/${target}/annotations/import`, 'question,answer\n"Opening hours?","9 to 5, weekdays"\nParking?,Free\n');
    expect(ok).toEqual({ status: 200, body: { imported: 2 } });

    const r = await fetch(`${s.url}/console/api/apps/${target}/annotations/export`, { headers: { cookie: viewer.cookie } });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toContain('text/csv');
    expect(r.headers.get('content-disposition')).toContain('attachment');
    expect(r.headers.get('x-annotations-exported')).toBe('2');
    const bytes = Buffer.from(await r.arrayBuffer());
    // a byte-order mark first (fetch's text() would hide it), then the rows newest first
    expect([...bytes.subarray(0, 3)]).toEqual([0xef, 0xbb, 0xbf]);
    const csv = bytes.subarray(3).toString('utf8');
    expect(csv).toBe('question,answer\r\nParking?,Free\r\nOpening hours?,"9 to 5, weekdays"\r\n');
    const copy = (await s.importApp(chatApp('CSV copy'))).appId;
    expect(await upload(editor, `/apps/${copy}/annotations/import`, bytes.toString('utf8'))).toEqual({ status: 200, body: { imported: 2 } });
    expect((await fetch(`${s.url}/console/api/apps/${target}/annotations/export`, { headers: { cookie: stranger.cookie } })).status).toBe(404);
    expect((await fetch(`${s.url}/console/api/apps/${target}/annotations/export`)).status).toBe(401);
  });
});
