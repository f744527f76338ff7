import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { readSse } from '../helpers/sse.js';
import { cliOn, sharedData, startRole, type RoleProcess, type SharedData } from '../helpers/cluster.js';

/**
 * A chat answer whose process is killed (SIGKILL) mid-stream: its message keeps the answer saved
 * so far and is ended `error` by a worker within the lease, and (on a shared Redis limiter) the
 * app's concurrency slot the dead process held is freed then, not when it goes stale.
 */
const CHAT_APP = `app:
  mode: chat
  name: Slow talker
kind: app
version: 0.3.1
model_config:
  model:
    provider: langgenius/openai/openai
    name: gpt-4o-mini
    mode: chat
  pre_prompt: ''
`;
const REPLY = 'abcdefghij'.repeat(300);
const redisUrl = process.env.TEST_REDIS_URL;

let fake: FakeOpenAI;
let data: SharedData;
const procs: RoleProcess[] = [];
beforeAll(async () => {
  // 3,000 one-character chunks 20 ms apart: a minute of streaming, far longer than the test
  fake = await startFakeOpenAI({ reply: REPLY, chunkSize: 1, delayMs: 20 });
  data = sharedData({
    OPENAI_API_KEY: 'sk-test',
    OPENAI_BASE_URL: fake.baseUrl,
    MESSAGE_SAVE_INTERVAL_MS: '100',
    MESSAGE_LEASE_SECONDS: '1',
    APP_MAX_ACTIVE_REQUESTS: '1',
    ...(redisUrl ? { REDIS_URL: redisUrl, REDIS_KEY_PREFIX: `t${Math.random().toString(36).slice(2, 8)}:` } : {}),
  });
});
afterAll(async () => {
  await Promise.all(procs.map((p) => p.close()));
  await data?.remove();
  await fake?.close();
});

async function start(role: 'api' | 'worker'): Promise<RoleProcess> {
  const p = await startRole(data, role);
  procs.push(p);
  return p;
}

describe('a chat message whose process died', { timeout: 120_000 }, () => {
  it('keeps its partial answer, ends `error` saying why within the lease, and frees its slot', async () => {
    const dsl = path.join(data.dataDir, 'chat.yml');
    writeFileSync(dsl, CHAT_APP);
    const key = (JSON.parse(await cliOn(data, ['--init', 'app', 'import', dsl, '--json'])) as { api_key: string }).api_key;
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const api1 = await start('api');
    const r = await fetch(`${api1.api}/chat-messages`, { method: 'POST', headers, body: JSON.stringify({ inputs: {}, query: 'talk', user: 'ann', response_mode: 'streaming' }) });
    expect(r.status).toBe(200);
    let conversationId = '';
    let messageId = '';
    let streamed = '';
    const frames = readSse(r)[Symbol.asyncIterator]();
    while (streamed.length < 50) {
      const n = await frames.next();
      if (n.done) throw new Error('the stream ended early');
      if (n.value.kind !== 'data' || n.value.data.event !== 'message') continue;
      conversationId = String(n.value.data.conversation_id);
      messageId = String(n.value.data.message_id);
      streamed += String(n.value.data.answer);
    }
    const messages = async (on: RoleProcess) => {
      const res = await fetch(`${on.api}/messages?conversation_id=${conversationId}&user=ann`, { headers });
      return ((await res.json()) as { data: { id: string; answer: string; status: string; error: string | null }[] }).data.find((m) => m.id === messageId)!;
    };
    // the answer so far reaches the database while it streams
    await vi.waitFor(async () => expect((await messages(api1)).answer.length).toBeGreaterThanOrEqual(50), { timeout: 10_000, interval: 50 });
    expect(await api1.kill('SIGKILL')).toBe('SIGKILL');
    await frames.return?.(undefined);

    const api2 = await start('api');
    const atDeath = await messages(api2);
    expect(atDeath.status).toBe('running');
    if (redisUrl) {
      // the dead process's slot is still counted on the shared limiter: the app is at its limit
      const busy = await fetch(`${api2.api}/chat-messages`, { method: 'POST', headers, body: JSON.stringify({ inputs: {}, query: 'again', user: 'bob', response_mode: 'blocking' }) });
      expect(busy.status).toBe(429);
      await busy.body?.cancel();
    }
    // an api process ends nothing (no sweeper): a worker does, once the lease has run out
    await start('worker');
    await vi.waitFor(async () => expect((await messages(api2)).status).toBe('error'), { timeout: 20_000, interval: 100 });
    const ended = await messages(api2);
    expect(ended.answer.length).toBeGreaterThanOrEqual(atDeath.answer.length);
    expect(REPLY.startsWith(ended.answer)).toBe(true);
    expect(ended.error).toBe('The server generating this answer stopped before it finished (no sign of life for MESSAGE_LEASE_SECONDS=1 s); the answer so far is kept.');

    // the slot is free: a new answer is accepted and streams
    fake.behaviour = { reply: 'short answer', chunkSize: 4 };
    const next = await fetch(`${api2.api}/chat-messages`, { method: 'POST', headers, body: JSON.stringify({ inputs: {}, query: 'again', user: 'bob', response_mode: 'blocking' }) });
    expect(next.status).toBe(200);
    expect(await next.json()).toMatchObject({ answer: 'short answer' });
  });
});
