import { expect } from 'vitest';
import { startServer, type TestServer } from './server.js';
import { startFakeOpenAI, type FakeOpenAI } from './fake-openai.js';
import { openAiCompatibleProviders } from './openai-providers.js';
import { endNode, llmNode, startNode, workflowDsl } from './workflow-dsl.js';
import type { Clock } from '../../src/infra/clock.js';
import type { StatsApp } from '../../src/console/app-stats.js';

/**
 * Traffic for the console's monitoring figures, made through the Service API: a chat app and a
 * workflow app on the real server with the real OpenAI-compatible provider path to a local fake
 * model, whose every answer moves the server's clock forward by the latency the test chose, so
 * each message's and run's time and latency are known. Prices come from the configured table.
 */

/** A clock the test sets; the fake model moves it forward by each answer's latency. */
export class SetClock implements Clock {
  #t = Date.UTC(2026, 2, 1);
  now(): number {
    return this.#t;
  }
  set(t: number): void {
    this.#t = t;
  }
  advance(ms: number): void {
    this.#t += ms;
  }
}

/** $0.15 per million prompt tokens, $0.60 per million completion tokens. */
export const PRICE = { input: '0.15', output: '0.6', unit: '0.000001', currency: 'USD' };

function chatApp(): string {
  return `app:
  mode: chat
  name: Stats chat
kind: app
version: 0.3.1
model_config:
  model:
    provider: langgenius/openai/openai
    name: gpt-test
    mode: chat
    completion_params: {}
  pre_prompt: 'You answer briefly.'
`;
}

/** A message as the API answered it. */
export interface SentMessage {
  readonly id: string;
  readonly conversationId: string;
  readonly tokens: number;
  readonly price: number;
}

export interface StatsTraffic {
  readonly s: TestServer;
  readonly clock: SetClock;
  readonly chat: { appId: string; apiKey: string };
  readonly flow: { appId: string; apiKey: string };
  /** A chat message sent at `at` (epoch ms) answered after `latency` ms; `fail`: the model answers 500. */
  message(at: number, user: string, latency: number, conversationId?: string, fail?: boolean): Promise<SentMessage>;
  /** A workflow run started at `at` whose model answers after `latency` ms; `fail`: it fails. */
  run(at: number, user: string, latency: number, fail?: boolean): Promise<{ tokens: number }>;
  feedback(messageId: string, user: string, rating: 'like' | 'dislike'): Promise<void>;
  /** The apps as the statistics service takes them. */
  apps(...which: ('chat' | 'flow')[]): StatsApp[];
  close(): Promise<void>;
}

export async function startStatsTraffic(): Promise<StatsTraffic> {
  const clock = new SetClock();
  const fake: FakeOpenAI = await startFakeOpenAI();
  let latencyMs = 0;
  const answer = () => {
    fake.behaviour = {
      reply: () => {
        clock.advance(latencyMs);
        return 'a short answer';
      },
    };
  };
  answer();
  const s = await startServer({ clock, runtime: { providers: openAiCompatibleProviders(fake.baseUrl) }, overrides: { prices: { 'gpt-test': PRICE } } });
  const chat = await s.importApp(chatApp());
  const flow = await s.importApp(workflowDsl([startNode(), llmNode('llm', 'Say something'), endNode({ text: ['llm', 'text'] })], [['start', 'llm'], ['llm', 'end']], { name: 'Stats workflow' }));
  const post = (key: string, path: string, body: unknown) =>
    fetch(`${s.api}${path}`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const prepare = (at: number, latency: number, fail: boolean) => {
    clock.set(at);
    latencyMs = latency;
    if (fail) fake.behaviour = { failStatus: 500, failMessage: 'upstream broke' };
    else answer();
  };
  return {
    s,
    clock,
    chat,
    flow,
    async message(at, user, latency, conversationId = '', fail = false) {
      prepare(at, latency, fail);
      const r = await post(chat.apiKey, '/chat-messages', { query: `question from ${user} at ${at}`, inputs: {}, user, response_mode: 'blocking', conversation_id: conversationId });
      const body = (await r.json()) as { message_id?: string; conversation_id?: string; metadata?: { usage: { total_tokens: number; total_price: string } } };
      if (fail) {
        expect(r.status).toBeGreaterThanOrEqual(400);
        return { id: '', conversationId, tokens: 0, price: 0 };
      }
      expect(r.status).toBe(200);
      return { id: body.message_id!, conversationId: body.conversation_id!, tokens: body.metadata!.usage.total_tokens, price: Number(body.metadata!.usage.total_price) };
    },
    async run(at, user, latency, fail = false) {
      prepare(at, latency, fail);
      const r = await post(flow.apiKey, '/workflows/run', { inputs: {}, user, response_mode: 'blocking' });
      const body = (await r.json()) as { data: { status: string; total_tokens: number } };
      expect(body.data.status).toBe(fail ? 'failed' : 'succeeded');
      return { tokens: body.data.total_tokens };
    },
    async feedback(messageId, user, rating) {
      expect((await post(chat.apiKey, `/messages/${messageId}/feedbacks`, { rating, user })).status).toBe(200);
    },
    apps: (...which) => which.map((w) => (w === 'chat' ? { id: chat.appId, mode: 'chat' } : { id: flow.appId, mode: 'workflow' })),
    async close() {
      await s.close();
      await fake.close();
    },
  };
}
