import http from 'node:http';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { endOpenStreams, openSse, type SseOptions, type SseStream } from '../../src/http/sse.js';

/**
 * The SSE writer (`src/http/sse.ts`) on a bare Fastify app over real HTTP: Dify's framing, the
 * leading and interval pings, the last frame, idempotent end, the abort signal when the client
 * goes, and the shutdown frame of every open stream. No runtime, no database.
 */

let app: FastifyInstance | undefined;

afterEach(async () => {
  await app?.close();
  app = undefined;
});

/** An app whose GET /s opens a stream with `opts` and hands it to `use`. */
async function serve(opts: SseOptions, use: (s: SseStream) => void): Promise<string> {
  app = Fastify();
  app.get('/s', (_req, reply) => {
    reply.header('x-extra', 'kept');
    use(openSse(reply, opts));
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const addr = app.server.address();
  return `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}/s`;
}

/** GETs `url`; resolves with the response once its headers arrive, and collects the body. */
function get(url: string): Promise<{ res: http.IncomingMessage; body: () => string; ended: Promise<string>; req: http.ClientRequest }> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      const ended = new Promise<string>((r) => res.on('end', () => r(text)));
      resolve({ res, body: () => text, ended, req });
    });
    req.on('error', reject);
  });
}

describe('openSse', () => {
  it("writes Dify's framing: the headers, a leading ping, compact JSON frames, and the last frame and closing frame on end", async () => {
    let stream!: SseStream;
    const url = await serve({ leadingPing: true, closingFrame: 'data: [DONE]\n\n' }, (s) => {
      stream = s;
      expect(s.send({ event: 'message', answer: 'hé' })).toBe(true);
      s.send({ event: 'message', answer: 'llo' });
      setImmediate(() => s.end({ event: 'message_end' }));
    });
    const { res, ended } = await get(url);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    expect(res.headers['cache-control']).toBe('no-cache');
    expect(res.headers['x-accel-buffering']).toBe('no');
    expect(res.headers['x-extra']).toBe('kept');
    expect(await ended).toBe('event: ping\n\ndata: {"event":"message","answer":"hé"}\n\ndata: {"event":"message","answer":"llo"}\n\ndata: {"event":"message_end"}\n\ndata: [DONE]\n\n');
    // ended: nothing more is written, a second end is harmless, the signal is aborted
    expect(stream.closed).toBe(true);
    expect(stream.send({ event: 'late' })).toBe(false);
    stream.end({ event: 'again' });
    expect(stream.signal.aborted).toBe(true);
  });

  it('pings at its interval while idle, with the frame it is given', async () => {
    let stream!: SseStream;
    const url = await serve({ pingIntervalMs: 20, pingFrame: ': ping\n\n' }, (s) => (stream = s));
    const { body, ended } = await get(url);
    await vi.waitFor(() => expect(body().split(': ping\n\n').length - 1).toBeGreaterThanOrEqual(2), { timeout: 5000, interval: 10 });
    stream.end();
    expect(await ended).toMatch(/^(: ping\n\n)+$/);
  });

  it('aborts its signal and reports closed when the client goes away', async () => {
    let stream!: SseStream;
    const url = await serve({}, (s) => (stream = s));
    const { req } = await get(url);
    const signal = stream.signal;
    expect(signal.aborted).toBe(false);
    req.destroy();
    await vi.waitFor(() => expect(signal.aborted).toBe(true), { timeout: 5000, interval: 10 });
    expect(stream.closed).toBe(true);
    expect(stream.send({ event: 'message' })).toBe(false);
    expect(await stream.drained()).toBe(false);
  });

  it('endOpenStreams ends every open stream of the server with the payload and its own shutdown fields', async () => {
    const streams: SseStream[] = [];
    const url = await serve({ shutdownFields: { task_id: 't1' } }, (s) => streams.push(s));
    const a = await get(url);
    const b = await get(url);
    expect(streams).toHaveLength(2);
    expect(endOpenStreams(app!.server, { event: 'error', code: 'shutting_down' })).toBe(2);
    for (const c of [a, b]) expect(await c.ended).toBe('data: {"event":"error","code":"shutting_down","task_id":"t1"}\n\n');
    // closed streams leave the set: a second shutdown finds none
    expect(endOpenStreams(app!.server, { event: 'error' })).toBe(0);
  });

  it('drained() answers at once while the unsent bytes are within the bound', async () => {
    let stream!: SseStream;
    const url = await serve({ maxBufferedBytes: 1024, slowClient: 'wait' }, (s) => (stream = s));
    const { ended } = await get(url);
    stream.send({ event: 'message', answer: 'x' });
    expect(await stream.drained()).toBe(true);
    stream.end();
    await ended;
  });
});
