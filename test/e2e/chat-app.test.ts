import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.js';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { dataFrames, parseSse, readSse } from '../helpers/sse.js';
import { validateResponse, validateSchema } from '../helpers/openapi.js';
import { example } from '../helpers/fixtures.js';

/** A plain chat app (Dify's "Chatbot"): a system prompt with a variable, OpenAI-compatible model. */
function chatApp(modelMode: 'chat' | 'completion' = 'chat'): string {
  return `app:
  mode: chat
  name: Helper
kind: app
version: 0.3.1
model_config:
  model:
    provider: langgenius/openai/openai
    name: gpt-4o-mini
    mode: ${modelMode}
    completion_params:
      temperature: 0.1
  pre_prompt: 'You are {{persona}}.'
  user_input_form:
    - text-input:
        label: Persona
        variable: persona
        required: true
        max_length: 30
`;
}

let fake: FakeOpenAI;
let s: TestServer;
let key: string;

beforeAll(async () => {
  fake = await startFakeOpenAI();
  s = await startServer({ env: { OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: fake.baseUrl } });
  ({ apiKey: key } = await s.importApp(chatApp()));
});
afterAll(async () => {
  await s?.close();
  await fake?.close();
});
beforeEach(() => {
  fake.behaviour = {};
  fake.requests.length = 0;
});

const headers = (k = key) => ({ authorization: `Bearer ${k}`, 'content-type': 'application/json' });
const send = (body: Record<string, unknown>, k = key, path = '/chat-messages') => fetch(`${s.api}${path}`, { method: 'POST', headers: headers(k), body: JSON.stringify(body) });
const upstreamMessages = () => fake.requests.at(-1)!.body.messages as { role: string; content: unknown }[];

describe('chat apps: POST /chat-messages', () => {
  it('blocking: a new conversation, the system prompt from the inputs, Dify\'s response shape', async () => {
    fake.behaviour = { reply: 'Ahoy there!' };
    const r = await send({ inputs: { persona: 'a pirate' }, query: 'Hello', user: 'ann' });
    expect(r.status).toBe(200);
    const body = await r.json();
    validateResponse('/chat-messages', 'post', 200, body);
    expect(Object.keys(body)).toEqual(['event', 'task_id', 'id', 'message_id', 'conversation_id', 'mode', 'answer', 'metadata', 'created_at']);
    expect(body).toMatchObject({ event: 'message', mode: 'chat', answer: 'Ahoy there!', metadata: { retriever_resources: [] } });
    expect(body.metadata.usage.completion_tokens).toBeGreaterThan(0);
    expect(upstreamMessages()).toEqual([
      { role: 'system', content: 'You are a pirate.' },
      { role: 'user', content: 'Hello' },
    ]);
    // The conversation and its message are listed like any chat app's.
    const convs = await (await fetch(`${s.api}/conversations?user=ann`, { headers: headers() })).json();
    expect(convs.data.map((c: { id: string; name: string }) => [c.id, c.name])).toEqual([[body.conversation_id, 'Hello']]);
    const msgs = await (await fetch(`${s.api}/messages?user=ann&conversation_id=${body.conversation_id}`, { headers: headers() })).json();
    expect(msgs.data.map((m: { id: string; query: string; answer: string }) => [m.id, m.query, m.answer])).toEqual([[body.id, 'Hello', 'Ahoy there!']]);
  });

  it('a follow-up in the conversation sends the history and keeps the conversation\'s inputs', async () => {
    fake.behaviour = { reply: 'First answer.' };
    const first = await (await send({ inputs: { persona: 'a poet' }, query: 'Q1', user: 'bo' })).json();
    fake.behaviour = { reply: 'Second answer.' };
    const second = await (await send({ inputs: { persona: 'ignored later' }, query: 'Q2', user: 'bo', conversation_id: first.conversation_id })).json();
    expect(second.conversation_id).toBe(first.conversation_id);
    // The follow-up moved the conversation's updated_at.
    const conv = await s.runtime.store.db.selectFrom('conversations').select(['created_at', 'updated_at']).where('id', '=', first.conversation_id).executeTakeFirstOrThrow();
    expect(Number(conv.updated_at)).toBeGreaterThan(Number(conv.created_at));
    expect(upstreamMessages()).toEqual([
      { role: 'system', content: 'You are a poet.' },
      { role: 'user', content: 'Q1' },
      { role: 'assistant', content: 'First answer.' },
      { role: 'user', content: 'Q2' },
    ]);
    // Someone else's conversation is not found; a malformed id names the field.
    const other = await send({ inputs: { persona: 'x' }, query: 'Q', user: 'eve', conversation_id: first.conversation_id });
    expect(other.status).toBe(404);
    expect(await other.json()).toEqual({ code: 'not_found', message: 'Conversation Not Exists.', status: 404 });
    const bad = await send({ inputs: { persona: 'x' }, query: 'Q', user: 'bo', conversation_id: 'nope' });
    expect(bad.status).toBe(400);
    expect((await bad.json()).message).toMatch(/conversation_id/);
  });

  it('streaming: every chunk carries conversation_id; message_end has usage and retriever_resources', async () => {
    fake.behaviour = { reply: 'one two three', chunkSize: 4 };
    const r = await send({ inputs: { persona: 'terse' }, query: 'Count', user: 'cy', response_mode: 'streaming' });
    expect(r.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const data = dataFrames(parseSse(await r.text()));
    for (const f of data) validateSchema('ChunkChatEvent', f);
    const end = data.at(-1)!;
    expect(end.event).toBe('message_end');
    expect(Object.keys(data[0]!)).toEqual(['event', 'conversation_id', 'message_id', 'created_at', 'task_id', 'id', 'answer']);
    expect(new Set(data.map((d) => d.conversation_id)).size).toBe(1);
    expect(data.filter((d) => d.event === 'message').map((d) => d.answer).join('')).toBe('one two three');
    expect(end.metadata).toMatchObject({ retriever_resources: [] });
    validateSchema('Usage', (end.metadata as { usage: unknown }).usage);
  });

  it('the owner stops mid-stream through /chat-messages/{task_id}/stop; feedback works on chat messages', async () => {
    fake.behaviour = { reply: 'z'.repeat(2000), chunkSize: 1, delayMs: 5 };
    const r = await send({ inputs: { persona: 'slow' }, query: 'Go', user: 'dee', response_mode: 'streaming' });
    const frames = readSse(r);
    const first = (await frames.next()).value as { data: Record<string, unknown> };
    const stop = await send({ user: 'dee' }, key, `/chat-messages/${String(first.data.task_id)}/stop`);
    expect(await stop.json()).toEqual({ result: 'success' });
    await fake.waitForAbort();
    const rest = [];
    for await (const f of frames) rest.push(f);
    const end = dataFrames(rest).at(-1)!;
    expect(end.event).toBe('message_end');
    const row = await s.runtime.store.db.selectFrom('messages').select(['status', 'mode', 'conversation_id']).where('id', '=', String(end.message_id)).executeTakeFirst();
    expect(row).toEqual({ status: 'stopped', mode: 'chat', conversation_id: first.data.conversation_id });
    const fb = await send({ rating: 'like', user: 'dee', content: 'good' }, key, `/messages/${String(end.message_id)}/feedbacks`);
    expect(await fb.json()).toEqual({ result: 'success' });
  });

  it('NUL characters are dropped from the query, as Dify does', async () => {
    fake.behaviour = { reply: 'ok' };
    const r = await send({ inputs: { persona: 'x' }, query: 'a\u0000b', user: 'nul' });
    expect(r.status).toBe(200);
    const body = await r.json();
    const msgs = await (await fetch(`${s.api}/messages?user=nul&conversation_id=${body.conversation_id}`, { headers: headers() })).json();
    expect(msgs.data[0].query).toBe('ab');
  });

  it('bad input: missing user, a required input, a completion-only route', async () => {
    const noUser = await send({ inputs: { persona: 'x' }, query: 'Q' });
    expect(noUser.status).toBe(400);
    expect((await noUser.json()).message).toBe('Arg user must be provided.');
    const noPersona = await send({ inputs: {}, query: 'Q', user: 'u' });
    expect(noPersona.status).toBe(400);
    expect((await noPersona.json()).message).toMatch(/persona/i);
    const wrongRoute = await send({ inputs: { persona: 'x' }, user: 'u' }, key, '/completion-messages');
    expect(wrongRoute.status).toBe(400);
    expect((await wrongRoute.json()).code).toBe('app_unavailable');
    // an enum error lists every allowed value (issue 13 item 9: it named only "created_at")
    const badSort = await fetch(`${s.api}/conversations?user=u&sort_by=name`, { headers: { authorization: `Bearer ${key}` } });
    expect(badSort.status).toBe(400);
    expect(await badSort.json()).toEqual({ code: 'invalid_param', message: 'sort_by must be one of: "created_at", "-created_at", "updated_at", "-updated_at"', status: 400 });
  });
});

describe('renaming and deleting conversations', () => {
  it('rename by name or auto_generate, refusals, then delete with messages and feedback', async () => {
    fake.behaviour = { reply: 'Sure.' };
    const c = await (await send({ inputs: { persona: 'x' }, query: 'Plan my trip\nto Lisbon', user: 'ren' })).json();
    const call = (method: string, path: string, body: unknown) => fetch(`${s.api}${path}`, { method, headers: headers(), body: JSON.stringify(body) });

    const named = await call('POST', `/conversations/${c.conversation_id}/name`, { name: 'Lisbon', user: 'ren' });
    expect(named.status).toBe(200);
    const item = await named.json();
    validateResponse('/conversations/{conversation_id}/name', 'post', 200, item);
    expect(item).toMatchObject({ id: c.conversation_id, name: 'Lisbon', status: 'normal', inputs: { persona: 'x' } });
    const auto = await (await call('POST', `/conversations/${c.conversation_id}/name`, { auto_generate: true, user: 'ren' })).json();
    expect(auto.name).toBe('Plan my trip');

    const empty = await call('POST', `/conversations/${c.conversation_id}/name`, { name: ' ', user: 'ren' });
    expect(empty.status).toBe(400);
    expect(await empty.json()).toMatchObject({ code: 'invalid_param', message: expect.stringMatching(/name/) });
    const stranger = await call('POST', `/conversations/${c.conversation_id}/name`, { name: 'mine', user: 'eve' });
    expect(stranger.status).toBe(404);

    await send({ rating: 'dislike', user: 'ren' }, key, `/messages/${c.message_id}/feedbacks`);
    expect(await call('DELETE', `/conversations/${c.conversation_id}`, { user: 'eve' }).then((r) => r.status)).toBe(404);
    const del = await call('DELETE', `/conversations/${c.conversation_id}`, { user: 'ren' });
    expect(del.status).toBe(204);
    expect(await del.text()).toBe('');
    const convs = await (await fetch(`${s.api}/conversations?user=ren`, { headers: headers() })).json();
    expect(convs.data).toEqual([]);
    expect((await fetch(`${s.api}/messages?user=ren&conversation_id=${c.conversation_id}`, { headers: headers() })).status).toBe(404);
    const fb = await (await fetch(`${s.api}/app/feedbacks`, { headers: headers() })).json();
    expect(fb.data.filter((f: { message_id: string }) => f.message_id === c.message_id)).toEqual([]);
    expect(await call('DELETE', `/conversations/${c.conversation_id}`, { user: 'ren' }).then((r) => r.status)).toBe(404);
  });
});

describe('the chat example app (mock model)', () => {
  it('answers in a conversation and remembers it', async () => {
    const app = await s.importApp(example('chat-helper.yml'));
    const post = (body: Record<string, unknown>) => fetch(`${s.api}/chat-messages`, { method: 'POST', headers: headers(app.apiKey), body: JSON.stringify({ user: 'z', inputs: {}, ...body }) }).then((r) => r.json());
    const a = await post({ query: 'What is a dovetail joint?' });
    expect(a.answer).toMatch(/^\[mock model\]/);
    expect(a.answer).toContain('What is a dovetail joint?');
    const b = await post({ query: 'And a mortise?', conversation_id: a.conversation_id });
    // The mock counts the words of its whole prompt: the second one holds the first exchange too.
    const words = (answer: string) => Number(/Your prompt \((\d+) words\)/.exec(answer)![1]);
    expect(words(b.answer)).toBeGreaterThan(words(a.answer) + 20);
    const msgs = await (await fetch(`${s.api}/messages?user=z&conversation_id=${a.conversation_id}`, { headers: headers(app.apiKey) })).json();
    expect(msgs.data.map((m: { query: string }) => m.query)).toEqual(['What is a dovetail joint?', 'And a mortise?']);
  });
});

describe('chat app memory', () => {
  it('history beyond CHAT_MEMORY_MAX_TOKENS is dropped, oldest first', async () => {
    const small = await startServer({ env: { OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: fake.baseUrl, CHAT_MEMORY_MAX_TOKENS: '10' } });
    try {
      const app = await small.importApp(chatApp());
      const post = (body: Record<string, unknown>) => fetch(`${small.api}/chat-messages`, { method: 'POST', headers: headers(app.apiKey), body: JSON.stringify(body) }).then((r) => r.json());
      fake.behaviour = { reply: 'alpha beta gamma delta epsilon' };
      const c = await post({ inputs: { persona: 'x' }, query: 'old question number one', user: 'm' });
      await post({ inputs: {}, query: 'newer question two', user: 'm', conversation_id: c.conversation_id });
      await post({ inputs: {}, query: 'latest', user: 'm', conversation_id: c.conversation_id });
      const users = upstreamMessages().filter((m) => m.role === 'user').map((m) => m.content);
      expect(users).toEqual(['newer question two', 'latest']);
    } finally {
      await small.close();
    }
  });

  it('completion-mode models get Dify\'s transcript prompt and stop at the next human turn', async () => {
    const app = await s.importApp(chatApp('completion'));
    const post = (body: Record<string, unknown>) => fetch(`${s.api}/chat-messages`, { method: 'POST', headers: headers(app.apiKey), body: JSON.stringify(body) }).then((r) => r.json());
    fake.behaviour = { reply: 'Fine.' };
    const c = await post({ inputs: { persona: 'kind' }, query: 'How are you?', user: 'n' });
    await post({ inputs: {}, query: 'And now?', user: 'n', conversation_id: c.conversation_id });
    const req = fake.requests.at(-1)!;
    expect(req.path).toMatch(/\/completions$/);
    expect(req.body.stop).toEqual(['Human:']);
    expect(req.body.prompt).toBe(
      'You are kind.\nHere is the chat histories between human and assistant, inside <histories></histories> XML tags.\n\n<histories>\nHuman: How are you?\nAssistant: Fine.\n</histories>\n\n\nHuman: And now?\n\nAssistant: ',
    );
  });
});
