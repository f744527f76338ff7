import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.js';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { dataFrames, parseSse } from '../helpers/sse.js';
import { validateResponse } from '../helpers/openapi.js';
import { example } from '../helpers/fixtures.js';

function chatApp(name = 'Helper'): string {
  return `app:
  mode: chat
  name: ${name}
kind: app
version: 0.3.1
model_config:
  model:
    provider: langgenius/openai/openai
    name: gpt-4o-mini
    mode: chat
    completion_params:
      temperature: 0.1
  pre_prompt: 'You are helpful.'
`;
}

let fake: FakeOpenAI;
let s: TestServer;
let key: string;
let appId: string;
let otherKey: string;

beforeAll(async () => {
  fake = await startFakeOpenAI();
  s = await startServer({ env: { OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: fake.baseUrl, EMBEDDINGS_BASE_URL: fake.baseUrl, ANNOTATION_LIST_MAX_LIMIT: '3' } });
  ({ apiKey: key, appId } = await s.importApp(chatApp()));
  ({ apiKey: otherKey } = await s.importApp(chatApp('Other')));
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
const api = (path: string, init: { method?: string; body?: unknown; k?: string } = {}) =>
  fetch(`${s.api}${path}`, { method: init.method ?? 'GET', headers: headers(init.k), ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}) });

async function create(question: string, answer: string, k = key): Promise<Record<string, unknown>> {
  const r = await api('/apps/annotations', { method: 'POST', body: { question, answer }, k });
  expect(r.status).toBe(201);
  return r.json();
}

async function waitFor<T>(probe: () => Promise<T | undefined>): Promise<T> {
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Starts an enable/disable job and waits for it to finish; returns the final status body. */
async function replyJob(action: string, body: Record<string, unknown>, k = key): Promise<Record<string, unknown>> {
  const r = await api(`/apps/annotation-reply/${action}`, { method: 'POST', body, k });
  expect(r.status).toBe(200);
  const started = await r.json();
  validateResponse('/apps/annotation-reply/{action}', 'post', 200, started);
  return waitFor(async () => {
    const st = await (await api(`/apps/annotation-reply/${action}/status/${started.job_id}`, { k })).json();
    return st.job_status === 'completed' || st.job_status === 'error' ? st : undefined;
  });
}

const enable = (threshold: number, k = key) => replyJob('enable', { score_threshold: threshold, embedding_provider_name: 'openai', embedding_model_name: 'text-embedding-3-small' }, k);

async function chat(query: string, streaming = false): Promise<{ answer: string; metadata: Record<string, unknown>; messageId: string; frames: Record<string, unknown>[] }> {
  const r = await api('/chat-messages', { method: 'POST', body: { query, inputs: {}, user: 'u1', response_mode: streaming ? 'streaming' : 'blocking' } });
  expect(r.status).toBe(200);
  if (!streaming) {
    const b = await r.json();
    return { answer: b.answer, metadata: b.metadata, messageId: b.message_id, frames: [] };
  }
  const frames = dataFrames(parseSse(await r.text()));
  const end = frames.find((f) => f.event === 'message_end')!;
  const answer = frames.filter((f) => f.event === 'message').map((f) => f.answer).join('');
  return { answer, metadata: end.metadata as Record<string, unknown>, messageId: end.message_id as string, frames };
}

const modelCalls = () => fake.requests.filter((r) => r.path.endsWith('/chat/completions')).length;

describe('annotation CRUD', () => {
  it('creates, lists (newest first, paged, keyword), updates and deletes, scoped to the app', async () => {
    const a = await create('What is 100% uptime?', 'A promise.');
    expect(a).toMatchObject({ question: 'What is 100% uptime?', answer: 'A promise.', hit_count: 0 });
    expect(typeof a.id).toBe('string');
    expect(Number.isInteger(a.created_at)).toBe(true);
    validateResponse('/apps/annotations', 'post', 201, a);
    const b = await create('Second question', 'Second ANSWER');
    const c = await create('third_question', 'third');

    let r = await api('/apps/annotations?page=1&limit=2');
    let body = await r.json();
    validateResponse('/apps/annotations', 'get', 200, body);
    expect(body).toMatchObject({ has_more: true, limit: 2, total: 3, page: 1 });
    expect(body.data.map((x: { id: string }) => x.id)).toEqual([c.id, b.id]);
    body = await (await api('/apps/annotations?page=2&limit=2')).json();
    expect(body).toMatchObject({ has_more: false, total: 3, page: 2 });
    expect(body.data.map((x: { id: string }) => x.id)).toEqual([a.id]);

    // keyword: question or answer, case-insensitive; % and _ match themselves
    body = await (await api('/apps/annotations?keyword=answer')).json();
    expect(body.data.map((x: { id: string }) => x.id)).toEqual([b.id]);
    body = await (await api(`/apps/annotations?keyword=${encodeURIComponent('100%')}`)).json();
    expect(body.data.map((x: { id: string }) => x.id)).toEqual([a.id]);
    body = await (await api(`/apps/annotations?keyword=${encodeURIComponent('d_q')}`)).json();
    expect(body.data.map((x: { id: string }) => x.id)).toEqual([c.id]);

    // ANNOTATION_LIST_MAX_LIMIT (3 here) caps the page size; `limit` echoes the request
    await create('fourth', 'four');
    body = await (await api('/apps/annotations?limit=50')).json();
    expect(body).toMatchObject({ limit: 50, total: 4, has_more: true });
    expect(body.data).toHaveLength(3);

    // the other app sees none of them, and cannot touch them
    body = await (await api('/apps/annotations', { k: otherKey })).json();
    expect(body).toMatchObject({ data: [], total: 0, has_more: false });
    r = await api(`/apps/annotations/${b.id}`, { method: 'PUT', body: { question: 'x', answer: 'y' }, k: otherKey });
    expect(r.status).toBe(404);
    expect(await r.json()).toMatchObject({ code: 'not_found', message: 'Annotation not found' });

    r = await api(`/apps/annotations/${b.id}`, { method: 'PUT', body: { question: 'Second, edited', answer: 'new' } });
    expect(r.status).toBe(200);
    const updated = await r.json();
    validateResponse('/apps/annotations/{annotation_id}', 'put', 200, updated);
    expect(updated).toEqual({ id: b.id, question: 'Second, edited', answer: 'new', hit_count: 0, created_at: b.created_at });

    r = await api(`/apps/annotations/${b.id}`, { method: 'DELETE', k: otherKey });
    expect(r.status).toBe(404);
    r = await api(`/apps/annotations/${b.id}`, { method: 'DELETE' });
    expect(r.status).toBe(204);
    expect(await r.text()).toBe('');
    r = await api(`/apps/annotations/${b.id}`, { method: 'DELETE' });
    expect(r.status).toBe(404);
    r = await api('/apps/annotations/not-a-uuid', { method: 'PUT', body: { question: 'x', answer: 'y' } });
    expect(r.status).toBe(404);
    body = await (await api('/apps/annotations?limit=3')).json();
    expect(body.total).toBe(3);

    for (const id of body.data.map((x: { id: string }) => x.id)) await api(`/apps/annotations/${id}`, { method: 'DELETE' });
    body = await (await api('/apps/annotations')).json();
    expect(body).toMatchObject({ data: [], total: 0 });
  });

  it('refuses bad input with a 400 naming the field', async () => {
    for (const [path, init, field] of [
      ['/apps/annotations', { method: 'POST', body: { answer: 'a' } }, 'question'],
      ['/apps/annotations', { method: 'POST', body: { question: 'q' } }, 'answer'],
      ['/apps/annotations?page=0', {}, 'page'],
      ['/apps/annotations?limit=abc', {}, 'limit'],
      ['/apps/annotation-reply/enable', { method: 'POST', body: { embedding_provider_name: 'openai', embedding_model_name: 'm' } }, 'score_threshold'],
      ['/apps/annotation-reply/enable', { method: 'POST', body: { score_threshold: 2, embedding_provider_name: 'openai', embedding_model_name: 'm' } }, 'score_threshold'],
      ['/apps/annotation-reply/disable', { method: 'POST', body: { score_threshold: 0.9, embedding_provider_name: 'openai' } }, 'embedding_model_name'],
      ['/apps/annotation-reply/restart', { method: 'POST', body: { score_threshold: 0.9, embedding_provider_name: 'openai', embedding_model_name: 'm' } }, 'action'],
    ] as const) {
      const r = await api(path, init as { method?: string; body?: unknown });
      expect(r.status, path).toBe(400);
      const e = await r.json();
      expect(e.code).toBe('invalid_param');
      expect(e.message).toContain(field);
    }
  });

  it('job status: unknown ids, another action and another app answer "The job does not exist."', async () => {
    const done = await replyJob('disable', { score_threshold: 0.9, embedding_provider_name: 'openai', embedding_model_name: 'm' });
    expect(done).toEqual({ job_id: done.job_id, job_status: 'completed', error_msg: '' });
    validateResponse('/apps/annotation-reply/{action}/status/{job_id}', 'get', 200, done);
    for (const [path, k] of [
      [`/apps/annotation-reply/enable/status/${done.job_id}`, key],
      [`/apps/annotation-reply/disable/status/${done.job_id}`, otherKey],
      ['/apps/annotation-reply/disable/status/00000000-0000-4000-8000-000000000000', key],
      ['/apps/annotation-reply/disable/status/nope', key],
    ] as const) {
      const r = await api(path, { k });
      expect(r.status, path).toBe(400);
      expect(await r.json()).toMatchObject({ code: 'invalid_param', message: 'The job does not exist.' });
    }
  });
});

describe('annotation reply', () => {
  it('answers a matching chat query from the annotation, as Dify, and records the hit', async () => {
    const ann = await create('What is Dovetail?', 'A Dify-compatible server.');
    const job = await enable(0.99);
    expect(job.job_status).toBe('completed');

    // 1. blocking: the annotation's answer, no model call, zero usage, metadata.annotation_reply
    const blocking = await chat('what is dovetail?');
    expect(blocking.answer).toBe('A Dify-compatible server.');
    expect(blocking.metadata.annotation_reply).toEqual({ id: ann.id, account: { id: null, name: 'Dify user' } });
    expect(blocking.metadata).toMatchObject({ retriever_resources: [], usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 } });
    expect(modelCalls()).toBe(0);

    // 2. streaming: one `message` event per character, then `message_end` with annotation_reply
    const streamed = await chat('What is Dovetail?', true);
    const messages = streamed.frames.filter((f) => f.event === 'message');
    expect(messages.map((m) => m.answer)).toEqual([...'A Dify-compatible server.']);
    expect(streamed.metadata.annotation_reply).toEqual({ id: ann.id, account: { id: null, name: 'Dify user' } });
    expect(modelCalls()).toBe(0);

    // 3. the stored messages carry the annotation; hit count and hit history follow
    const db = s.runtime.store.db;
    for (const id of [blocking.messageId, streamed.messageId]) {
      const m = await db.selectFrom('messages').select(['answer', 'annotation_id', 'status']).where('id', '=', id).executeTakeFirstOrThrow();
      expect(m).toEqual({ answer: 'A Dify-compatible server.', annotation_id: ann.id, status: 'normal' });
    }
    const hits = await db.selectFrom('annotation_hit_histories').selectAll().where("annotation_id", "=", ann.id as string).orderBy('created_at').execute();
    expect(hits.map((h) => h.message_id).sort()).toEqual([blocking.messageId, streamed.messageId].sort());
    expect(hits.map((h) => h.question).sort()).toEqual(['What is Dovetail?', 'what is dovetail?']);
    expect(hits.every((h) => h.app_id === appId && h.source === 'api' && Number(h.score) >= 0.99 && h.annotation_content === 'A Dify-compatible server.')).toBe(true);
    const listed = await (await api('/apps/annotations')).json();
    expect(listed.data.find((x: { id: string }) => x.id === ann.id).hit_count).toBe(2);

    // 4. a query scoring under the threshold goes to the model
    const missed = await chat('What is Dovetail exactly?');
    expect(missed.answer).toContain('echo:');
    expect(missed.metadata.annotation_reply).toBeUndefined();
    expect(modelCalls()).toBe(1);

    // 5. re-enabling with a lower threshold lets it match (score ≥ threshold)
    expect((await enable(0.98)).job_status).toBe('completed');
    expect((await chat('What is Dovetail exactly?')).answer).toBe('A Dify-compatible server.');

    // 6. disabling: the model answers again and the embeddings are gone
    const off = await replyJob('disable', { score_threshold: 0.98, embedding_provider_name: 'openai', embedding_model_name: 'text-embedding-3-small' });
    expect(off.job_status).toBe('completed');
    fake.requests.length = 0;
    expect((await chat('What is Dovetail?')).metadata.annotation_reply).toBeUndefined();
    expect(modelCalls()).toBe(1);
    expect(await db.selectFrom('annotation_embeddings').select('annotation_id').where('app_id', '=', appId).execute()).toEqual([]);
    await api(`/apps/annotations/${ann.id}`, { method: 'DELETE' });
  });

  it('keeps embeddings up to date when annotations are added, edited and deleted while enabled', async () => {
    expect((await enable(0.99)).job_status).toBe('completed');
    const db = s.runtime.store.db;
    const embedded = (id: string, question: string) =>
      waitFor(async () => {
        const row = await db.selectFrom('annotation_embeddings').select('question').where('annotation_id', '=', id).executeTakeFirst();
        return row?.question === question ? true : undefined;
      });

    // added after enabling
    const a = await create('How do refunds work?', 'Within 30 days.');
    await embedded(a.id as string, 'How do refunds work?');
    expect((await chat('how do refunds work?')).answer).toBe('Within 30 days.');

    // edited: the new question matches, the old one no longer does
    await api(`/apps/annotations/${a.id}`, { method: 'PUT', body: { question: 'Tell me a joke about cats', answer: 'Meow.' } });
    await embedded(a.id as string, 'Tell me a joke about cats');
    expect((await chat('tell me a joke about cats')).answer).toBe('Meow.');
    fake.requests.length = 0;
    expect((await chat('How do refunds work?')).metadata.annotation_reply).toBeUndefined();
    expect(modelCalls()).toBe(1);

    // deleted: it answers no more, and its embedding and hit history are gone
    expect((await api(`/apps/annotations/${a.id}`, { method: 'DELETE' })).status).toBe(204);
    expect((await chat('Tell me a joke about cats')).metadata.annotation_reply).toBeUndefined();
    expect(await db.selectFrom('annotation_embeddings').select('annotation_id').where('annotation_id', '=', a.id as string).execute()).toEqual([]);
    expect(await db.selectFrom('annotation_hit_histories').select('id').where('annotation_id', '=', a.id as string).execute()).toEqual([]);
  });

  it('an enable job whose embeddings fail ends in error; a failing lookup at answer time falls back to the model', async () => {
    const ann = await create('Where is the office?', 'In Lisbon.');
    expect((await enable(0.99)).job_status).toBe('completed');
    fake.behaviour = { embeddingsFailStatus: 500 };
    // a different model makes the job re-embed, which fails
    const failed = await replyJob('enable', { score_threshold: 0.99, embedding_provider_name: 'openai', embedding_model_name: 'text-embedding-3-large' });
    expect(failed.job_status).toBe('error');
    expect(failed.error_msg).toContain('embeddings endpoint answered 500');
    // the previous setting still stands, but the query cannot be embedded: the model answers
    const r = await chat('Where is the office?');
    expect(r.metadata.annotation_reply).toBeUndefined();
    expect(r.answer).toContain('echo:');
    fake.behaviour = {};
    expect((await chat('Where is the office?')).answer).toBe('In Lisbon.');
    await api(`/apps/annotations/${ann.id}`, { method: 'DELETE' });
  });
});

describe('embedding model mapping without an embeddings endpoint', () => {
  it('accepts the built-in model and refuses others with a 400 naming the setting; a second call joins the unfinished job', async () => {
    // no worker in this process: jobs stay waiting
    const t = await startServer({ env: { QUEUE_WORKER: 'false' } });
    try {
      const { apiKey } = await t.importApp(chatApp());
      const post = (model: string) =>
        fetch(`${t.api}/apps/annotation-reply/enable`, {
          method: 'POST',
          headers: headers(apiKey),
          body: JSON.stringify({ score_threshold: 0.9, embedding_provider_name: 'openai', embedding_model_name: model }),
        });
      const bad = await post('text-embedding-3-small');
      expect(bad.status).toBe(400);
      const e = await bad.json();
      expect(e.code).toBe('invalid_param');
      expect(e.message).toContain('EMBEDDINGS_BASE_URL');
      expect(e.message).toContain('text-embedding-3-small');
      const ok = await post('universal-sentence-encoder-lite');
      expect(ok.status).toBe(200);
      const first = await ok.json();
      expect(first.job_status).toBe('waiting');
      const again = await post('universal-sentence-encoder-lite');
      expect(await again.json()).toEqual({ job_id: first.job_id, job_status: 'processing' });
      const st = await fetch(`${t.api}/apps/annotation-reply/enable/status/${first.job_id}`, { headers: headers(apiKey) });
      expect(await st.json()).toEqual({ job_id: first.job_id, job_status: 'waiting', error_msg: '' });
      // a disable is another action: its own job
      const dis = await fetch(`${t.api}/apps/annotation-reply/disable`, {
        method: 'POST',
        headers: headers(apiKey),
        body: JSON.stringify({ score_threshold: 0.9, embedding_provider_name: 'openai', embedding_model_name: 'text-embedding-3-small' }),
      });
      const d = await dis.json();
      expect(d.job_status).toBe('waiting');
      expect(d.job_id).not.toBe(first.job_id);
    } finally {
      await t.close();
    }
  });
});

describe('annotation reply in chatflows', () => {
  it('answers before the graph runs: no workflow events, one message event, message_end with annotation_reply', async () => {
    const { apiKey: flowKey } = await s.importApp(example('chatflow-assistant.yml'));
    const ann = await create('What are your opening hours?', 'Nine to five.', flowKey);
    expect((await enable(0.99, flowKey)).job_status).toBe('completed');
    const send = async (query: string, mode: 'blocking' | 'streaming', conversation_id?: string) =>
      api('/chat-messages', { method: 'POST', k: flowKey, body: { query, inputs: {}, user: 'u2', response_mode: mode, ...(conversation_id ? { conversation_id } : {}) } });

    const r = await send('what are your opening hours?', 'blocking');
    expect(r.status).toBe(200);
    const b = await r.json();
    expect(b).toMatchObject({ event: 'message', mode: 'advanced-chat', answer: 'Nine to five.' });
    expect(b.metadata.annotation_reply).toEqual({ id: ann.id, account: { id: null, name: 'Dify user' } });
    const db = s.runtime.store.db;
    const row = await db.selectFrom('messages').select(['workflow_run_id', 'annotation_id', 'answer', 'conversation_id']).where('id', '=', b.message_id).executeTakeFirstOrThrow();
    expect(row).toEqual({ workflow_run_id: null, annotation_id: ann.id, answer: 'Nine to five.', conversation_id: b.conversation_id });

    // streaming, continuing the conversation
    const st = await send('What are your opening hours?', 'streaming', b.conversation_id);
    const frames = dataFrames(parseSse(await st.text()));
    expect(frames.map((f) => f.event)).toEqual(['message', 'message_end']);
    expect(frames[0]).toMatchObject({ answer: 'Nine to five.', conversation_id: b.conversation_id });
    expect((frames[1]!.metadata as Record<string, unknown>).annotation_reply).toEqual({ id: ann.id, account: { id: null, name: 'Dify user' } });
    const hits = await db.selectFrom('annotation_hit_histories').select('message_id').where('annotation_id', '=', ann.id as string).execute();
    expect(hits).toHaveLength(2);

    // no match: the graph runs
    const other = await send('Tell me about quantum physics', 'streaming');
    const events = dataFrames(parseSse(await other.text())).map((f) => f.event);
    expect(events).toContain('workflow_started');
    expect(events).toContain('message_end');
  });
});

describe('annotation index', () => {
  it('an annotation written while an enable job swaps its vectors in is embedded by the catch-up sync', async () => {
    const { AnnotationIndex } = await import('../../src/annotations/annotation-index.js');
    const { EmbeddingModels } = await import('../../src/annotations/embedding-models.js');
    const { apiKey: k, appId: id } = await s.importApp(chatApp('Race'));
    await create('First question', 'one', k);
    const db = s.runtime.store.db;
    const index = new AnnotationIndex(db, new EmbeddingModels(s.config.knowledge, s.runtime.embedder), s.runtime.clock, 8);
    const lateId = '11111111-1111-4111-8111-111111111111';
    // 1. the job embeds what it saw; 2. inside its swap transaction another annotation appears
    await index.enable(id, { scoreThreshold: 0.99, provider: 'openai', model: 'text-embedding-3-small' }, async (tx) => {
      const now = Date.now();
      await tx.insertInto('app_annotations').values({ id: lateId, app_id: id, question: 'Late question', content: 'late', hit_count: 0, account_id: null, created_at: now, updated_at: now }).execute();
    });
    // 3. after the swap, the catch-up has embedded it too
    const rows = await db.selectFrom('annotation_embeddings').select(['question']).where('app_id', '=', id).orderBy('question').execute();
    expect(rows.map((r) => r.question)).toEqual(['First question', 'Late question']);
    expect((await index.match(id, 'late question'))?.id).toBe(lateId);
  });
});

describe('annotation reply against a slow or held embeddings endpoint', () => {
  /** An embeddings endpoint that answers, holds every request until `release()`, or never answers. */
  const ctl = { mode: 'answer' as 'answer' | 'hold' | 'hang', held: [] as (() => void)[] };
  let emb: import('node:http').Server;
  let t: TestServer;
  beforeAll(async () => {
    const http = await import('node:http');
    emb = http.createServer((req, res) => {
      let raw = '';
      req.on('data', (c: Buffer) => (raw += c.toString()));
      req.on('end', () => {
        const input = (JSON.parse(raw) as { input: string[] }).input;
        const answer = () => {
          const data = input.map((text, index) => ({ object: 'embedding', index, embedding: [text.length % 7, 1, 2, 3] }));
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ object: 'list', data }));
        };
        if (ctl.mode === 'hang') return;
        if (ctl.mode === 'hold') ctl.held.push(answer);
        else answer();
      });
    });
    await new Promise<void>((r) => emb.listen(0, '127.0.0.1', r));
    const port = (emb.address() as import('node:net').AddressInfo).port;
    t = await startServer({ env: { OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: fake.baseUrl, EMBEDDINGS_BASE_URL: `http://127.0.0.1:${port}/v1`, ANNOTATION_MATCH_TIMEOUT_MS: '300', ANNOTATION_QUESTION_MAX_CHARS: '40' } });
  });
  afterAll(async () => {
    ctl.mode = 'answer';
    for (const a of ctl.held.splice(0)) a();
    await t?.close();
    emb?.closeAllConnections();
    emb?.close();
  });
  const call = (k: string, path: string, init: { method?: string; body?: unknown } = {}) =>
    fetch(`${t.api}${path}`, { method: init.method ?? 'GET', headers: headers(k), ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}) });
  const settings = { score_threshold: 0.9, embedding_provider_name: 'openai', embedding_model_name: 'text-embedding-3-small' };
  const start = async (k: string, action: string) => ((await (await call(k, `/apps/annotation-reply/${action}`, { method: 'POST', body: settings })).json()) as { job_id: string }).job_id;
  const finished = (k: string, action: string, id: string) =>
    waitFor(async () => {
      const st = (await (await call(k, `/apps/annotation-reply/${action}/status/${id}`)).json()) as { job_status: string };
      return st.job_status === 'completed' || st.job_status === 'error' ? st : undefined;
    });
  const ask = async (k: string, query: string) =>
    (await (await call(k, '/chat-messages', { method: 'POST', body: { query, inputs: {}, user: 'u1', response_mode: 'blocking' } })).json()) as { answer: string; metadata: Record<string, unknown> };

  it('a disable sent while an enable is embedding wins: the enable commits nothing', async () => {
    const { apiKey } = await t.importApp(chatApp('Race'));
    expect((await call(apiKey, '/apps/annotations', { method: 'POST', body: { question: 'What is X?', answer: 'X is canned.' } })).status).toBe(201);
    ctl.mode = 'hold';
    const enabling = await start(apiKey, 'enable');
    await waitFor(async () => (ctl.held.length > 0 ? true : undefined));
    const disabling = await start(apiKey, 'disable');
    expect(await finished(apiKey, 'disable', disabling)).toMatchObject({ job_status: 'completed' });
    ctl.mode = 'answer';
    for (const a of ctl.held.splice(0)) a();
    expect(await finished(apiKey, 'enable', enabling)).toMatchObject({ job_status: 'completed' });
    const r = await ask(apiKey, 'What is X?');
    expect(r.metadata.annotation_reply).toBeUndefined();
    expect(r.answer).not.toBe('X is canned.');
  });

  it('an embeddings endpoint that never answers delays a chat by ANNOTATION_MATCH_TIMEOUT_MS at most; the model answers', async () => {
    const { apiKey } = await t.importApp(chatApp('Hang'));
    expect((await call(apiKey, '/apps/annotations', { method: 'POST', body: { question: 'What is X?', answer: 'X is canned.' } })).status).toBe(201);
    expect(await finished(apiKey, 'enable', await start(apiKey, 'enable'))).toMatchObject({ job_status: 'completed' });
    ctl.mode = 'hang';
    try {
      const r = await ask(apiKey, 'What is X?');
      expect(r.metadata.annotation_reply).toBeUndefined();
      expect(r.answer).not.toBe('X is canned.');
    } finally {
      ctl.mode = 'answer';
    }
  });

  it('limits named in their errors: question length, model name length, page', async () => {
    const { apiKey } = await t.importApp(chatApp('Limits'));
    const long = await call(apiKey, '/apps/annotations', { method: 'POST', body: { question: 'q'.repeat(41), answer: 'a' } });
    expect(long.status).toBe(400);
    expect(await long.json()).toMatchObject({ code: 'invalid_param', message: 'question must be at most 40 characters (ANNOTATION_QUESTION_MAX_CHARS)' });
    const model = await call(apiKey, '/apps/annotation-reply/enable', { method: 'POST', body: { ...settings, embedding_model_name: 'm'.repeat(256) } });
    expect(model.status).toBe(400);
    expect(((await model.json()) as { message: string }).message).toBe('embedding_model_name must be at most 255 characters');
    for (const path of ['/apps/annotations?page=99999999999999999999', '/app/feedbacks?page=99999999999999999999']) {
      const r = await call(apiKey, path);
      expect(r.status, path).toBe(400);
      expect(((await r.json()) as { code: string; message: string }).message, path).toMatch(/page/);
    }
  });
});
