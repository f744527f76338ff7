import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import net from 'node:net';
import { Agent, fetch as undiciFetch } from 'undici';
import { startServer, type TestServer } from '../helpers/server.js';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { parseSse } from '../helpers/sse.js';
import { completionApp } from '../helpers/apps.js';

/**
 * Clients' connections: an event stream tells its client how long the connection is kept, so the
 * next request reuses it; a closing server lets every kept-alive connection go as soon as it has
 * no response in progress.
 */

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

// A close held by a connection fails by the test's time limit.
describe('clients’ connections', { timeout: 20_000 }, () => {
  it('an event stream tells the client how long its connection is kept, so its next request reuses it', async () => {
    const { s, apiKey } = await start();
    // a client that keeps a connection as long as the server says, and 1 s without a hint
    const agent = new Agent({ connections: 1, keepAliveTimeout: 1_000, keepAliveMaxTimeout: 600_000 });
    let connections = 0;
    s.app.server.on('connection', () => connections++);
    try {
      fake.behaviour = { reply: 'Otters float.', chunkSize: 4 };
      const first = await stream(s, apiKey, agent);
      expect(first.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
      expect(first.headers.get('connection')).toBe('keep-alive');
      expect(first.headers.get('keep-alive')).toBe(`timeout=${Math.floor(s.app.server.keepAliveTimeout / 1000)}`);
      await first.text();
      // longer than the client's own idle time: only the server's hint keeps the connection
      await new Promise((r) => setTimeout(r, 1_500));
      const second = await stream(s, apiKey, agent);
      expect(parseSse(await second.text()).some((f) => f.kind === 'data' && f.data.event === 'message_end')).toBe(true);
      expect(connections).toBe(1);
    } finally {
      await agent.close();
      await s.close();
    }
  });

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
      // the answer ends normally, then the close completes
      expect(text).toContain('"event":"message_end"');
      await closed;
    } finally {
      await agent.close();
    }
  });

  it('a connection that never sent a request, and one kept alive after its answer, do not hold the close', async () => {
    const { s } = await start();
    const agent = new Agent({ keepAliveTimeout: 600_000, keepAliveMaxTimeout: 600_000 });
    // a client's spare connection: opened, nothing sent (Node counts it as busy)
    const spare = net.connect(Number(new URL(s.url).port), '127.0.0.1');
    await new Promise((r) => spare.once('connect', r));
    const spareClosed = new Promise((r) => spare.once('close', r));
    spare.resume();
    try {
      expect((await undiciFetch(`${s.url}/health`, { dispatcher: agent })).status).toBe(200);
      await s.close();
      await spareClosed;
    } finally {
      spare.destroy();
      await agent.close();
    }
  });
});
