import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Readable } from 'node:stream';
import { ChatClient, CompletionClient } from 'dify-client';
import { startServer, type TestServer } from '../helpers/server.js';
import { dataFrames, parseSse } from '../helpers/sse.js';
import { validateResponse, validateSchema } from '../helpers/openapi.js';
import { example } from '../helpers/fixtures.js';

/** The official Node SDK (dify-client 2.3.2 from npm) driving Dovetail unchanged. */
let s: TestServer;
let client: CompletionClient;

beforeAll(async () => {
  s = await startServer();
  const { apiKey } = await s.importApp(example('completion-writer.yml'));
  client = new CompletionClient(apiKey, s.api);
});
afterAll(async () => s?.close());

// The SDK's typings say `user: {}` and `rating: number`; Dify's wire (and the SDK's code) take strings.
const user = 'sdk-user' as unknown as object;

async function collect(stream: Readable): Promise<string> {
  let text = '';
  for await (const chunk of stream) text += (chunk as Buffer).toString('utf8');
  return text;
}

describe('dify-client CompletionClient', () => {
  it('blocking completion, then feedback on it', async () => {
    const r = await client.createCompletionMessage({ topic: 'lighthouses', tone: 'formal' }, user, false);
    expect(r.status).toBe(200);
    validateResponse('/completion-messages', 'post', 200, r.data);
    expect(r.data.answer).toContain('Write a short paragraph about lighthouses in a formal tone.');

    const fb = await client.messageFeedback(r.data.message_id, 'like' as unknown as number, user);
    expect(fb.data).toEqual({ result: 'success' });
    const list = await client.sendRequest('GET', '/app/feedbacks', null, { page: 1, limit: 5 });
    validateResponse('/app/feedbacks', 'get', 200, list.data);
    expect(list.data.data[0]).toMatchObject({ message_id: r.data.message_id, rating: 'like', from_source: 'user' });
  });

  it('streaming completion: the raw stream parses as Dify SSE', async () => {
    const r = await client.createCompletionMessage({ topic: 'tides' }, user, true);
    expect(r.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    const data = dataFrames(parseSse(await collect(r.data as Readable)));
    for (const d of data) validateSchema('ChunkCompletionEvent', d);
    expect(data.at(-1)!.event).toBe('message_end');
    expect(data.filter((d) => d.event === 'message').map((d) => d.answer).join('')).toMatch(/^\[mock model\].*tides/);
  });

  it('an SDK error surfaces the Dify envelope', async () => {
    const err = await client.createCompletionMessage({}, user, false).catch((e: { response: { status: number; data: unknown } }) => e);
    expect((err as { response: { status: number } }).response.status).toBe(400);
    expect((err as { response: { data: unknown } }).response.data).toEqual({ code: 'invalid_param', message: 'topic is required in input form', status: 400 });
  });
});

describe('dify-client ChatClient on a chat app', () => {
  it('a conversation of two messages, listed, renamed, with a streamed answer', async () => {
    const { apiKey } = await s.importApp(example('chat-helper.yml'));
    const chat = new ChatClient(apiKey, s.api);
    const first = await chat.createChatMessage({}, 'What is a tenon?', user, false);
    validateResponse('/chat-messages', 'post', 200, first.data);
    const conversationId = first.data.conversation_id as string;
    const second = await chat.createChatMessage({}, 'And a mortise?', user, true, conversationId);
    const data = dataFrames(parseSse(await collect(second.data as Readable)));
    for (const d of data) validateSchema('ChunkChatEvent', d);
    expect(new Set(data.map((d) => d.conversation_id))).toEqual(new Set([conversationId]));
    const msgs = await chat.getConversationMessages(user, conversationId);
    expect(msgs.data.data.map((m: { query: string }) => m.query)).toEqual(['What is a tenon?', 'And a mortise?']);
    const renamed = await chat.renameConversation(conversationId, 'Joinery', user);
    expect(renamed.data).toMatchObject({ id: conversationId, name: 'Joinery' });
  });
});
