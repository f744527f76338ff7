import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { generateText, streamText, type ModelMessage } from 'ai';
import { createOpenAI } from '@ai-sdk/openai';
import { startServer, type TestServer } from '../helpers/server.js';
import { example } from '../helpers/fixtures.js';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { openAiCompatibleProviders } from '../helpers/openai-providers.js';

/** A chat app with an input form (the `inputs` extension fills it). */
const CHAT_APP = `app:
  mode: chat
  name: Helper
kind: app
version: 0.3.1
model_config:
  model: { provider: openai, name: gpt-4o-mini, mode: chat, completion_params: {} }
  pre_prompt: 'You are {{persona}}.'
  user_input_form:
    - text-input: { label: Persona, variable: persona, required: false, max_length: 30 }
`;

let fake: FakeOpenAI;
let s: TestServer;
let chatKey: string;
let flowKey: string;
let completionKey: string;

/** The official client pointed at Dovetail with an app key. */
const client = (apiKey: string, extra: ConstructorParameters<typeof OpenAI>[0] = {}) => new OpenAI({ apiKey, baseURL: `${s.api}`, maxRetries: 0, ...extra });
/** The text of the model request's messages (what Dovetail sent upstream). */
const upstreamMessages = () => (fake.requests.at(-1)!.body.messages as { role: string; content: string }[]).map((m) => `${m.role}:${m.content}`);

beforeAll(async () => {
  fake = await startFakeOpenAI();
  s = await startServer({ runtime: { providers: openAiCompatibleProviders(fake.baseUrl) } });
  ({ apiKey: chatKey } = await s.importApp(CHAT_APP));
  ({ apiKey: flowKey } = await s.importApp(example('chatflow-assistant.yml').replace('provider: mock', 'provider: openai')));
  ({ apiKey: completionKey } = await s.importApp(example('completion-writer.yml').replace('provider: mock', 'provider: openai')));
});
afterAll(async () => {
  await s?.close();
  await fake?.close();
});

describe('OpenAI-compatible endpoint with the official openai client', () => {
  it('GET /v1/models lists the app as the one model', async () => {
    const models = await client(chatKey).models.list();
    expect(models.data.map((m) => [m.id, m.object, m.owned_by])).toEqual([['Helper', 'model', 'dovetail']]);
  });

  it('chat app, not streamed: the last user message is the query; the history continues the conversation it names', async () => {
    fake.behaviour = { reply: (b) => `reply#${(b.messages as unknown[]).length}` };
    const c = client(chatKey);
    const first = await c.chat.completions.create({ model: 'Helper', user: 'ann', messages: [{ role: 'system', content: 'ignored' }, { role: 'user', content: 'hello' }], inputs: { persona: 'a pirate' } } as OpenAI.ChatCompletionCreateParamsNonStreaming);
    expect(first.object).toBe('chat.completion');
    expect(first.choices[0]!.message).toMatchObject({ role: 'assistant', content: 'reply#2' });
    expect(first.choices[0]!.finish_reason).toBe('stop');
    expect(first.usage!.total_tokens).toBeGreaterThan(0);
    expect(upstreamMessages()).toEqual(['system:You are a pirate.', 'user:hello']);
    const conversationId = (first as unknown as { conversation_id: string }).conversation_id;
    expect(conversationId).toMatch(/^[0-9a-f-]{36}$/);

    // the client sends the whole history back: Dovetail finds the conversation by its last exchange
    const second = await c.chat.completions.create({ model: 'Helper', user: 'ann', messages: [{ role: 'user', content: 'hello' }, { role: 'assistant', content: 'reply#2' }, { role: 'user', content: 'again' }] });
    expect((second as unknown as { conversation_id: string }).conversation_id).toBe(conversationId);
    expect(upstreamMessages()).toEqual(['system:You are a pirate.', 'user:hello', 'assistant:reply#2', 'user:again']);

    // another end user with the same history does not see ann's conversation
    const other = await c.chat.completions.create({ model: 'Helper', user: 'bob', messages: [{ role: 'user', content: 'hello' }, { role: 'assistant', content: 'reply#2' }, { role: 'user', content: 'again' }] });
    expect((other as unknown as { conversation_id: string }).conversation_id).not.toBe(conversationId);
    expect(upstreamMessages()).toEqual(['system:You are .', 'user:again']);

    // the conversation_id extension names it directly (history not needed)
    await c.chat.completions.create({ model: 'Helper', user: 'ann', messages: [{ role: 'user', content: 'third' }], conversation_id: conversationId } as OpenAI.ChatCompletionCreateParamsNonStreaming);
    expect(upstreamMessages()).toEqual(['system:You are a pirate.', 'user:hello', 'assistant:reply#2', 'user:again', 'assistant:reply#4', 'user:third']);
    // the messages are the Dify API's too
    const msgs = await (await fetch(`${s.api}/messages?user=ann&conversation_id=${conversationId}`, { headers: { authorization: `Bearer ${chatKey}` } })).json();
    expect(msgs.data.map((m: { query: string }) => m.query)).toEqual(['hello', 'again', 'third']);
  });

  it('chat app, streamed: role, text chunks, finish reason, usage last; the user header names the end user', async () => {
    fake.behaviour = { reply: 'streamed answer here', chunkSize: 5 };
    const c = client(chatKey, { defaultHeaders: { 'X-Dovetail-User': 'carol' } });
    const stream = await c.chat.completions.create({ model: 'Helper', messages: [{ role: 'user', content: 'stream please' }], stream: true, stream_options: { include_usage: true } });
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    for await (const ch of stream) chunks.push(ch);
    expect(chunks[0]!.choices[0]!.delta.role).toBe('assistant');
    expect(chunks.flatMap((ch) => ch.choices.map((x) => x.delta.content ?? '')).join('')).toBe('streamed answer here');
    expect(chunks.filter((ch) => ch.choices.some((x) => x.delta.content)).length).toBeGreaterThan(1);
    expect(chunks.at(-2)!.choices[0]!.finish_reason).toBe('stop');
    expect(chunks.at(-1)!.choices).toEqual([]);
    expect(chunks.at(-1)!.usage!.total_tokens).toBeGreaterThan(0);
    expect(new Set(chunks.map((ch) => ch.id)).size).toBe(1);
    const convs = await (await fetch(`${s.api}/conversations?user=carol`, { headers: { authorization: `Bearer ${chatKey}` } })).json();
    expect(convs.data).toHaveLength(1);
    // the streamed conversation continues from the history too
    fake.behaviour = { reply: 'next' };
    const next = await c.chat.completions.create({ model: 'Helper', messages: [{ role: 'user', content: 'stream please' }, { role: 'assistant', content: 'streamed answer here' }, { role: 'user', content: 'more' }], stream: true });
    let conversation: string | undefined;
    for await (const ch of next) conversation = (ch as unknown as { conversation_id: string }).conversation_id;
    expect(conversation).toBe(convs.data[0].id);
  });

  it('chatflow, not streamed and streamed, keeps its conversation (memory window) across calls', async () => {
    fake.behaviour = { reply: (b) => `flow#${(b.messages as unknown[]).length}`, chunkSize: 3 };
    const c = client(flowKey);
    const first = await c.chat.completions.create({ model: 'any', user: 'dan', messages: [{ role: 'user', content: 'q1' }] });
    expect(first.choices[0]!.message.content).toBe('flow#2');
    expect(first.usage!.total_tokens).toBeGreaterThan(0);
    const stream = await c.chat.completions.create({ model: 'any', user: 'dan', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'q1' }, { role: 'assistant', content: 'flow#2' }, { role: 'user', content: 'q2' }] });
    let text = '';
    let usage: OpenAI.CompletionUsage | null | undefined;
    let conversation: string | undefined;
    for await (const ch of stream) {
      text += ch.choices[0]?.delta.content ?? '';
      if (ch.usage) usage = ch.usage;
      conversation = (ch as unknown as { conversation_id: string }).conversation_id;
    }
    expect(text).toBe('flow#4');
    expect(usage!.total_tokens).toBeGreaterThan(0);
    expect(conversation).toBe((first as unknown as { conversation_id: string }).conversation_id);
    expect(upstreamMessages()).toEqual(['system:You are a helpful assistant.', 'user:q1', 'assistant:flow#2', 'user:q2']);
  });

  it('completion app: the last user message is the query, the inputs extension fills the form', async () => {
    fake.behaviour = { reply: 'a paragraph' };
    const r = await client(completionKey).chat.completions.create({ model: 'w', user: 'eve', messages: [{ role: 'user', content: 'make it short' }], inputs: { topic: 'otters' } } as OpenAI.ChatCompletionCreateParamsNonStreaming);
    expect(r.choices[0]!.message.content).toBe('a paragraph');
    expect((r as unknown as Record<string, unknown>).conversation_id).toBeUndefined();
    expect(upstreamMessages().at(-1)).toContain('otters');
    expect(upstreamMessages().at(-1)).toContain('make it short');
  });

  it("errors leave in OpenAI's shape: bad key, a missing field, a missing required input, a workflow app", async () => {
    await expect(client('app-nope').chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'hi' }] })).rejects.toMatchObject({ status: 401, code: 'unauthorized', type: 'authentication_error' });
    const noMessages = await fetch(`${s.api}/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${chatKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'x' }) });
    expect(noMessages.status).toBe(400);
    expect(await noMessages.json()).toEqual({ error: { message: 'messages is required', type: 'invalid_request_error', param: null, code: 'invalid_param' } });
    await expect(client(chatKey).chat.completions.create({ model: 'x', messages: [{ role: 'assistant', content: 'hi' }] })).rejects.toMatchObject({ status: 400, message: expect.stringContaining('messages must end with a user message') });
    await expect(client(completionKey).chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'hi' }] })).rejects.toMatchObject({ status: 400, code: 'invalid_param', message: expect.stringContaining('topic') });
    const { apiKey: wfKey } = await s.importApp(example('workflow-branching.yml'));
    await expect(client(wfKey).chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'hi' }] })).rejects.toMatchObject({ status: 400, code: 'not_chat_completion_app' });
    // a model failure inside a stream is an error frame the client raises
    fake.behaviour = { failStatus: 500, failMessage: 'upstream broke' };
    const stream = await client(chatKey).chat.completions.create({ model: 'x', user: 'fay', messages: [{ role: 'user', content: 'hi' }], stream: true });
    await expect((async () => {
      for await (const ch of stream) void ch;
    })()).rejects.toThrow(/upstream broke|500/);
  });

  it('does not change the Dify routes: /v1/chat-messages still answers in Dify shape', async () => {
    fake.behaviour = { reply: 'dify' };
    const r = await fetch(`${s.api}/chat-messages`, { method: 'POST', headers: { authorization: `Bearer ${chatKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ query: 'x', inputs: {}, user: 'gus' }) });
    expect(await r.json()).toMatchObject({ event: 'message', answer: 'dify', mode: 'chat' });
    const bad = await fetch(`${s.api}/chat-messages`, { method: 'POST', headers: { authorization: 'Bearer app-nope', 'content-type': 'application/json' }, body: '{}' });
    expect(await bad.json()).toEqual({ code: 'unauthorized', message: 'Access token is invalid', status: 401 });
  });
});

describe("OpenAI-compatible endpoint with the Vercel AI SDK's OpenAI provider", () => {
  /** The provider's chat-completions model pointed at Dovetail with an app key. */
  const model = (apiKey: string) => createOpenAI({ apiKey, baseURL: s.api, headers: { 'X-Dovetail-User': 'vercel-user' } }).chat('app');

  it('chat app: generateText, then streamText with the history continues the conversation', async () => {
    fake.behaviour = { reply: (b) => `ai#${(b.messages as unknown[]).length}`, chunkSize: 2 };
    const messages: ModelMessage[] = [{ role: 'user', content: 'first' }];
    const first = await generateText({ model: model(chatKey), messages, maxRetries: 0 });
    expect(first.text).toBe('ai#2');
    expect(first.usage.totalTokens).toBeGreaterThan(0);
    messages.push({ role: 'assistant', content: first.text }, { role: 'user', content: 'second' });
    const second = streamText({ model: model(chatKey), messages, maxRetries: 0 });
    let text = '';
    for await (const t of second.textStream) text += t;
    expect(text).toBe('ai#4');
    expect((await second.usage).totalTokens).toBeGreaterThan(0);
    expect(upstreamMessages()).toEqual(['system:You are .', 'user:first', 'assistant:ai#2', 'user:second']);
  });

  it('chatflow: streamText, then generateText with the history continues the conversation', async () => {
    fake.behaviour = { reply: (b) => `vf#${(b.messages as unknown[]).length}`, chunkSize: 2 };
    const messages: ModelMessage[] = [{ role: 'user', content: 'one' }];
    const first = streamText({ model: model(flowKey), messages, maxRetries: 0 });
    let text = '';
    for await (const t of first.textStream) text += t;
    expect(text).toBe('vf#2');
    messages.push({ role: 'assistant', content: text }, { role: 'user', content: 'two' });
    const second = await generateText({ model: model(flowKey), messages, maxRetries: 0 });
    expect(second.text).toBe('vf#4');
    expect(upstreamMessages()).toEqual(['system:You are a helpful assistant.', 'user:one', 'assistant:vf#2', 'user:two']);
  });
});
