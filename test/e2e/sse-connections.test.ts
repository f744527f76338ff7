import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agent, fetch as undiciFetch } from 'undici';
import { startServer, type TestServer } from '../helpers/server.js';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { completionApp } from '../helpers/apps.js';

/** An event stream's kept-alive connection is let go when the server closes. */

let fake: FakeOpenAI;
beforeAll(async () => {
  fake = await startFakeOpenAI();
});
afterAll(async () => {
  await fake?.close();
});

const start = async () => {
  const s = await startServer({ env: { OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: fake.baseUrl } });
  const { apiKey } = await s.importApp(completionApp());
  return { s, apiKey };
};

const stream = (s: TestServer, apiKey: string, dispatcher: Agent) =>
  undiciFetch(`${s.api}/completion-messages`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ inputs: { topic: 'otters' }, user: 'alice', response_mode: 'streaming' }),
    dispatcher,
  });

describe('event streams and their connections', { timeout: 30_000 }, () => {
  it('a stream that ends after the server began to close does not hold the close for its kept-alive connection', async () => {
    const { s, apiKey } = await start();
    // a client that would keep its connection for ten minutes
    const agent = new Agent({ keepAliveTimeout: 600_000, keepAliveMaxTimeout: 600_000 });
    try {
      fake.behaviour = { reply: 'x'.repeat(40), chunkSize: 1, delayMs: 20 };
      const res = await stream(s, apiKey, agent);
      const reader = res.body!.getReader();
      await reader.read(); // the stream is open
      const closed = s.close();
      let text = '';
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        text += Buffer.from(value).toString();
      }
      // the answer ends normally, then the close completes (without the fix it waits for the client's ten minutes)
      expect(text).toContain('"event":"message_end"');
      await closed;
    } finally {
      await agent.close();
    }
  });
});
