import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.js';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { dataFrames, parseSse } from '../helpers/sse.js';
import { passport, siteCode, webClient, type WebClient } from '../helpers/web-app.js';
import { PassportService, PASSPORT_KEY } from '../../src/apps/passport-service.js';
import { ServerKeys } from '../../src/infra/server-keys.js';

/** The web app's API (`/api`) for chat apps: passports, the chat core, conversations, isolation. */
const chatApp = (name: string) => `app:
  mode: chat
  name: ${name}
kind: app
version: 0.3.1
model_config:
  model:
    provider: langgenius/openai/openai
    name: gpt-4o-mini
    mode: chat
  pre_prompt: 'You are {{persona}}.'
  opening_statement: Hello there
  suggested_questions: [What can you do?]
  user_input_form:
    - text-input:
        label: Persona
        variable: persona
        required: false
        max_length: 30
`;

let fake: FakeOpenAI;
let s: TestServer;
let appA: { appId: string; apiKey: string };
let appB: { appId: string; apiKey: string };
let codeA: string;
let codeB: string;

beforeAll(async () => {
  fake = await startFakeOpenAI();
  s = await startServer({ env: { OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: fake.baseUrl } });
  appA = await s.importApp(chatApp('Alpha'));
  appB = await s.importApp(chatApp('Beta'));
  codeA = await siteCode(s, appA.appId);
  codeB = await siteCode(s, appB.appId);
});
afterAll(async () => {
  await s?.close();
  await fake?.close();
});
beforeEach(() => {
  fake.behaviour = {};
});

/** Sends a chat message in streaming mode and returns its data frames. */
async function chat(c: WebClient, query: string, conversationId = ''): Promise<Record<string, unknown>[]> {
  const r = await c.send('POST', '/chat-messages', { inputs: {}, query, response_mode: 'streaming', conversation_id: conversationId });
  expect(r.status).toBe(200);
  expect(r.headers.get('content-type')).toContain('text/event-stream');
  return dataFrames(parseSse(await r.text()));
}

describe('passport', () => {
  it('needs X-App-Code; an unknown code is 404; each call is a new end user, user_id the same one', async () => {
    const none = await fetch(`${s.url}/api/passport`);
    expect(none.status).toBe(401);
    expect(await none.json()).toEqual({ code: 'unauthorized', message: 'X-App-Code header is missing.', status: 401 });
    const unknown = await fetch(`${s.url}/api/passport`, { headers: { 'x-app-code': 'AAAAAAAAAAAAAAAA' } });
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { code: string }).code).toBe('not_found');

    const t1 = await passport(s, codeA);
    expect(t1.split('.')).toHaveLength(3);
    const claims = JSON.parse(Buffer.from(t1.split('.')[1]!, 'base64url').toString()) as Record<string, unknown>;
    expect(claims).toMatchObject({ iss: appA.appId, sub: 'Web API Passport', app_id: appA.appId, app_code: codeA });
    const site1 = (await (await webClient(s, codeA, t1)).get('/site').then((r) => r.json())) as { end_user_id: string };
    const site2 = (await (await webClient(s, codeA)).get('/site').then((r) => r.json())) as { end_user_id: string };
    expect(site1.end_user_id).toBe(claims.end_user_id);
    expect(site2.end_user_id).not.toBe(site1.end_user_id);
    const u1 = (await (await webClient(s, codeA, await passport(s, codeA, 'member-7'))).get('/site').then((r) => r.json())) as { end_user_id: string };
    const u2 = (await (await webClient(s, codeA, await passport(s, codeA, 'member-7'))).get('/site').then((r) => r.json())) as { end_user_id: string };
    expect(u2.end_user_id).toBe(u1.end_user_id);
  });

  it('the passport may come as X-App-Passport; none at all is a 401', async () => {
    const t = await passport(s, codeA);
    const r = await fetch(`${s.url}/api/meta`, { headers: { 'x-app-code': codeA, 'x-app-passport': t } });
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({ tool_icons: {} });
    const none = await fetch(`${s.url}/api/meta`, { headers: { 'x-app-code': codeA } });
    expect(none.status).toBe(401);
    expect(await none.json()).toEqual({ code: 'unauthorized', message: 'App token is missing.', status: 401 });
  });

  it('a malformed, tampered, expired or foreign token is a 401 with Dify’s code', async () => {
    const good = await passport(s, codeA);
    const expectUnauthorized = async (token: string, code: string, message: string) => {
      const r = await fetch(`${s.url}/api/site`, { headers: { 'x-app-code': code, authorization: `Bearer ${token}` } });
      expect(r.status).toBe(401);
      expect(await r.json()).toEqual({ code: 'unauthorized', message, status: 401 });
    };
    await expectUnauthorized('not-a-jwt', codeA, 'Invalid token.');
    const [h, p, sig] = good.split('.') as [string, string, string];
    const forged = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(p, 'base64url').toString()), app_id: appB.appId })).toString('base64url');
    await expectUnauthorized(`${h}.${forged}.${sig}`, codeA, 'Invalid token signature.');
    // signed with the server's key two hours ago, good for one hour
    const keys = new ServerKeys({ db: s.runtime.store.db, clock: { now: () => Date.now() }, secretKey: undefined });
    const old = new PassportService({ key: () => keys.key(PASSPORT_KEY), clock: { now: () => Date.now() - 2 * 3600_000 }, ttlSeconds: 3600 });
    const claims = JSON.parse(Buffer.from(p, 'base64url').toString()) as { end_user_id: string };
    const expired = await old.issue({ appId: appA.appId, appCode: codeA, endUserId: claims.end_user_id });
    await expectUnauthorized(expired, codeA, 'Token has expired.');
    // the same key signs a fresh one that works: the expiry, not the key, refused it
    const fresh = await new PassportService({ key: () => keys.key(PASSPORT_KEY), clock: { now: () => Date.now() }, ttlSeconds: 3600 }).issue({ appId: appA.appId, appCode: codeA, endUserId: claims.end_user_id });
    expect((await fetch(`${s.url}/api/site`, { headers: { 'x-app-code': codeA, authorization: `Bearer ${fresh}` } })).status).toBe(200);
    // app B's passport sent for app A
    await expectUnauthorized(await passport(s, codeB), codeA, 'The passport is not for the app X-App-Code names.');
  });

  it('a disabled site gives no passport and answers live tokens "Site is disabled."; a new code retires old tokens', async () => {
    const app = (await s.runtime.apps.find(appB.appId))!;
    const live = await webClient(s, codeB);
    await s.runtime.sites.change(app, { enabled: false });
    try {
      expect((await fetch(`${s.url}/api/passport`, { headers: { 'x-app-code': codeB } })).status).toBe(404);
      const r = await live.get('/site');
      expect(r.status).toBe(400);
      expect(await r.json()).toEqual({ code: 'bad_request', message: 'Site is disabled.', status: 400 });
      const chatR = await live.send('POST', '/chat-messages', { inputs: {}, query: 'hi', response_mode: 'streaming' });
      expect(chatR.status).toBe(400);
    } finally {
      await s.runtime.sites.change(app, { enabled: true });
    }
    expect((await live.get('/site')).status).toBe(200);
    const renewed = await s.runtime.sites.change(app, { resetCode: true });
    codeB = renewed.code;
    const r = await fetch(`${s.url}/api/site`, { headers: { authorization: `Bearer ${live.token}` } });
    expect(r.status).toBe(400);
    expect(await r.json()).toEqual({ code: 'bad_request', message: 'Site URL is no longer valid.', status: 400 });
    expect((await (await webClient(s, codeB)).get('/site')).status).toBe(200);
  });
});

describe('site, parameters, meta, access mode', () => {
  it('answer Dify’s web shapes', async () => {
    const c = await webClient(s, codeA);
    const site = (await (await c.get('/site')).json()) as Record<string, unknown>;
    expect(Object.keys(site)).toEqual(['app_id', 'end_user_id', 'enable_site', 'site', 'model_config', 'plan', 'can_replace_logo', 'custom_config']);
    expect(site).toMatchObject({ app_id: appA.appId, enable_site: true, model_config: null, can_replace_logo: false, custom_config: null });
    expect(site.site).toMatchObject({ title: 'Alpha', prompt_public: false, show_workflow_steps: true, default_language: 'en-US' });
    const params = (await (await c.get('/parameters')).json()) as Record<string, unknown>;
    const v1 = (await (await fetch(`${s.api}/parameters`, { headers: { authorization: `Bearer ${appA.apiKey}` } })).json()) as Record<string, unknown>;
    expect(params).toEqual(v1);
    expect(params).toMatchObject({ opening_statement: 'Hello there', suggested_questions: ['What can you do?'] });
    const mode = await fetch(`${s.url}/api/webapp/access-mode?appCode=${codeA}`);
    expect(await mode.json()).toEqual({ accessMode: 'public' });
  });
});

describe('chat, conversations and messages', () => {
  it('streams Dify’s frames, lists, renames, pins, rates and deletes the end user’s conversation', async () => {
    fake.behaviour = { reply: 'Hi from the model', chunkSize: 3 };
    const c = await webClient(s, codeA);
    const frames = await chat(c, 'Hello, who are you?');
    expect(frames.filter((f) => f.event === 'message').length).toBeGreaterThan(1);
    const end = frames.at(-1)!;
    expect(end.event).toBe('message_end');
    const conversationId = end.conversation_id as string;
    const messageId = end.message_id as string;
    expect(frames.filter((f) => f.event === 'message').map((f) => f.answer).join('')).toBe('Hi from the model');

    const list = (await (await c.get('/conversations?limit=20')).json()) as { data: { id: string; name: string }[]; has_more: boolean };
    expect(list.data.map((x) => x.id)).toEqual([conversationId]);
    const msgs = (await (await c.get(`/messages?conversation_id=${conversationId}`)).json()) as { data: { id: string; answer: string; query: string }[] };
    expect(msgs.data).toMatchObject([{ id: messageId, query: 'Hello, who are you?', answer: 'Hi from the model' }]);

    // a second message in the same conversation
    await chat(c, 'And again', conversationId);
    const renamed = await c.send('POST', `/conversations/${conversationId}/name`, { name: 'Greetings' });
    expect(((await renamed.json()) as { name: string }).name).toBe('Greetings');
    const auto = await c.send('POST', `/conversations/${conversationId}/name`, { auto_generate: true });
    expect(((await auto.json()) as { name: string }).name).toBe('Hello, who are you?');

    // a second conversation, then pins: pinned=true only the pinned one, pinned=false the others
    const second = (await chat(c, 'Another topic')).at(-1)!.conversation_id as string;
    expect(await (await c.send('PATCH', `/conversations/${conversationId}/pin`)).json()).toEqual({ result: 'success' });
    expect((await c.send('PATCH', `/conversations/${conversationId}/pin`)).status).toBe(200);
    const pinned = (await (await c.get('/conversations?pinned=true')).json()) as { data: { id: string }[] };
    const others = (await (await c.get('/conversations?pinned=false')).json()) as { data: { id: string }[] };
    const all = (await (await c.get('/conversations')).json()) as { data: { id: string }[] };
    expect(pinned.data.map((x) => x.id)).toEqual([conversationId]);
    expect(others.data.map((x) => x.id)).toEqual([second]);
    expect(all.data.map((x) => x.id).sort()).toEqual([conversationId, second].sort());
    expect(await (await c.send('PATCH', `/conversations/${conversationId}/unpin`)).json()).toEqual({ result: 'success' });
    expect(((await (await c.get('/conversations?pinned=true')).json()) as { data: unknown[] }).data).toEqual([]);

    // feedback from the web app is the app's feedback (the Service API lists it)
    const fb = await c.send('POST', `/messages/${messageId}/feedbacks`, { rating: 'like', content: 'nice' });
    expect(await fb.json()).toEqual({ result: 'success' });
    const feedbacks = (await (await fetch(`${s.api}/app/feedbacks`, { headers: { authorization: `Bearer ${appA.apiKey}` } })).json()) as { data: { message_id: string; rating: string; from_end_user_id: string }[] };
    const site = (await (await c.get('/site')).json()) as { end_user_id: string };
    expect(feedbacks.data).toContainEqual(expect.objectContaining({ message_id: messageId, rating: 'like', from_end_user_id: site.end_user_id }));
    const rated = (await (await c.get(`/messages?conversation_id=${conversationId}`)).json()) as { data: { id: string; feedback: unknown }[] };
    expect(rated.data.find((m) => m.id === messageId)!.feedback).toEqual({ rating: 'like' });
    expect((await c.get('/app/feedbacks')).status).toBe(404);

    const del = await c.send('DELETE', `/conversations/${second}`);
    expect(del.status).toBe(204);
    expect(((await (await c.get('/conversations')).json()) as { data: { id: string }[] }).data.map((x) => x.id)).toEqual([conversationId]);
  });

  it('stop answers success for the end user’s task', async () => {
    fake.behaviour = { reply: 'a b c d e f g h', chunkSize: 1, delayMs: 30 };
    const c = await webClient(s, codeA);
    const r = await c.send('POST', '/chat-messages', { inputs: {}, query: 'long', response_mode: 'streaming' });
    const reader = r.body!.getReader();
    let text = '';
    while (!text.includes('task_id')) text += new TextDecoder().decode((await reader.read()).value);
    const taskId = /"task_id":\s*"([^"]+)"/.exec(text)![1]!;
    // Dify's web app sends it without a body
    const stop = await fetch(`${s.url}/api/chat-messages/${taskId}/stop`, { method: 'POST', headers: c.headers(true) });
    expect(await stop.json()).toEqual({ result: 'success' });
    while (!(await reader.read()).done);
  });
});

describe('isolation', () => {
  it('another end user, and another app’s end user, never see a conversation or its messages', async () => {
    fake.behaviour = { reply: 'private answer' };
    const owner = await webClient(s, codeA);
    const end = (await chat(owner, 'my secret')).at(-1)!;
    const conv = end.conversation_id as string;
    const msg = end.message_id as string;

    const stranger = await webClient(s, codeA);
    expect(((await (await stranger.get('/conversations')).json()) as { data: unknown[] }).data).toEqual([]);
    for (const r of [
      await stranger.get(`/messages?conversation_id=${conv}`),
      await stranger.send('POST', `/conversations/${conv}/name`, { name: 'mine now' }),
      await stranger.send('PATCH', `/conversations/${conv}/pin`),
      await stranger.send('DELETE', `/conversations/${conv}`),
    ]) {
      expect(r.status).toBe(404);
      expect(((await r.json()) as { code: string }).code).toBe('not_found');
    }
    const fb = await stranger.send('POST', `/messages/${msg}/feedbacks`, { rating: 'dislike' });
    expect(fb.status).toBe(404);
    // continuing the owner's conversation is refused too
    const cont = await stranger.send('POST', '/chat-messages', { inputs: {}, query: 'hi', response_mode: 'streaming', conversation_id: conv });
    expect(cont.status).toBe(404);

    const other = await webClient(s, codeB);
    expect(((await (await other.get('/conversations')).json()) as { data: unknown[] }).data).toEqual([]);
    expect((await other.get(`/messages?conversation_id=${conv}`)).status).toBe(404);
    expect((await other.send('POST', `/messages/${msg}/feedbacks`, { rating: 'like' })).status).toBe(404);
    // the owner still has it, untouched
    const mine = (await (await owner.get(`/messages?conversation_id=${conv}`)).json()) as { data: { answer: string; feedback: unknown }[] };
    expect(mine.data).toMatchObject([{ answer: 'private answer', feedback: null }]);
  });

  it('a `user` field in the body does not change whom the request acts for', async () => {
    const owner = await webClient(s, codeA);
    const conv = (await chat(owner, 'mine')).at(-1)!.conversation_id as string;
    const site = (await (await owner.get('/site')).json()) as { end_user_id: string };
    const sessionId = (await s.runtime.endUsers.ofApp(appA.appId, site.end_user_id))!.sessionId;
    const stranger = await webClient(s, codeA);
    expect((await fetch(`${s.url}/api/conversations?user=${sessionId}`, { headers: stranger.headers() }).then((r) => r.json())) as unknown).toMatchObject({ data: [] });
    expect((await stranger.send('DELETE', `/conversations/${conv}`, { user: sessionId })).status).toBe(404);
  });
});
