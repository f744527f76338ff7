import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.js';
import { example } from '../helpers/fixtures.js';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { openAiCompatibleProviders } from '../helpers/openai-providers.js';
import { MemoryHumanInput } from '../helpers/memory-human-input.js';
import { dataFrames, parseSse, readSse } from '../helpers/sse.js';
import { startNode, workflowDsl } from '../helpers/workflow-dsl.js';

let s: TestServer;
let fake: FakeOpenAI;
let key: string;
const gateway = new MemoryHumanInput();

beforeAll(async () => {
  fake = await startFakeOpenAI();
  s = await startServer({ runtime: { providers: openAiCompatibleProviders(fake.baseUrl), humanInput: gateway } });
  gateway.resumer = s.runtime.runs;
  ({ apiKey: key } = await s.importApp(example('chatflow-assistant.yml').replace('provider: mock', 'provider: openai')));
});
afterAll(async () => {
  await s?.close();
  await fake?.close();
});

const headers = (k = key) => ({ authorization: `Bearer ${k}`, 'content-type': 'application/json' });
const send = (body: Record<string, unknown>, k = key) => fetch(`${s.api}/chat-messages`, { method: 'POST', headers: headers(k), body: JSON.stringify({ inputs: {}, user: 'alice', ...body }) });

describe('chatflow: POST /chat-messages', () => {
  it('blocking: answers and creates a conversation; continuing it sends the memory window', async () => {
    fake.behaviour = { reply: (b) => `reply#${(b.messages as unknown[]).length}` };
    const r = await send({ query: 'first question' });
    expect(r.status).toBe(200);
    const first = await r.json();
    expect(Object.keys(first)).toEqual(['event', 'task_id', 'id', 'message_id', 'conversation_id', 'mode', 'answer', 'metadata', 'created_at']);
    expect(first).toMatchObject({ event: 'message', mode: 'advanced-chat', answer: 'reply#2' });
    expect(first.id).toBe(first.message_id);
    const second = await (await send({ query: 'second question', conversation_id: first.conversation_id })).json();
    expect(second.conversation_id).toBe(first.conversation_id);
    expect(fake.requests.at(-1)!.body.messages).toEqual([
      { role: 'system', content: 'You are a helpful assistant.' },
      { role: 'user', content: 'first question' },
      { role: 'assistant', content: 'reply#2' },
      { role: 'user', content: 'second question' },
    ]);
    const msgs = await (await fetch(`${s.api}/messages?user=alice&conversation_id=${first.conversation_id}`, { headers: headers() })).json();
    expect(msgs).toMatchObject({ limit: 20, has_more: false });
    expect(msgs.data.map((m: { query: string; answer: string; status: string }) => [m.query, m.answer, m.status])).toEqual([
      ['first question', 'reply#2', 'normal'],
      ['second question', 'reply#4', 'normal'],
    ]);
    const page = await (await fetch(`${s.api}/messages?user=alice&conversation_id=${first.conversation_id}&limit=1`, { headers: headers() })).json();
    expect(page.has_more).toBe(true);
    expect(page.data[0].query).toBe('second question');
    const convs = await (await fetch(`${s.api}/conversations?user=alice`, { headers: headers() })).json();
    expect(convs.data.map((c: { id: string }) => c.id)).toContain(first.conversation_id);
    expect(Object.keys(convs.data[0])).toEqual(['id', 'name', 'inputs', 'status', 'introduction', 'created_at', 'updated_at']);
  });

  it('streaming: workflow events interleaved with message events, message_end before workflow_finished', async () => {
    fake.behaviour = { reply: 'streamed answer', chunkSize: 3 };
    const r = await send({ query: 'hi', response_mode: 'streaming' });
    const events = dataFrames(parseSse(await r.text()));
    const order = events.map((e) => e.event);
    expect(order[0]).toBe('workflow_started');
    expect(order.slice(-2)).toEqual(['message_end', 'workflow_finished']);
    // the LLM's tokens stream live as `message` events while the LLM node runs (answer = {{#llm.text#}})
    const llmStart = events.findIndex((e) => e.event === 'node_started' && (e.data as { node_id: string }).node_id === 'llm');
    const llmEnd = events.findIndex((e) => e.event === 'node_finished' && (e.data as { node_id: string }).node_id === 'llm');
    const live = events.slice(llmStart, llmEnd).filter((e) => e.event === 'message');
    expect(live.length).toBeGreaterThan(1);
    expect(live.map((e) => e.answer).join('')).toBe('streamed answer');
    expect(events.filter((e) => e.event === 'message')).toHaveLength(live.length);
    for (const e of events) expect(Object.keys(e).slice(0, 4)).toEqual(['event', 'conversation_id', 'message_id', 'created_at']);
    const msg = events.find((e) => e.event === 'message')!;
    expect(msg.id).toBe(msg.message_id);
    const end = events.find((e) => e.event === 'message_end')!;
    expect(end.metadata).toHaveProperty('usage');
  });

  it('errors: unknown conversation 404, bad conversation id 400, wrong app mode 400', async () => {
    const r = await send({ query: 'x', conversation_id: '00000000-0000-0000-0000-000000000000' });
    expect(r.status).toBe(404);
    expect(await r.json()).toEqual({ code: 'not_found', message: 'Conversation Not Exists.', status: 404 });
    const bad = await send({ query: 'x', conversation_id: 'nope' });
    expect(bad.status).toBe(400);
    expect((await bad.json()).message).toMatch(/conversation_id/);
    const wf = await s.importApp(example('workflow-branching.yml'));
    const w = await send({ query: 'x' }, wf.apiKey);
    expect((await w.json()).code).toBe('not_chat_app');
    const other = await fetch(`${s.api}/messages?user=bob&conversation_id=00000000-0000-0000-0000-000000000000`, { headers: headers() });
    expect(other.status).toBe(404);
  });

  it('another user cannot see the conversation', async () => {
    fake.behaviour = {};
    const first = await (await send({ query: 'mine' })).json();
    const r = await fetch(`${s.api}/messages?user=mallory&conversation_id=${first.conversation_id}`, { headers: headers() });
    expect(r.status).toBe(404);
  });

  it('POST /chat-messages/{task_id}/stop stops the owner\'s task only', async () => {
    fake.behaviour = { reply: 'z'.repeat(300), chunkSize: 1, delayMs: 10 };
    const r = await send({ query: 'long', response_mode: 'streaming' });
    let taskId = '';
    let messageId = '';
    const seen: string[] = [];
    for await (const f of readSse(r)) {
      if (f.kind !== 'data') continue;
      seen.push(String(f.data.event));
      if (!taskId && f.data.event === 'node_started' && (f.data.data as { node_type: string }).node_type === 'llm') {
        taskId = String(f.data.task_id);
        messageId = String(f.data.message_id);
        const wrong = await fetch(`${s.api}/chat-messages/${taskId}/stop`, { method: 'POST', headers: headers(), body: JSON.stringify({ user: 'mallory' }) });
        expect(await wrong.json()).toEqual({ result: 'success' });
        const ok = await fetch(`${s.api}/chat-messages/${taskId}/stop`, { method: 'POST', headers: headers(), body: JSON.stringify({ user: 'alice' }) });
        expect(await ok.json()).toEqual({ result: 'success' });
      }
    }
    expect(seen.at(-1)).toBe('workflow_finished');
    expect(seen).not.toContain('message_end');
    const row = await s.runtime.store.db.selectFrom('messages').selectAll().where('id', '=', messageId).executeTakeFirstOrThrow();
    expect(row.status).toBe('stopped');
  });

  it('a chatflow pauses at a human-input node and resumes the same way', async () => {
    const yaml = workflowDsl(
      [
        startNode(),
        { id: 'ask', type: 'human-input', form_content: 'Approve {{#sys.query#}}?', inputs: [], user_actions: [{ id: 'yes', title: 'Yes' }] },
        { id: 'answer', type: 'answer', answer: 'approved {{#sys.query#}}' },
      ],
      [['start', 'ask'], ['ask', 'answer', 'yes']],
      { mode: 'advanced-chat' },
    );
    const { apiKey } = await s.importApp(yaml);
    const events = dataFrames(parseSse(await (await send({ query: 'deploy', response_mode: 'streaming' }, apiKey)).text()));
    expect(events.map((e) => e.event).slice(-2)).toEqual(['human_input_required', 'workflow_paused']);
    const req = events.at(-2)!;
    expect((req.data as { form_content: string }).form_content).toBe('Approve deploy?');
    const runId = String(req.workflow_run_id);
    await gateway.submit(String((req.data as { form_token: string }).form_token), 'yes');
    let run = await s.runtime.runs.find(runId);
    for (let i = 0; i < 200 && run!.status !== 'succeeded'; i++) {
      await new Promise((res) => setTimeout(res, 10));
      run = await s.runtime.runs.find(runId);
    }
    expect(run!.status).toBe('succeeded');
    const msg = await s.runtime.store.db.selectFrom('messages').selectAll().where('workflow_run_id', '=', runId).executeTakeFirstOrThrow();
    expect(msg.answer).toBe('approved deploy');
    const log = await s.runtime.store.db.selectFrom('workflow_run_events').select('event').where('run_id', '=', runId).orderBy('seq').execute();
    expect(log.map((e) => e.event).slice(-4)).toEqual(['message', 'node_finished', 'message_end', 'workflow_finished']);
  });
});
