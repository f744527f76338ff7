import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { Tiktoken } from 'js-tiktoken/lite';
import cl100k from 'js-tiktoken/ranks/cl100k_base';
import { startServer, type TestServer } from '../helpers/server.js';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { dataFrames, parseSse, readSse } from '../helpers/sse.js';
import { validateResponse, validateSchema } from '../helpers/openapi.js';
import { CHAT_APP, completionApp } from '../helpers/apps.js';
import { example } from '../helpers/fixtures.js';

let fake: FakeOpenAI;
let s: TestServer;
let key: string;
let appId: string;

const PRICE = { input: '0.15', output: '0.6', unit: '0.000001', currency: 'USD' };

beforeAll(async () => {
  fake = await startFakeOpenAI();
  s = await startServer({
    env: { OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: fake.baseUrl, OPENAI_API_COMPATIBLE_BASE_URL: fake.baseUrl },
    overrides: { prices: { 'gpt-4o-mini': PRICE } },
  });
  ({ apiKey: key, appId } = await s.importApp(completionApp()));
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
const post = (body: unknown, k = key, path = '/completion-messages') =>
  fetch(`${s.api}${path}`, { method: 'POST', headers: headers(k), body: typeof body === 'string' ? body : JSON.stringify(body) });

async function messageRow(id: string) {
  return s.runtime.store.db.selectFrom('messages').selectAll().where('id', '=', id).executeTakeFirst();
}

/** Waits (bounded) until the stored message leaves `running`. */
async function settled(id: string) {
  for (let i = 0; i < 200; i++) {
    const row = await messageRow(id);
    if (row && row.status !== 'running') return row;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`message ${id} still running`);
}

const encoder = new Tiktoken(cl100k);

describe('POST /completion-messages — blocking', () => {
  it('answers a CompletionResponse with every field, usage from the upstream and prices from config', async () => {
    fake.behaviour = { reply: 'Otters hold hands while sleeping.', chunkSize: 5 };
    const r = await post({ inputs: { topic: 'otters', count: '3', notes: 'Be brief.' }, user: 'alice' });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^application\/json/);
    const body = await r.json();
    validateResponse('/completion-messages', 'post', 200, body);
    expect(Object.keys(body)).toEqual(['event', 'task_id', 'id', 'message_id', 'mode', 'answer', 'metadata', 'created_at']);
    expect(body).toMatchObject({ event: 'message', mode: 'completion', answer: 'Otters hold hands while sleeping.' });
    expect(body.id).toBe(body.message_id);
    expect(body.task_id).not.toBe(body.message_id);
    expect(Number.isInteger(body.created_at)).toBe(true);

    // The upstream got the rendered pre_prompt (select default applied, number coerced) as a chat turn.
    const req = fake.requests[0]!;
    expect(req.path).toBe('/v1/chat/completions');
    expect(req.headers.authorization).toBe('Bearer sk-test');
    expect(req.body).toMatchObject({ model: 'gpt-4o-mini', stream: true, temperature: 0.2, max_tokens: 512 });
    expect(req.body.messages).toEqual([{ role: 'user', content: 'Write about otters in a friendly tone, 3 lines. Be brief.' }]);

    // Fake upstream usage: prompt = ceil(len/4), completion = number of chunks.
    const promptTokens = Math.ceil('Write about otters in a friendly tone, 3 lines. Be brief.'.length / 4);
    const u = body.metadata.usage;
    expect(u).toMatchObject({
      prompt_tokens: promptTokens,
      completion_tokens: 7,
      total_tokens: promptTokens + 7,
      prompt_unit_price: '0.15',
      prompt_price_unit: '0.000001',
      completion_unit_price: '0.6',
      completion_price_unit: '0.000001',
      currency: 'USD',
    });
    const expectPrice = (tokens: number, unit: number) => (Math.round(tokens * unit * 1e-6 * 1e7) / 1e7).toFixed(7);
    expect(u.prompt_price).toBe(expectPrice(promptTokens, 0.15));
    expect(u.completion_price).toBe(expectPrice(7, 0.6));
    expect(Number(u.total_price)).toBeCloseTo(Number(u.prompt_price) + Number(u.completion_price), 7);
    expect(typeof u.latency).toBe('number');

    // Stored before the response ended.
    const row = await messageRow(body.message_id);
    const alice = await s.runtime.endUsers.find(appId, 'alice');
    expect(row).toMatchObject({ status: 'normal', answer: body.answer, end_user_id: alice!.id, task_id: body.task_id, mode: 'completion', prompt_tokens: promptTokens, completion_tokens: 7, total_price: u.total_price });
    expect(JSON.parse(row!.inputs)).toEqual({ topic: 'otters', tone: 'friendly', count: 3, notes: 'Be brief.', picture: null });
    expect(JSON.parse(row!.usage)).toEqual(u);
  });

  it('counts tokens with the tokenizer when the upstream reports no usage', async () => {
    fake.behaviour = { reply: 'Tokenizers count what providers do not report.', usage: false };
    const body = await (await post({ inputs: { topic: 'tokens' }, user: 'alice' })).json();
    const prompt = fake.requests[0]!.body.messages as { content: string }[];
    expect(body.metadata.usage.completion_tokens).toBe(encoder.encode('Tokenizers count what providers do not report.').length);
    expect(body.metadata.usage.prompt_tokens).toBe(encoder.encode(prompt[0]!.content).length);
  });

  it('legacy completion mode calls /completions with a prompt', async () => {
    const legacy = await s.importApp(completionApp({ mode: 'completion', model: 'gpt-3.5-turbo-instruct', prePrompt: 'Say {{topic}}' }));
    fake.behaviour = { reply: 'legacy answer' };
    const body = await (await post({ inputs: { topic: 'hi' }, user: 'u' }, legacy.apiKey)).json();
    expect(body.answer).toBe('legacy answer');
    expect(fake.requests[0]!.path).toBe('/v1/completions');
    expect(fake.requests[0]!.body.prompt).toBe('Say hi');
  });

  it('openai_api_compatible uses its own base URL', async () => {
    const compat = await s.importApp(completionApp({ provider: 'openai_api_compatible', model: 'llama3' }));
    fake.behaviour = { reply: 'from a local server' };
    const body = await (await post({ inputs: { topic: 'x' }, user: 'u' }, compat.apiKey)).json();
    expect(body.answer).toBe('from a local server');
    expect(fake.requests[0]!.body.model).toBe('llama3');
  });

  it('the legacy query field is appended to the prompt', async () => {
    fake.behaviour = { reply: 'ok' };
    await post({ inputs: { topic: 'x' }, query: 'And a rhyme.', user: 'u' });
    expect((fake.requests[0]!.body.messages as { content: string }[])[0]!.content).toMatch(/\n\nAnd a rhyme\.$/);
  });

  it('an upstream error is 400 completion_request_error with the upstream message; the message is stored as error', async () => {
    fake.behaviour = { failStatus: 500, failMessage: 'the model is on fire' };
    const r = await post({ inputs: { topic: 'x' }, user: 'bob' });
    expect(r.status).toBe(400);
    const body = await r.json();
    expect(body.code).toBe('completion_request_error');
    expect(body.message).toContain('the model is on fire');
    const rows = await s.runtime.store.db.selectFrom('messages').selectAll().where('status', '=', 'error').execute();
    expect(rows.some((m) => m.error?.includes('the model is on fire'))).toBe(true);
  });

  it('the mock example app answers deterministically (README quick start)', async () => {
    const writer = await s.importApp(example('completion-writer.yml'));
    const a = await (await post({ inputs: { topic: 'rivers' }, user: 'u' }, writer.apiKey)).json();
    const b = await (await post({ inputs: { topic: 'rivers' }, user: 'v' }, writer.apiKey)).json();
    expect(a.answer).toMatch(/^\[mock model\]/);
    expect(a.answer).toContain('Write a short paragraph about rivers in a friendly tone.');
    expect(b.answer).toBe(a.answer);
    expect(a.metadata.usage.completion_tokens).toBeGreaterThan(0);
    expect(fake.requests).toHaveLength(0);
  });
});

describe('POST /completion-messages — refusals', () => {
  const cases: [string, unknown, number, string, string | RegExp][] = [
    ['missing user', { inputs: { topic: 'x' } }, 400, 'invalid_param', 'Arg user must be provided.'],
    ['missing inputs', { user: 'u' }, 400, 'invalid_param', 'inputs is required'],
    ['inputs not an object', { inputs: 'x', user: 'u' }, 400, 'invalid_param', /^inputs must be/],
    ['bad response_mode', { inputs: { topic: 'x' }, user: 'u', response_mode: 'fast' }, 400, 'invalid_param', /^response_mode must be one of/],
    ['bad transfer_method', { inputs: { topic: 'x' }, user: 'u', files: [{ type: 'image', transfer_method: 'ftp', url: 'x' }] }, 400, 'invalid_param', /^files\.0\.transfer_method/],
    ['required input', { inputs: {}, user: 'u' }, 400, 'invalid_param', 'topic is required in input form'],
    ['too long', { inputs: { topic: 'x'.repeat(21) }, user: 'u' }, 400, 'invalid_param', 'topic in input form must be less than 20 characters'],
    ['not in options', { inputs: { topic: 'x', tone: 'angry' }, user: 'u' }, 400, 'invalid_param', "tone in input form must be one of the following: ['friendly', 'formal']"],
    ['not a string', { inputs: { topic: 5 }, user: 'u' }, 400, 'invalid_param', "(type 'text-input') topic in input form must be a string"],
    ['not a number', { inputs: { topic: 'x', count: 'many' }, user: 'u' }, 400, 'invalid_param', 'count in input form must be a valid number'],
    ['not a file', { inputs: { topic: 'x', picture: 'pic.png' }, user: 'u' }, 400, 'invalid_param', 'picture in input form must be a file'],
  ];
  for (const [name, body, status, code, message] of cases) {
    for (const mode of ['blocking', 'streaming']) {
      it(`${name} (${mode}) → ${status} ${code}`, async () => {
        const b = typeof body === 'object' && body && !('response_mode' in body) ? { ...body, response_mode: mode } : body;
        const r = await post(b);
        expect(r.status).toBe(status);
        expect(r.headers.get('content-type')).toMatch(/^application\/json/);
        const e = await r.json();
        expect(Object.keys(e)).toEqual(['code', 'message', 'status']);
        expect(e.code).toBe(code);
        expect(e.status).toBe(status);
        if (typeof message === 'string') expect(e.message).toBe(message);
        else expect(e.message).toMatch(message);
      });
    }
  }

  it('malformed JSON → 400 bad_request', async () => {
    const r = await post('{"inputs": {');
    expect(r.status).toBe(400);
    expect(await r.json()).toEqual({ code: 'bad_request', message: 'Invalid JSON payload received or JSON payload is empty.', status: 400 });
  });

  it('empty body → 400 bad_request', async () => {
    const r = await post('');
    expect(r.status).toBe(400);
    expect((await r.json()).code).toBe('bad_request');
  });

  it('non-JSON body → 415 unsupported_media_type', async () => {
    const r = await fetch(`${s.api}/completion-messages`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'text/plain' }, body: 'inputs=1' });
    expect(r.status).toBe(415);
    expect((await r.json()).code).toBe('unsupported_media_type');
    // A multipart form (only upload routes read them) gets Dify's JSON-route answer too.
    const form = new FormData();
    form.set('inputs', '{}');
    const m = await fetch(`${s.api}/completion-messages`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
    expect(m.status).toBe(415);
    expect(await m.json()).toEqual({ code: 'unsupported_media_type', message: "Did not attempt to load JSON data because the request Content-Type was not 'application/json'.", status: 415 });
  });

  it('a chat app → 400 app_unavailable, for the message and for stop', async () => {
    const chat = await s.importApp(CHAT_APP);
    const r = await post({ inputs: {}, user: 'u' }, chat.apiKey);
    expect(r.status).toBe(400);
    expect(await r.json()).toEqual({ code: 'app_unavailable', message: 'App unavailable, please check your app configurations.', status: 400 });
    const st = await post({ user: 'u' }, chat.apiKey, '/completion-messages/abc/stop');
    expect(st.status).toBe(400);
    expect((await st.json()).code).toBe('app_unavailable');
  });

  it('a provider without credentials → 400 provider_not_initialize in both modes', async () => {
    const claude = await s.importApp(completionApp({ provider: 'langgenius/anthropic/anthropic', model: 'claude-3-5-haiku' }));
    for (const mode of ['blocking', 'streaming']) {
      const r = await post({ inputs: { topic: 'x' }, user: 'u', response_mode: mode }, claude.apiKey);
      expect(r.status).toBe(400);
      const e = await r.json();
      expect(e.code).toBe('provider_not_initialize');
      expect(e.message).toContain('ANTHROPIC_API_KEY');
    }
  });

  it('an unknown upload id → 400 invalid_param naming the file', async () => {
    const r = await post({ inputs: { topic: 'x' }, user: 'u', files: [{ type: 'image', transfer_method: 'local_file', upload_file_id: '00000000-0000-4000-8000-000000000000' }] });
    expect(r.status).toBe(400);
    expect((await r.json()).message).toMatch(/^files\[0\]\.upload_file_id/);
  });
});

describe('POST /completion-messages — streaming', () => {
  it('streams message chunks then message_end, with exact framing', async () => {
    fake.behaviour = { reply: 'Streaming is just many small answers. ünïcødé ✓', chunkSize: 3 };
    const r = await post({ inputs: { topic: 'streams' }, user: 'carol', response_mode: 'streaming' });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    const raw = await r.text();
    expect(raw).toMatch(/^data: \{"event":"message",/);
    expect(raw.endsWith('}\n\n')).toBe(true);
    expect(raw).not.toMatch(/^(id|retry):/m);
    const frames = parseSse(raw);
    const data = dataFrames(frames);
    for (const f of data) validateSchema('ChunkCompletionEvent', f);
    const chunks = data.filter((d) => d.event === 'message');
    const end = data.at(-1)!;
    expect(end.event).toBe('message_end');
    expect(chunks.length).toBeGreaterThan(0);
    expect(chunks.map((c) => c.answer).join('')).toBe('Streaming is just many small answers. ünïcødé ✓');
    expect(Object.keys(chunks[0]!)).toEqual(['event', 'message_id', 'created_at', 'task_id', 'id', 'answer']);
    expect(Object.keys(end)).toEqual(['event', 'message_id', 'created_at', 'task_id', 'id', 'metadata', 'files']);
    const ids = new Set(data.map((d) => `${d.message_id}|${d.task_id}|${d.created_at}|${d.id}`));
    expect(ids.size).toBe(1);
    expect(end.files).toBeNull();
    const usage = (end.metadata as { usage: Record<string, unknown> }).usage;
    validateSchema('Usage', usage);
    // The fake upstream reports one completion token per chunk it sent.
    expect(usage.completion_tokens).toBe(Math.ceil('Streaming is just many small answers. ünïcødé ✓'.length / 3));
    const row = await messageRow(String(end.message_id));
    expect(row).toMatchObject({ status: 'normal', answer: 'Streaming is just many small answers. ünïcødé ✓' });
  });

  it('an upstream failure at the start is HTTP 200 with one error event', async () => {
    fake.behaviour = { failStatus: 429, failMessage: 'slow down' };
    const r = await post({ inputs: { topic: 'x' }, user: 'u', response_mode: 'streaming' });
    expect(r.status).toBe(200);
    const data = dataFrames(parseSse(await r.text()));
    expect(data).toHaveLength(1);
    const e = data[0]!;
    validateSchema('ChunkCompletionEvent', e);
    expect(Object.keys(e)).toEqual(['event', 'message_id', 'created_at', 'code', 'status', 'message']);
    expect(e).toMatchObject({ event: 'error', code: 'completion_request_error', status: 400 });
    expect(e.message).toContain('slow down');
    expect((await messageRow(String(e.message_id)))!.status).toBe('error');
  });

  it('an upstream that cannot be reached: the stream opens with its one error event, and the message is stored', async () => {
    const down = await startServer({ env: { OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: 'http://127.0.0.1:1/v1' } });
    try {
      const app = await down.importApp(completionApp());
      const r = await fetch(`${down.api}/completion-messages`, { method: 'POST', headers: headers(app.apiKey), body: JSON.stringify({ inputs: { topic: 'x' }, user: 'u', response_mode: 'streaming' }) });
      expect(r.status).toBe(200);
      expect(r.headers.get('content-type')).toMatch(/^text\/event-stream/);
      const data = dataFrames(parseSse(await r.text()));
      expect(data).toHaveLength(1);
      expect(data[0]).toMatchObject({ event: 'error', code: 'completion_request_error', status: 400, message: expect.stringContaining('Cannot connect to model provider "openai" at 127.0.0.1:1') });
      const row = await down.runtime.store.db.selectFrom('messages').selectAll().where('id', '=', String(data[0]!.message_id)).executeTakeFirst();
      expect(row).toMatchObject({ status: 'error', answer: '' });
    } finally {
      await down.close();
    }
  });

  it('a stream broken mid-way ends with an error event after the chunks already sent', async () => {
    fake.behaviour = { reply: 'abcdefghijklmnopqrstuvwxyz', chunkSize: 2, breakAfterChunks: 4, delayMs: 10 };
    const r = await post({ inputs: { topic: 'x' }, user: 'u', response_mode: 'streaming' });
    expect(r.status).toBe(200);
    const data = dataFrames(parseSse(await r.text()));
    expect(data.filter((d) => d.event === 'message').map((d) => d.answer).join('')).toBe('abcdefgh');
    expect(data.at(-1)).toMatchObject({ event: 'error', code: 'completion_request_error', status: 400 });
    const row = await messageRow(String(data[0]!.message_id));
    expect(row).toMatchObject({ status: 'error', answer: 'abcdefgh' });
  });

  it('image files reach the model as image parts (upload and remote URL)', async () => {
    const png = new Blob([Buffer.from('89504e470d0a1a0a', 'hex')], { type: 'image/png' });
    const fd = new FormData();
    fd.append('file', png, 'dot.png');
    fd.append('user', 'dave');
    const up = await (await fetch(`${s.api}/files/upload`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: fd })).json();
    fake.behaviour = { reply: 'I see two images' };
    const r = await post({
      inputs: { topic: 'pics', picture: { type: 'image', transfer_method: 'local_file', upload_file_id: up.id } },
      files: [{ type: 'image', transfer_method: 'remote_url', url: 'https://example.com/cat.jpg' }],
      user: 'dave',
      response_mode: 'streaming',
    });
    expect(r.status).toBe(200);
    await r.text();
    const content = (fake.requests[0]!.body.messages as { content: { type: string; image_url?: { url: string } }[] }[])[0]!.content;
    expect(content[0]!.type).toBe('text');
    const urls = content.filter((p) => p.type === 'image_url').map((p) => p.image_url!.url);
    expect(urls).toEqual([`data:image/png;base64,${Buffer.from('89504e470d0a1a0a', 'hex').toString('base64')}`, 'https://example.com/cat.jpg']);
  });
});

describe('stop, disconnect', () => {
  it('the owner stops mid-stream: upstream connection closed, message_end with the partial answer, stored stopped', async () => {
    fake.behaviour = { reply: 'x'.repeat(2000), chunkSize: 1, delayMs: 5 };
    const r = await post({ inputs: { topic: 'x' }, user: 'erin', response_mode: 'streaming' });
    const frames = readSse(r);
    const first = (await frames.next()).value!;
    expect(first.kind).toBe('data');
    const taskId = String((first as { data: Record<string, unknown> }).data.task_id);

    // 1. Someone else's stop and an unknown task: success, nothing happens.
    const other = await post({ user: 'mallory' }, key, `/completion-messages/${taskId}/stop`);
    expect(other.status).toBe(200);
    expect(await other.json()).toEqual({ result: 'success' });
    const unknown = await post({ user: 'erin' }, key, '/completion-messages/no-such-task/stop');
    expect(await unknown.json()).toEqual({ result: 'success' });
    expect(fake.requests[0]!.aborted).toBe(false);

    // 2. The owner's stop aborts the upstream request.
    const stop = await post({ user: 'erin' }, key, `/completion-messages/${taskId}/stop`);
    const stopped = await stop.json();
    expect(stopped).toEqual({ result: 'success' });
    validateResponse('/completion-messages/{task_id}/stop', 'post', 200, stopped);
    await fake.waitForAbort();

    // 3. The stream ends with message_end carrying the partial answer.
    const rest = [first];
    for await (const f of frames) rest.push(f);
    const data = dataFrames(rest);
    const end = data.at(-1)!;
    expect(end.event).toBe('message_end');
    const answer = data.filter((d) => d.event === 'message').map((d) => d.answer).join('');
    expect(answer.length).toBeGreaterThan(0);
    expect(answer.length).toBeLessThan(2000);
    const row = await messageRow(String(end.message_id));
    expect(row).toMatchObject({ status: 'stopped', answer });
    expect((end.metadata as { usage: { completion_tokens: number } }).usage.completion_tokens).toBe(encoder.encode(answer).length);
  });

  it('stop needs a user', async () => {
    const r = await post({}, key, '/completion-messages/t/stop');
    expect(r.status).toBe(400);
    expect(await r.json()).toEqual({ code: 'invalid_param', message: 'Arg user must be provided.', status: 400 });
  });

  it('a client that disconnects mid-stream does not lose the message', async () => {
    fake.behaviour = { reply: 'y'.repeat(300), chunkSize: 3, delayMs: 2 };
    const ac = new AbortController();
    const r = await fetch(`${s.api}/completion-messages`, { method: 'POST', headers: headers(), body: JSON.stringify({ inputs: { topic: 'x' }, user: 'frank', response_mode: 'streaming' }), signal: ac.signal });
    const frames = readSse(r);
    const first = (await frames.next()).value as { data: Record<string, unknown> };
    ac.abort();
    const row = await settled(String(first.data.message_id));
    expect(row).toMatchObject({ status: 'normal', answer: 'y'.repeat(300) });
    expect(fake.requests[0]!.aborted).toBe(false);
  });
});

describe('per-app concurrency limit', () => {
  it('over APP_MAX_ACTIVE_REQUESTS → 429 too_many_requests with Retry-After; the slot is held until the stream ends', async () => {
    const limited = await startServer({ env: { OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: fake.baseUrl, APP_MAX_ACTIVE_REQUESTS: '1' } });
    try {
      const app = await limited.importApp(completionApp());
      const send = (mode: string) =>
        fetch(`${limited.api}/completion-messages`, { method: 'POST', headers: headers(app.apiKey), body: JSON.stringify({ inputs: { topic: 'x' }, user: 'u', response_mode: mode }) });
      fake.behaviour = { reply: 'z'.repeat(60), chunkSize: 1, delayMs: 5 };
      const first = await send('streaming');
      const frames = readSse(first);
      await frames.next();
      for (const mode of ['blocking', 'streaming']) {
        const r = await send(mode);
        expect(r.status).toBe(429);
        expect(r.headers.get('retry-after')).toBeTruthy();
        const e = await r.json();
        expect(e.code).toBe('too_many_requests');
        expect(e.message).toContain(`${app.appId} is 1`);
      }
      for await (const _ of frames) void _;
      fake.behaviour = { reply: 'free again' };
      const after = await send('blocking');
      expect(after.status).toBe(200);
      expect((await after.json()).answer).toBe('free again');
    } finally {
      await limited.close();
    }
  });
});

const redisUrl = process.env.TEST_REDIS_URL;
describe.skipIf(!redisUrl)('two instances on one database and Redis', () => {
  it('a stop sent to the other instance stops the stream; the concurrency limit counts both instances', async () => {
    const env = { OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: fake.baseUrl, APP_MAX_ACTIVE_REQUESTS: '1', REDIS_URL: redisUrl! };
    const a = await startServer({ env });
    const b = await startServer({ env, reuse: { dataDir: a.dataDir, schema: a.config.databaseSchema } });
    try {
      const app = await a.importApp(completionApp());
      const send = (srv: TestServer, body: unknown, path = '/completion-messages') =>
        fetch(`${srv.api}${path}`, { method: 'POST', headers: headers(app.apiKey), body: JSON.stringify(body) });
      fake.behaviour = { reply: 'x'.repeat(2000), chunkSize: 1, delayMs: 5 };
      const r = await send(a, { inputs: { topic: 'x' }, user: 'ivy', response_mode: 'streaming' });
      const frames = readSse(r);
      const first = (await frames.next()).value as { data: Record<string, unknown> };

      const busy = await send(b, { inputs: { topic: 'x' }, user: 'ivy', response_mode: 'blocking' });
      expect(busy.status).toBe(429);
      expect((await busy.json()).message).toContain(`${app.appId} is 1`);

      const stop = await send(b, { user: 'ivy' }, `/completion-messages/${String(first.data.task_id)}/stop`);
      expect(await stop.json()).toEqual({ result: 'success' });
      await fake.waitForAbort();
      const rest = [];
      for await (const f of frames) rest.push(f);
      const end = dataFrames(rest).at(-1)!;
      expect(end.event).toBe('message_end');
      const row = await a.runtime.store.db.selectFrom('messages').select('status').where('id', '=', String(end.message_id)).executeTakeFirst();
      expect(row).toEqual({ status: 'stopped' });

      fake.behaviour = { reply: 'free again' };
      const after = await send(b, { inputs: { topic: 'x' }, user: 'ivy' });
      expect(after.status).toBe(200);
    } finally {
      await b.close();
      await a.close();
    }
  });
});

describe('a hanging upstream', () => {
  it('the owner can stop before the first token: the upstream sees the close, message_end has an empty answer', async () => {
    fake.behaviour = { hang: true };
    const r = await post({ inputs: { topic: 'x' }, user: 'hank', response_mode: 'streaming' });
    expect(r.status).toBe(200);
    // No frame carries the task id yet; the running message (inserted alongside the upstream call) does.
    const running = () => s.runtime.store.db.selectFrom('messages').selectAll().where('status', '=', 'running').where('end_user_id', 'in', s.runtime.store.db.selectFrom('end_users').select('id').where('session_id', '=', 'hank')).executeTakeFirst();
    let row = await running();
    for (let i = 0; i < 200 && !row; i++) {
      await new Promise((res) => setTimeout(res, 10));
      row = await running();
    }
    const stop = await post({ user: 'hank' }, key, `/completion-messages/${row!.task_id}/stop`);
    expect(await stop.json()).toEqual({ result: 'success' });
    await fake.waitForAbort();
    const data = dataFrames(parseSse(await r.text()));
    expect(data).toHaveLength(1);
    expect(data[0]).toMatchObject({ event: 'message_end', task_id: row!.task_id, message_id: row!.id });
    expect(await messageRow(row!.id)).toMatchObject({ status: 'stopped', answer: '' });
  });

  it('keep-alive pings while waiting, then APP_MAX_EXECUTION_TIME ends the run with an error event naming the limit', async () => {
    const slow = await startServer({ env: { OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: fake.baseUrl, SSE_PING_INTERVAL_MS: '50', APP_MAX_EXECUTION_TIME: '1' } });
    try {
      const app = await slow.importApp(completionApp());
      fake.behaviour = { hang: true };
      const r = await fetch(`${slow.api}/completion-messages`, { method: 'POST', headers: headers(app.apiKey), body: JSON.stringify({ inputs: { topic: 'x' }, user: 'u', response_mode: 'streaming' }) });
      const raw = await r.text();
      const frames = parseSse(raw);
      const pings = frames.filter((f) => f.kind === 'event');
      expect(pings.length).toBeGreaterThan(0);
      for (const p of pings) expect(p.raw).toBe('event: ping');
      const data = dataFrames(frames);
      expect(data).toHaveLength(1);
      expect(data[0]).toMatchObject({ event: 'error', code: 'completion_request_error', status: 400, message: 'generation exceeded APP_MAX_EXECUTION_TIME (1 s)' });
      await fake.waitForAbort();
    } finally {
      await slow.close();
    }
  });
});
