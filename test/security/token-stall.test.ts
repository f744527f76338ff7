/**
 * Issue 14, "Event-loop stall: token counting is quadratic on long runs of letters": a
 * 20,000-letter `query` blocked every request for 92 s and 2 MB for over 10 minutes; history is
 * re-counted on every turn, and an upstream 400 triggers the count too. Counting is now linear and
 * large texts are counted on a worker thread: the server answers every /health probe throughout and
 * lives on (how fast: `npm run bench health-under-attack`).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.js';
import { spawnServer, type ServerProcess } from '../helpers/server-process.js';
import { openAiCompatibleEnv } from '../helpers/openai-providers.js';
import { watchHealth, type HealthWatch } from '../helpers/health-watch.js';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';

const CHAT_APP = `app:
  mode: chat
  name: Counter
kind: app
version: 0.3.1
model_config:
  model:
    provider: langgenius/openai/openai
    name: gpt-4o-mini
    mode: chat
    completion_params:
      temperature: 0.1
  pre_prompt: 'You are terse.'
`;

/** 2 MB of letters and nothing else, not repeating (no cache can help): one cl100k pre-tokenizer piece. */
function letters(n: number): string {
  let x = 7;
  const out = new Array<string>(n);
  for (let i = 0; i < n; i++) {
    x = (x * 1103515245 + 12345) & 0x7fffffff;
    out[i] = String.fromCharCode(97 + (x % 26));
  }
  return out.join('');
}
const QUERY = letters(2 * 1024 * 1024);

let fake: FakeOpenAI;
let prep: TestServer;
let server: ServerProcess;
let key: string;
let health: HealthWatch;

beforeAll(async () => {
  // The upstream reports no usage, so Dovetail counts the prompt and the answer itself.
  fake = await startFakeOpenAI({ reply: 'ok', usage: false });
  prep = await startServer();
  ({ apiKey: key } = await prep.importApp(CHAT_APP));
  await prep.stop();
  server = await spawnServer(prep, openAiCompatibleEnv(fake.baseUrl));
  health = watchHealth(server.url);
}, 180_000);

afterAll(async () => {
  const report = await health?.stop();
  await server?.close();
  await prep?.close();
  await fake?.close();
  // Checked last so that a failure here still closes everything above.
  expect(report.failures).toEqual([]);
  expect(report.probes).toBeGreaterThan(10);
}, 180_000);

async function chat(query: string, conversationId = ''): Promise<{ status: number; body: Record<string, any> }> {
  const r = await fetch(`${server.api}/chat-messages`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ inputs: {}, query, response_mode: 'blocking', user: 'attacker', conversation_id: conversationId }),
  });
  return { status: r.status, body: (await r.json()) as Record<string, any> };
}

describe('a 2 MB letters-only query to a chat app', () => {
  let conversationId = '';

  it('is answered, with the prompt counted (the upstream reported no usage), while /health answers', async () => {
    const r = await chat(QUERY);
    expect(r.status).toBe(200);
    expect(r.body.answer).toBe('ok');
    // Random letters are at least one token per 8 letters, whatever the slicing.
    expect(r.body.metadata.usage.prompt_tokens).toBeGreaterThan(QUERY.length / 8);
    expect(r.body.metadata.usage.completion_tokens).toBe(1);
    conversationId = r.body.conversation_id as string;
  }, 180_000);

  it('a short second turn re-counts the history (the 2 MB turn) off the event loop', async () => {
    const r = await chat('and now?', conversationId);
    expect(r.status).toBe(200);
    expect(r.body.answer).toBe('ok');
    expect(server.alive()).toBe(true);
  }, 180_000);

  it('an upstream 400 counts the prompt for the usage too, off the event loop', async () => {
    fake.behaviour = { failStatus: 400, failMessage: 'context length exceeded' };
    const r = await chat(QUERY);
    expect(r.status).toBe(400);
    expect(r.body.code).toBe('completion_request_error');
    expect(String(r.body.message)).toMatch(/context length exceeded/);
    fake.behaviour = { reply: 'ok', usage: false };
  }, 180_000);
});
