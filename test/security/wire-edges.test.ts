import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import { Writable } from 'node:stream';
import { readFileSync } from 'node:fs';
import { createLogger } from '../../src/infra/logger.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { endNode, startNode, workflowDsl } from '../helpers/workflow-dsl.js';

const logLines: string[] = [];
const sink = new Writable({
  write(chunk, _enc, done) {
    logLines.push(...String(chunk).split('\n').filter(Boolean));
    done();
  },
});

let s: TestServer;
let chatKey = '';
let chatAppId = '';
let flowKey = '';
beforeAll(async () => {
  s = await startServer({ logger: createLogger('info', sink) });
  ({ apiKey: chatKey, appId: chatAppId } = await s.importApp(readFileSync('examples/chat-helper.yml', 'utf8')));
  ({ apiKey: flowKey } = await s.importApp(workflowDsl([startNode([]), endNode({})], [['start', 'end']])));
});
afterAll(async () => {
  await s?.close();
});

const json = (key: string) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' });
const envelope = (body: unknown) => expect(Object.keys(body as object).sort()).toEqual(['code', 'message', 'status']);

/** A raw HTTP/1.1 request (fetch refuses to send a `Host` header of our choosing). */
function raw(opts: http.RequestOptions, body?: Buffer): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(opts, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('limits of the listener answer in the Dify envelope', () => {
  it('414 for a path parameter over HTTP_MAX_PARAM_LENGTH, naming the setting', async () => {
    const r = await fetch(`${s.api}/conversations/${'a'.repeat(101)}/variables?user=u`, { headers: json(chatKey) });
    expect(r.status).toBe(414);
    const body = await r.json();
    expect(body).toEqual({ code: 'request_uri_too_large', message: 'A path parameter is longer than 100 characters (HTTP_MAX_PARAM_LENGTH).', status: 414 });
  });

  it('431 for a ~60 KB query, naming HTTP_MAX_HEADER_SIZE; the server answers the next request', async () => {
    const r = await fetch(`${s.api}/messages?user=u&conversation_id=${'a'.repeat(60_000)}`, { headers: json(chatKey) });
    expect(r.status).toBe(431);
    const body = await r.json();
    envelope(body);
    expect(body).toMatchObject({ code: 'request_header_fields_too_large', status: 431 });
    expect(body.message).toContain('HTTP_MAX_HEADER_SIZE');
    expect((await fetch(`${s.url}/health`)).status).toBe(200);
  });

  it('400 in the envelope for a malformed %-escape in the path', async () => {
    const r = await fetch(`${s.api}/conversations/%E0%A4%A/variables?user=u`, { headers: json(chatKey) });
    expect(r.status).toBe(400);
    envelope(await r.json());
  });
});

describe('secrets never reach the log', () => {
  it('masks ?api_key=, secret-looking query values, and app-/dataset- keys anywhere in a logged URL', async () => {
    const appKeyLike = 'app-LEAKYLEAKYLEAKY123';
    const dsKeyLike = 'dataset-LEAKYDATASET456';
    const url = `${s.api}/messages?user=u&conversation_id=x&api_key=${appKeyLike}&access_token=tok-SEKRIT&password=hunter2&note=${dsKeyLike}&limit=5`;
    await fetch(url, { headers: json(chatKey) });
    await fetch(`${s.api}/end-users/${appKeyLike}`, { headers: json(chatKey) });
    await fetch(`${s.url}/health?Sign=abc123sig`);
    const logged = logLines.join('\n');
    const requests = logLines.map((l) => JSON.parse(l)).filter((l) => l.msg === 'request');
    expect(requests.length).toBeGreaterThanOrEqual(3);
    for (const secret of ['LEAKYLEAKY', 'LEAKYDATASET', 'tok-SEKRIT', 'hunter2', 'abc123sig', chatKey]) expect(logged).not.toContain(secret);
    expect(logged).toContain('api_key=[redacted]');
    expect(logged).toContain('limit=5');
    expect(logged).toContain('/end-users/app-[redacted]');
  });
});

describe('input bounds', () => {
  it('`user` must be a string: 400 naming `user` for an object, an array, a number', async () => {
    for (const user of [{ x: 1 }, ['a'], 42, true]) {
      const chat = await fetch(`${s.api}/chat-messages`, { method: 'POST', headers: json(chatKey), body: JSON.stringify({ inputs: {}, query: 'hi', user, response_mode: 'blocking' }) });
      expect(chat.status).toBe(400);
      expect(await chat.json()).toEqual({ code: 'invalid_param', message: 'user must be a string', status: 400 });
      const run = await fetch(`${s.api}/workflows/run`, { method: 'POST', headers: json(flowKey), body: JSON.stringify({ inputs: {}, user, response_mode: 'blocking' }) });
      expect(run.status).toBe(400);
      expect((await run.json()).message).toBe('user must be a string');
    }
  });

  it('an error echoes a 2 MB value cut to a bounded length, still naming the field', async () => {
    const huge = 'z'.repeat(2 * 1024 * 1024);
    const r = await fetch(`${s.api}/chat-messages`, { method: 'POST', headers: json(chatKey), body: JSON.stringify({ inputs: {}, query: 'hi', user: 'u', conversation_id: huge }) });
    expect(r.status).toBe(400);
    const text = await r.text();
    expect(text.length).toBeLessThan(1200);
    const body = JSON.parse(text);
    envelope(body);
    expect(body.message).toMatch(/^conversation_id must be a valid UUID, got "z{99}…$/);
  });

  it("GET /end-users/{id} of another app's end user is 404", async () => {
    const { appId: otherApp } = await s.importApp(workflowDsl([startNode([]), endNode({})], [['start', 'end']]));
    const other = await s.runtime.endUsers.getOrCreate(otherApp, 'someone-else');
    const mine = await s.runtime.endUsers.getOrCreate(chatAppId, 'me');
    const r = await fetch(`${s.api}/end-users/${other.id}`, { headers: json(chatKey) });
    expect(r.status).toBe(404);
    expect(await r.json()).toEqual({ code: 'not_found', message: 'End user not found.', status: 404 });
    const ok = await fetch(`${s.api}/end-users/${mine.id}`, { headers: json(chatKey) });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toMatchObject({ id: mine.id, external_user_id: 'me' });
  });
});

describe('source_url without FILES_URL', () => {
  const boundary = 'XyZzY';
  const body = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\nContent-Type: text/plain\r\n\r\nhello\r\n--${boundary}--\r\n`);
  const upload = (server: TestServer, key: string, headers: Record<string, string>) => {
    const u = new URL(server.url);
    return raw({ host: u.hostname, port: u.port, path: '/v1/files/upload', method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': String(body.length), ...headers } }, body);
  };

  it("uses the listening address, never the client's Host header", async () => {
    const r = await upload(s, chatKey, { host: 'evil.example:666', 'x-forwarded-host': 'evil2.example' });
    expect(r.status).toBe(201);
    const sourceUrl = JSON.parse(r.text).source_url as string;
    expect(sourceUrl.startsWith(`${s.url}/files/`)).toBe(true);
    expect(sourceUrl).not.toContain('evil');
  });

  it('believes X-Forwarded-Host when TRUST_PROXY says so', async () => {
    const proxied = await startServer({ env: { TRUST_PROXY: '127.0.0.1' } });
    try {
      const { apiKey } = await proxied.importApp(readFileSync('examples/chat-helper.yml', 'utf8'));
      const r = await upload(proxied, apiKey, { host: 'internal:1', 'x-forwarded-host': 'files.example.com', 'x-forwarded-proto': 'https' });
      expect(r.status).toBe(201);
      expect(JSON.parse(r.text).source_url).toMatch(/^https:\/\/files\.example\.com\/files\//);
    } finally {
      await proxied.close();
    }
  });
});
