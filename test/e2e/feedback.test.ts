import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import path from 'node:path';
import { startServer, type TestServer } from '../helpers/server.js';
import { responseErrors, validateResponse } from '../helpers/openapi.js';
import { example, PROJECT_ROOT } from '../helpers/fixtures.js';

const run = promisify(execFile);

let s: TestServer;
let key: string;
let appId: string;

beforeAll(async () => {
  s = await startServer();
  ({ apiKey: key, appId } = await s.importApp(example('completion-writer.yml')));
});
afterAll(async () => s?.close());

const headers = (k = key) => ({ authorization: `Bearer ${k}`, 'content-type': 'application/json' });

/** A stored message from `user` (through the mock example app). */
async function message(user: string, k = key): Promise<string> {
  const r = await fetch(`${s.api}/completion-messages`, { method: 'POST', headers: headers(k), body: JSON.stringify({ inputs: { topic: `t-${user}` }, user }) });
  expect(r.status).toBe(200);
  return (await r.json()).message_id;
}

const feedback = (messageId: string, body: unknown, k = key) =>
  fetch(`${s.api}/messages/${messageId}/feedbacks`, { method: 'POST', headers: headers(k), body: JSON.stringify(body) });

async function list(query = '', k = key): Promise<{ status: number; body: { data: Record<string, unknown>[] } & Record<string, unknown> }> {
  const r = await fetch(`${s.api}/app/feedbacks${query}`, { headers: { authorization: `Bearer ${k}` } });
  return { status: r.status, body: await r.json() };
}

describe('POST /messages/{message_id}/feedbacks', () => {
  it('like creates, dislike updates (content overwritten, also with null), null revokes, null again is 400', async () => {
    const mid = await message('alice');
    const alice = await s.runtime.endUsers.find(appId, 'alice');

    let r = await feedback(mid, { rating: 'like', content: 'great', user: 'alice' });
    expect(r.status).toBe(200);
    const ok = await r.json();
    expect(ok).toEqual({ result: 'success' });
    validateResponse('/messages/{message_id}/feedbacks', 'post', 200, ok);
    let items = (await list('?limit=101')).body.data.filter((f) => f.message_id === mid);
    expect(items).toHaveLength(1);
    const created = items[0]!;
    expect(created).toMatchObject({ app_id: appId, message_id: mid, rating: 'like', content: 'great', from_source: 'user', from_end_user_id: alice!.id, from_account_id: null });
    expect(typeof created.conversation_id).toBe('string');

    await feedback(mid, { rating: 'dislike', content: 'changed my mind', user: 'alice' });
    items = (await list('?limit=101')).body.data.filter((f) => f.message_id === mid);
    expect(items).toHaveLength(1);
    expect(items[0]).toMatchObject({ id: created.id, rating: 'dislike', content: 'changed my mind', created_at: created.created_at });

    await feedback(mid, { rating: 'like', user: 'alice' });
    items = (await list('?limit=101')).body.data.filter((f) => f.message_id === mid);
    expect(items[0]).toMatchObject({ rating: 'like', content: null });
    // an explicit `content: null` is stored and read back as null, not "" (issue 13 item 9)
    await feedback(mid, { rating: 'dislike', content: 'x', user: 'alice' });
    await feedback(mid, { rating: 'dislike', content: null, user: 'alice' });
    items = (await list('?limit=101')).body.data.filter((f) => f.message_id === mid);
    expect(items[0]!.content).toBeNull();
    const stored = await s.runtime.store.db.selectFrom('message_feedbacks').select('content').where('message_id', '=', mid).executeTakeFirstOrThrow();
    expect(stored.content).toBeNull();

    r = await feedback(mid, { rating: null, user: 'alice' });
    expect(r.status).toBe(200);
    expect((await list('?limit=101')).body.data.filter((f) => f.message_id === mid)).toHaveLength(0);

    r = await feedback(mid, { user: 'alice' });
    expect(r.status).toBe(400);
    expect(await r.json()).toEqual({ code: 'invalid_param', message: 'rating cannot be None when feedback not exists', status: 400 });
  });

  it("another user's message, an unknown id and a non-UUID id are 404 not_found", async () => {
    const mid = await message('bob');
    for (const id of [mid, '00000000-0000-4000-8000-000000000000', 'not-a-uuid']) {
      const r = await feedback(id, { rating: 'like', user: id === mid ? 'mallory' : 'bob' });
      expect(r.status).toBe(404);
      expect(await r.json()).toEqual({ code: 'not_found', message: 'Message Not Exists.', status: 404 });
    }
  });

  it("another app's key cannot rate this app's message", async () => {
    const mid = await message('bob');
    const other = await s.importApp(example('completion-writer.yml'));
    const r = await feedback(mid, { rating: 'like', user: 'bob' }, other.apiKey);
    expect(r.status).toBe(404);
  });

  it('bad input: rating, user, JSON, content type', async () => {
    const mid = await message('carol');
    let r = await feedback(mid, { rating: 'love', user: 'carol' });
    expect(r.status).toBe(400);
    let e = await r.json();
    expect(e.code).toBe('invalid_param');
    expect(e.message).toMatch(/^rating must be one of/);
    r = await feedback(mid, { rating: 'like' });
    expect(await r.json()).toEqual({ code: 'invalid_param', message: 'Arg user must be provided.', status: 400 });
    r = await fetch(`${s.api}/messages/${mid}/feedbacks`, { method: 'POST', headers: headers(), body: '{"rating":' });
    expect(r.status).toBe(400);
    expect((await r.json()).code).toBe('bad_request');
    r = await fetch(`${s.api}/messages/${mid}/feedbacks`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: 'rating=like' });
    expect(r.status).toBe(415);
    e = await r.json();
    expect(e.code).toBe('unsupported_media_type');
  });
});

describe('GET /app/feedbacks', () => {
  it('bounds: page ≥ 1, 1 ≤ limit ≤ 101, integers; the message names the parameter', async () => {
    const cases: [string, RegExp][] = [
      ['?page=0', /^page must be greater than or equal to 1$/],
      ['?page=-3', /^page /],
      ['?page=1.5', /^page must be an integer$/],
      ['?page=abc', /^page must be an integer$/],
      ['?limit=0', /^limit must be greater than or equal to 1$/],
      ['?limit=102', /^limit must be less than or equal to 101$/],
      ['?limit=x', /^limit must be an integer$/],
    ];
    for (const [q, message] of cases) {
      const { status, body } = await list(q);
      expect(status, q).toBe(400);
      expect(body.code, q).toBe('invalid_param');
      expect(String(body.message), q).toMatch(message);
    }
    expect((await list('?limit=101')).status).toBe(200);
    expect((await list('?limit=1&page=999')).body).toEqual({ data: [] });
  });

  it('newest first, default limit 20, every FeedbackItem field, matches the spec', async () => {
    const mids: string[] = [];
    for (let i = 0; i < 22; i++) mids.push(await message(`pager-${i}`));
    for (const [i, mid] of mids.entries()) await feedback(mid, { rating: i % 2 ? 'like' : 'dislike', content: `c${i}`, user: `pager-${i}` });
    const { status, body } = await list();
    expect(status).toBe(200);
    validateResponse('/app/feedbacks', 'get', 200, body);
    expect(Object.keys(body)).toEqual(['data']);
    expect(body.data).toHaveLength(20);
    expect(Object.keys(body.data[0]!)).toEqual(['id', 'app_id', 'conversation_id', 'message_id', 'rating', 'content', 'from_source', 'from_end_user_id', 'from_account_id', 'created_at', 'updated_at']);
    for (let i = 1; i < body.data.length; i++) {
      const a = body.data[i - 1]!;
      const b = body.data[i]!;
      const order = String(a.created_at).localeCompare(String(b.created_at)) || String(a.id).localeCompare(String(b.id));
      expect(order).toBeGreaterThan(0);
    }
    expect(body.data[0]!.message_id).toBe(mids.at(-1));
    expect(body.data[0]!.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
  });

  it('the contract check catches a wrong body (so the checks above can fail)', () => {
    expect(responseErrors('/app/feedbacks', 'get', 200, { data: [{ id: 'nope', created_at: 5 }] }).length).toBeGreaterThan(0);
  });

  it('pages read in order see no item twice and skip none while feedback is added concurrently', async () => {
    const app = await s.importApp(example('completion-writer.yml'));
    const mids: string[] = [];
    for (let i = 0; i < 25; i++) mids.push(await message(`p${i}`, app.apiKey));
    for (const [i, mid] of mids.entries()) await feedback(mid, { rating: 'like', user: `p${i}` }, app.apiKey);
    const before = new Set((await list('?limit=101', app.apiKey)).body.data.map((f) => f.id));
    expect(before.size).toBe(25);

    const late: string[] = [];
    for (let i = 0; i < 6; i++) late.push(await message(`late${i}`, app.apiKey));
    const seen: string[] = [];
    for (let page = 1; page <= 4; page++) {
      const { body } = await list(`?page=${page}&limit=7`, app.apiKey);
      seen.push(...body.data.map((f) => String(f.id)));
      // New feedback lands between page reads, in parallel with the next read.
      if (page <= late.length) await Promise.all([feedback(late[page - 1]!, { rating: 'dislike', user: `late${page - 1}` }, app.apiKey), feedback(late[page + 1]!, { rating: 'like', user: `late${page + 1}` }, app.apiKey)]);
    }
    expect(new Set(seen).size).toBe(seen.length);
    expect(new Set(seen)).toEqual(before);

    // A new read from page 1 sees the new feedback first.
    const fresh = await list('?page=1&limit=7', app.apiKey);
    expect(before.has(String(fresh.body.data[0]!.id))).toBe(false);
  });

  it('admin feedback from the CLI appears with from_source admin and from_account_id', { timeout: 120_000 }, async () => {
    const mid = await message('gina');
    await feedback(mid, { rating: 'like', user: 'gina' });
    const env = {
      ...process.env,
      DOVETAIL_DATA_DIR: s.dataDir,
      LOG_LEVEL: 'silent',
      ...(s.config.databaseUrl ? { DATABASE_URL: s.config.databaseUrl, DATABASE_SCHEMA: s.config.databaseSchema ?? '' } : {}),
    };
    // the compiled bin, as users run it
    const cli = path.join(PROJECT_ROOT, 'bin', 'dovetail.js');
    const out = await run(process.execPath, [cli, 'feedback', 'add', '--message', mid, '--rating', 'dislike', '--content', 'too long', '--account', 'ops@example.com', '--json'], { env, cwd: PROJECT_ROOT });
    const printed = JSON.parse(out.stdout);
    expect(printed).toMatchObject({ message_id: mid, rating: 'dislike', content: 'too long', from_source: 'admin', from_end_user_id: null });

    const items = (await list('?limit=101')).body.data.filter((f) => f.message_id === mid);
    expect(items.map((f) => f.from_source).sort()).toEqual(['admin', 'user']);
    const admin = items.find((f) => f.from_source === 'admin')!;
    expect(admin.from_account_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(admin).toMatchObject({ rating: 'dislike', content: 'too long', from_end_user_id: null });
    validateResponse('/app/feedbacks', 'get', 200, { data: items });

    const bad = await run(process.execPath, [cli, 'feedback', 'add', '--message', mid, '--rating', 'meh', '--account', 'ops'], { env, cwd: PROJECT_ROOT }).catch((e: { stderr: string; code: number }) => e);
    expect((bad as { code: number }).code).toBe(1);
    expect((bad as { stderr: string }).stderr).toContain('--rating must be like or dislike');
  });
});
