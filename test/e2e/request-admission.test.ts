import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.js';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { completionApp } from '../helpers/apps.js';
import { parseRawResponse } from '../helpers/raw-http.js';

// A burst of requests on a server whose slices of event-loop time are short (1 ms): the requests
// that wait for a later slice (src/http/admission.ts) must each be answered as if none had waited.
// The burst goes out on connections that have carried a request already, as a client's kept-alive
// ones have: Node's server reads the first requests of new connections one per turn of the event loop.
let fake: FakeOpenAI;
let s: TestServer;
let key: string;

beforeAll(async () => {
  fake = await startFakeOpenAI();
  fake.behaviour = { reply: (body) => `echo: ${JSON.stringify((body.messages as { content: string }[]).at(-1)!.content)}`, chunkSize: 3 };
  const env = { HTTP_ADMISSION_SLICE_MS: '1', OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: fake.baseUrl };
  s = await startServer({ env });
  ({ apiKey: key } = await s.importApp(completionApp()));
});
afterAll(async () => {
  await s?.close();
  await fake?.close();
});

/**
 * Opens a connection per request and sends one request on each, then — with every connection
 * open and used, as a client's kept-alive connections are — writes `requests` on them in the same
 * turn: the server reads them as one burst.
 */
async function burst(requests: string[]): Promise<{ status: number | undefined; body: Record<string, unknown> }[]> {
  const { port } = new URL(s.url);
  const warmUp = 'GET /health HTTP/1.1\r\nhost: localhost\r\n\r\n';
  const sockets = await Promise.all(
    requests.map(
      () =>
        new Promise<net.Socket>((resolve, reject) => {
          const socket = net.connect(Number(port), '127.0.0.1', () => socket.write(warmUp));
          let text = '';
          const onData = (d: Buffer) => {
            text += d.toString('utf8');
            if (!parseRawResponse(text).complete) return;
            socket.off('data', onData);
            resolve(socket);
          };
          socket.on('data', onData);
          socket.once('error', reject);
        }),
    ),
  );
  const answers = sockets.map(
    (socket) =>
      new Promise<{ status: number | undefined; body: Record<string, unknown> }>((resolve, reject) => {
        const chunks: Buffer[] = [];
        socket.on('data', (d: Buffer) => chunks.push(d));
        socket.once('error', reject);
        socket.once('end', () => {
          const answer = parseRawResponse(Buffer.concat(chunks).toString('utf8'));
          resolve({ status: answer.status, body: answer.json ?? {} });
        });
      }),
  );
  sockets.forEach((socket, i) => socket.write(requests[i]!));
  return Promise.all(answers);
}

function request(method: string, path: string, body?: unknown): string {
  const payload = body === undefined ? '' : JSON.stringify(body);
  return `${method} /v1${path} HTTP/1.1\r\nhost: localhost\r\nauthorization: Bearer ${key}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(payload)}\r\nconnection: close\r\n\r\n${payload}`;
}

async function held(): Promise<number> {
  const text = await (await fetch(`${s.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith('dovetail_http_requests_held_total '));
  return Number(line?.split(' ')[1] ?? 0);
}

describe('requests admitted in slices of event-loop time', () => {
  it('a burst of completions and plain reads: some wait for a later slice, every one gets its own answer', async () => {
    const before = await held();
    const N = 60;
    const completions = Array.from({ length: N }, (_, i) => request('POST', '/completion-messages', { inputs: { topic: `topic ${i}` }, user: `user-${i}`, response_mode: 'blocking' }));
    const reads = Array.from({ length: 20 }, () => request('GET', '/parameters?user=reader'));
    // the reads in between the completions
    const answers = await burst(completions.flatMap((c, i) => (i % 3 === 0 && i / 3 < reads.length ? [c, reads[i / 3]!] : [c])));

    let completion = 0;
    for (const a of answers) {
      expect(a.status).toBe(200);
      if ('user_input_form' in a.body) continue;
      // each answer is its own request's, whole
      expect(a.body).toMatchObject({ event: 'message', mode: 'completion' });
      expect(a.body.answer).toContain(`topic ${completion}`);
      completion++;
    }
    expect(completion).toBe(N);
    expect(answers.filter((a) => 'user_input_form' in a.body)).toHaveLength(20);
    expect(fake.requests.filter((r) => r.path === '/v1/chat/completions')).toHaveLength(N);
    // the burst did not fit in one slice
    expect(await held()).toBeGreaterThan(before);
  });
});
