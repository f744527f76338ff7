import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { MockProvider, mockAnswer } from '../../src/llm/mock-provider.js';
import { AnthropicProvider } from '../../src/llm/anthropic-provider.js';
import { OpenAIProvider } from '../../src/llm/openai-provider.js';
import { readOpenAIStream } from '../../src/llm/openai-stream.js';
import { createSdkFetch, type SdkFetchInit } from '../../src/llm/sdk-fetch.js';
import net from 'node:net';
import zlib from 'node:zlib';
import { addDecimals, priceOf } from '../../src/lib/decimal.js';
import { Cancellation } from '../../src/lib/cancellation.js';
import { buildUsage } from '../../src/llm/usage.js';
import { countTokens } from '../../src/text/tokenizer.js';
import { isProviderError } from '../../src/llm/errors.js';
import type { GenerateChunk, GenerateRequest } from '../../src/llm/model-provider.js';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';

async function drain(it: AsyncIterable<GenerateChunk>): Promise<{ text: string; usage: unknown[]; calls: unknown[] }> {
  let text = '';
  const usage: unknown[] = [];
  const calls: unknown[] = [];
  for await (const c of it) {
    if (c.type === 'text') text += c.text;
    else if (c.type === 'usage') usage.push(c.usage);
    else calls.push(...c.calls);
  }
  return { text, usage, calls };
}

const EXTRACT_TOOL = { name: 'extract_parameters', description: 'Extract parameters', parameters: { type: 'object', properties: { city: { type: 'string', description: 'the city' } }, required: ['city'] } };

const req = (over: Partial<GenerateRequest> = {}): GenerateRequest => ({ model: 'm', mode: 'chat', messages: [{ role: 'user', content: 'Tell me about owls' }], params: {}, ...over });

function streamOf(parts: string[]): ReadableStream<Uint8Array> {
  const enc = new TextEncoder();
  return new ReadableStream({
    start(c) {
      for (const p of parts) c.enqueue(enc.encode(p));
      c.close();
    },
  });
}

describe('mock provider', () => {
  it('is deterministic, built from the prompt, and says it is a mock', async () => {
    const a = await drain(new MockProvider().stream(req()));
    const b = await drain(new MockProvider().stream(req()));
    expect(a.text).toBe(b.text);
    expect(a.text).toBe(mockAnswer('Tell me about owls'));
    expect(a.text).toMatch(/^\[mock model\]/);
    expect(a.text).toContain('"Tell me about owls"');
    expect((await drain(new MockProvider().stream(req({ messages: [{ role: 'user', content: 'other' }] })))).text).not.toBe(a.text);
  });

  it('stops when aborted', async () => {
    const ac = new AbortController();
    const seen: string[] = [];
    await expect(
      (async () => {
        for await (const c of new MockProvider().stream(req({ signal: ac.signal }))) {
          if (c.type === 'text') seen.push(c.text);
          ac.abort(new Error('stop'));
        }
      })(),
    ).rejects.toThrow('stop');
    expect(seen).toHaveLength(1);
  });
});

describe('OpenAI stream reader', () => {
  it('joins events split across reads, handles CRLF and ends at [DONE]', async () => {
    const ev = (t: string) => `data: ${JSON.stringify({ choices: [{ delta: { content: t } }] })}\r\n\r\n`;
    const whole = ev('Hel') + ev('lo') + `data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 3, completion_tokens: 2 } })}\n\n` + 'data: [DONE]\n\n' + ev('ignored');
    const parts = [whole.slice(0, 10), whole.slice(10, 47), whole.slice(47)];
    const r = await drain(readOpenAIStream(streamOf(parts), undefined));
    expect(r.text).toBe('Hello');
    expect(r.usage).toEqual([{ promptTokens: 3, completionTokens: 2 }]);
  });

  it('reads legacy completion `text` chunks', async () => {
    const r = await drain(readOpenAIStream(streamOf([`data: {"choices":[{"text":"abc"}]}\n\ndata: [DONE]\n\n`]), undefined));
    expect(r.text).toBe('abc');
  });

  it('an error event or a non-JSON event is completion_request_error', async () => {
    const e1 = await drain(readOpenAIStream(streamOf(['data: {"error":{"message":"context too long"}}\n\n']), undefined)).catch((e) => e);
    expect(isProviderError(e1)).toBe(true);
    expect(e1).toMatchObject({ code: 'completion_request_error', status: 400, message: 'context too long' });
    const e2 = await drain(readOpenAIStream(streamOf(['data: {oops\n\n']), undefined)).catch((e) => e);
    expect(e2).toMatchObject({ code: 'completion_request_error' });
  });
});

describe('token events of a known shape (read without JSON.parse)', () => {
  const ev = (delta: unknown, extra: Record<string, unknown> = {}) =>
    `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, logprobs: null, finish_reason: null }], ...extra })}\n\n`;
  const bytes = (s: string) => new TextEncoder().encode(s);
  function byteStream(parts: Uint8Array[]): ReadableStream<Uint8Array> {
    return new ReadableStream({
      start(c) {
        for (const p of parts) c.enqueue(p);
        c.close();
      },
    });
  }

  it('reads exactly what JSON.parse reads, escapes included', async () => {
    const texts = ['tok ', '', 'a "quoted" \\ word', 'line\nbreak\ttab', 'ünïcödé 😀 中文', '\\', '"', '}', '"},"usage":{"x":1}'];
    const r = await drain(readOpenAIStream(streamOf([ev({ role: 'assistant', content: '' }), ...texts.map((t) => ev({ content: t })), 'data: [DONE]\n\n']), undefined));
    expect(r.text).toBe(texts.join(''));
    // Escapes as other servers write them (\u, \/).
    const other = 'data: {"choices":[{"delta":{"content":"x"}}]}\n\ndata: {"choices":[{"delta":{"content":"a\\u00e9\\/b"}}]}\n\n';
    expect((await drain(readOpenAIStream(streamOf([other]), undefined))).text).toBe('xaé/b');
  });

  it('parses a run of same-shape events once or twice, not once per event', async () => {
    const events = [ev({ role: 'assistant', content: '' }), ...Array.from({ length: 200 }, (_, i) => ev({ content: `t${i} ` }))];
    const parse = vi.spyOn(JSON, 'parse');
    try {
      const r = await drain(readOpenAIStream(streamOf([events.join('') + 'data: [DONE]\n\n']), undefined));
      expect(r.text).toBe(Array.from({ length: 200 }, (_, i) => `t${i} `).join(''));
      expect(parse.mock.calls.length).toBeLessThanOrEqual(6);
    } finally {
      parse.mockRestore();
    }
  });

  it('a line that differs outside the token is parsed in full: usage, finish, error, other choices', async () => {
    const usage = { prompt_tokens: 1, completion_tokens: 3 };
    const r = await drain(
      readOpenAIStream(
        streamOf([ev({ content: 'a' }), ev({ content: 'b' }), ev({ content: 'c' }, { usage }), ev({ content: 'd' }, { usage: null }), ev({ content: 'e', tool_calls: [] }), 'data: [DONE]\n\n']),
        undefined,
      ),
    );
    expect(r.text).toBe('abcde');
    expect(r.usage).toEqual([{ promptTokens: 1, completionTokens: 3 }]);
    const err = await drain(readOpenAIStream(streamOf([ev({ content: 'a' }), ev({ content: 'b' }), 'data: {"error":{"message":"overloaded"},"choices":[{"delta":{"content":"b"}}]}\n\n']), undefined)).catch((e) => e);
    expect(err).toMatchObject({ code: 'completion_request_error', message: 'overloaded' });
    // A null content is no token, whatever shape came before.
    expect((await drain(readOpenAIStream(streamOf([ev({ content: 'a' }), ev({ content: 'b' }), ev({ content: null }), 'data: [DONE]\n\n']), undefined))).text).toBe('ab');
  });

  it('the token key inside another string value is not taken for the token', async () => {
    const line = (t: string) => `data: ${JSON.stringify({ model: '"content":"x"', note: { content: 'fixed' }, choices: [{ index: 0, delta: { content: t } }] })}\n\n`;
    const r = await drain(readOpenAIStream(streamOf([line('one'), line(' two'), line(' three'), 'data: [DONE]\n\n']), undefined));
    expect(r.text).toBe('one two three');
    // Another `content` string that changes from event to event while the token does not.
    const decoy = (n: number) => `data: ${JSON.stringify({ meta: { content: `n${n}` }, choices: [{ index: 0, delta: { content: 'x' } }] })}\n\n`;
    const r2 = await drain(readOpenAIStream(streamOf([decoy(1), decoy(2), decoy(3), decoy(4), 'data: [DONE]\n\n']), undefined));
    expect(r2.text).toBe('xxxx');
  });

  it('a line as long as the known shape but different after the token is parsed in full', async () => {
    const usageLine = `{"choices":[{"delta":{"content":"c"}}],"usage":{"prompt_tokens":1,"completion_tokens":3}}`;
    const head = `{"choices":[{"delta":{"content":"c"}}],"usage":null,"pad":"`;
    const plain = (t: string) => `data: ${head.replace('"c"', JSON.stringify(t))}${'p'.repeat(usageLine.length - head.length - 2)}"}\n\n`;
    expect(plain('c').length).toBe(`data: ${usageLine}\n\n`.length);
    const r = await drain(readOpenAIStream(streamOf([plain('a'), plain('b'), `data: ${usageLine}\n\n`, 'data: [DONE]\n\n']), undefined));
    expect(r.text).toBe('abc');
    expect(r.usage).toEqual([{ promptTokens: 1, completionTokens: 3 }]);
  });

  it('a server whose events all differ is read right (parsed in full)', async () => {
    const parts = Array.from({ length: 30 }, (_, i) => `data: ${JSON.stringify({ seq: i, choices: [{ delta: { content: `${i},` } }] })}\n\n`);
    const r = await drain(readOpenAIStream(streamOf([...parts, 'data: [DONE]\n\n']), undefined));
    expect(r.text).toBe(Array.from({ length: 30 }, (_, i) => `${i},`).join(''));
  });

  it('OpenAI events carry a random `obfuscation` string: still read without a parse per event', async () => {
    const head = '"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","service_tier":"default","system_fingerprint":"fp_1"';
    const pad = (i: number) => 'xyzw'.repeat(4).slice(0, 1 + ((i * 7) % 15));
    let body = `data: {${head},"choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"q"}\n\n`;
    for (let i = 0; i < 200; i++) body += `data: {${head},"choices":[{"index":0,"delta":{"content":" t${i}"},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"${pad(i)}"}\n\n`;
    body += `data: {${head},"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":200},"obfuscation":"ab"}\n\ndata: [DONE]\n\n`;
    const parse = vi.spyOn(JSON, 'parse');
    try {
      const r = await drain(readOpenAIStream(streamOf([body]), undefined));
      expect(r.text).toBe(Array.from({ length: 200 }, (_, i) => ` t${i}`).join(''));
      expect(r.usage).toEqual([{ promptTokens: 5, completionTokens: 200 }]);
      expect(parse.mock.calls.length).toBeLessThanOrEqual(6);
    } finally {
      parse.mockRestore();
    }
  });

  it('reasoning events (handed on inside <think>) do not use up the learning of the answer\'s shape', async () => {
    const reasoning = Array.from({ length: 8 }, (_, i) => `data: ${JSON.stringify({ id: 'r', choices: [{ index: 0, delta: { content: '', reasoning_content: `step ${i} ` } }] })}\n\n`);
    const answer = Array.from({ length: 300 }, (_, i) => ev({ content: `a${i} ` }));
    const parse = vi.spyOn(JSON, 'parse');
    try {
      const r = await drain(readOpenAIStream(streamOf([[...reasoning, ...answer, 'data: [DONE]\n\n'].join('')]), undefined));
      const thought = Array.from({ length: 8 }, (_, i) => `step ${i} `).join('');
      expect(r.text).toBe(`<think>\n${thought}\n</think>` + Array.from({ length: 300 }, (_, i) => `a${i} `).join(''));
      expect(parse.mock.calls.length).toBeLessThanOrEqual(reasoning.length + 6);
    } finally {
      parse.mockRestore();
    }
  });

  it('a known-shape line that is not JSON fails as the full parser does (bad escape, raw control character)', async () => {
    const raw = (token: string) => `data: {"id":"x","choices":[{"index":0,"delta":{"content":${token}},"finish_reason":null}]}\n\n`;
    for (const bad of ['"\\x"', '"\\u12"', '"c\td"']) {
      const err = await drain(readOpenAIStream(streamOf([raw('"a"') + raw('"b"') + raw(bad) + 'data: [DONE]\n\n']), undefined)).catch((e) => e);
      expect(err).toMatchObject({ code: 'completion_request_error' });
    }
  });

  it('legacy completion `text` events and CRLF lines', async () => {
    const line = (t: string) => `data: ${JSON.stringify({ id: 'x', choices: [{ text: t, index: 0, finish_reason: null }] })}\r\n\r\n`;
    const r = await drain(readOpenAIStream(streamOf([line('a'), line('b'), line('c\r'), 'data: [DONE]\r\n\r\n']), undefined));
    expect(r.text).toBe('abc\r');
  });

  it('UTF-8 characters split between reads, next to reads of plain ASCII', async () => {
    const whole = bytes([ev({ content: 'ab' }), ev({ content: 'é😀中' }), ev({ content: 'cd' }), 'data: [DONE]\n\n'].join(''));
    const emoji = whole.indexOf(0xf0);
    // ASCII read, a read that ends inside the emoji, the rest of it, ASCII again.
    const cuts = [0, emoji - 3, emoji + 2, emoji + 4, whole.length];
    const parts = cuts.slice(1).map((c, i) => whole.subarray(cuts[i], c));
    const r = await drain(readOpenAIStream(byteStream(parts), undefined));
    expect(r.text).toBe('abé😀中cd');
    const r2 = await drain(readOpenAIStream(byteStream([...whole].map((b) => new Uint8Array([b]))), undefined));
    expect(r2.text).toBe('abé😀中cd');
    // U+FEFF inside the answer is a character: only a mark at the very start of the body is dropped.
    const feff = bytes([ev({ content: 'a' }), ev({ content: '\uFEFFb' }), 'data: [DONE]\n\n'].join(''));
    const at = feff.indexOf(0xef);
    expect((await drain(readOpenAIStream(byteStream([feff.subarray(0, at), feff.subarray(at)]), undefined))).text).toBe('a\uFEFFb');
    expect((await drain(readOpenAIStream(byteStream([bytes('\uFEFF'), feff]), undefined))).text).toBe('a\uFEFFb');
  });
});

describe('the SDKs fetch (undici dispatcher)', () => {
  let server: http.Server;
  let base: string;
  beforeAll(async () => {
    server = http.createServer((rq, rs) => {
      if (rq.url === '/gzip') {
        rs.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' }).end(zlib.gzipSync(JSON.stringify({ ok: true })));
      } else if (rq.url === '/burst') {
        rs.writeHead(200, { 'content-type': 'text/plain' });
        for (let i = 0; i < 500; i++) rs.write(`${i},`); // one HTTP chunk each, in one network write
        rs.end();
      } else if (rq.url === '/echo') {
        let raw = '';
        rq.on('data', (c: Buffer) => (raw += c));
        rq.on('end', () => rs.writeHead(201, { 'x-m': rq.method ?? '', 'content-type': 'text/plain' }).end(`${rq.headers.authorization} ${raw}`));
      } else if (rq.url === '/gzip-stream') {
        // gzip flushed per event, then the answer hangs: the reader stops mid-way
        rs.writeHead(200, { 'content-type': 'text/event-stream', 'content-encoding': 'gzip' });
        const gz = zlib.createGzip();
        gz.pipe(rs);
        for (let i = 0; i < 3; i++) {
          gz.write(`data: ${'x'.repeat(20000)}${i}\n\n`);
          gz.flush();
        }
      } else if (rq.url === '/truncated' || rq.url === '/mislabelled') {
        const gz = zlib.gzipSync(JSON.stringify({ ok: true, pad: 'x'.repeat(100) }));
        rs.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' }).end(rq.url === '/truncated' ? gz.subarray(0, gz.length - 8) : '{"plain":true}');
      } else if (rq.url === '/odd-status') {
        rs.writeHead(999, { 'content-type': 'text/plain' }).end('?');
      } else if (rq.url === '/break') {
        rs.writeHead(200, { 'content-type': 'text/plain' });
        rs.write('partial');
        setTimeout(() => rs.destroy(), 20);
      } else {
        rs.writeHead(200);
        rs.flushHeaders(); // hangs
      }
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });
  const f = createSdkFetch();

  it('sends method, headers and body; returns status, headers and body', async () => {
    const r = await f(`${base}/echo`, { method: 'POST', headers: new Headers({ authorization: 'Bearer k' }), body: '{"a":1}' });
    expect(r.status).toBe(201);
    expect(r.headers.get('x-m')).toBe('POST');
    expect(await r.text()).toBe('Bearer k {"a":1}');
  });

  it('reports once that the request is on its way, before the response', async () => {
    const seen: string[] = [];
    const r = await f(`${base}/echo`, { method: 'POST', body: 'x', onRequestSent: () => seen.push('sent') } as SdkFetchInit).then((res) => {
      seen.push('response');
      return res.text();
    });
    expect(r).toBe('undefined x');
    expect(seen).toEqual(['sent', 'response']);
  });

  it('decompresses gzip bodies', async () => {
    expect(await (await f(`${base}/gzip`)).json()).toEqual({ ok: true });
  });

  it('passes on a burst of HTTP chunks as few body chunks', async () => {
    const reader = (await f(`${base}/burst`)).body!.getReader();
    let reads = 0;
    let text = '';
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      reads++;
      text += Buffer.from(value).toString();
    }
    expect(text).toBe(Array.from({ length: 500 }, (_, i) => `${i},`).join(''));
    expect(reads).toBeLessThan(50);
  });

  it('abort rejects with AbortError and closes the connection; refused connections are TypeError', async () => {
    const ac = new AbortController();
    const r = await f(`${base}/hang`, { signal: ac.signal });
    const reading = r.text().catch((e: Error) => e);
    ac.abort();
    expect(((await reading) as Error).name).toBe('AbortError');
    const before = new AbortController();
    before.abort();
    await expect(f(`${base}/hang`, { signal: before.signal })).rejects.toMatchObject({ name: 'AbortError' });
    await expect(f('http://127.0.0.1:1/x')).rejects.toBeInstanceOf(TypeError);
  });

  /**
   * A raw server: the first request on each connection is answered (keep-alive); a later request
   * on the same connection is received and then `drop`ped without a byte of answer.
   */
  async function dropping(drop: (sock: net.Socket) => void) {
    const connections: net.Socket[] = [];
    const received: string[] = [];
    const raw = net.createServer((sock) => {
      connections.push(sock);
      let served = 0;
      sock.on('data', (d: Buffer) => {
        const text = d.toString('latin1');
        if (!text.startsWith('POST ')) return received.push(text) && undefined; // a body written after its head
        received.push(text);
        if (served++ === 0) sock.write('HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: keep-alive\r\n\r\nok');
        else drop(sock);
      });
    });
    await new Promise<void>((r) => raw.listen(0, '127.0.0.1', r));
    return {
      url: `http://127.0.0.1:${(raw.address() as AddressInfo).port}/`,
      connections,
      heads: () => received.filter((t) => t.startsWith('POST ')).length,
      close: () => {
        for (const c of connections) c.destroy();
        raw.close();
      },
    };
  }

  it('a request whose kept-alive connection the server had closed is sent again on another connection, and reported sent once', async () => {
    // A server that timed the connection out closes it without answering.
    const srv = await dropping((sock) => sock.end());
    const fresh = createSdkFetch();
    let sent = 0;
    try {
      for (const body of ['a', 'b', 'c', 'd']) {
        const init: SdkFetchInit = { method: 'POST', body, onRequestSent: () => sent++ };
        expect(await (await fresh(srv.url, init)).text()).toBe('ok');
      }
      expect(srv.heads()).toBeGreaterThan(4); // at least one request went out twice
      expect(sent).toBe(4);
    } finally {
      srv.close();
    }
  });

  it('keeps an idle connection for keepAliveMs, then closes it; a connection the server closed while idle is not reused', async () => {
    const accepted: net.Socket[] = [];
    /** `closeIdleAfterMs`: the server ends a connection that long after its answer (its own keep-alive timeout). */
    const serve = async (closeIdleAfterMs?: number) => {
      const srv = http.createServer((req, res) => {
        req.resume();
        req.on('end', () => {
          res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '2' }).end('ok');
          if (closeIdleAfterMs !== undefined) setTimeout(() => req.socket.end(), closeIdleAfterMs);
        });
      });
      srv.keepAliveTimeout = 0; // no hint, no timer of its own: the client's setting decides
      srv.on('connection', (s: net.Socket) => accepted.push(s));
      await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
      return { url: `http://127.0.0.1:${(srv.address() as AddressInfo).port}/`, close: () => srv.close() };
    };
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
    const quiet = await serve();
    const leaving = await serve(100);
    try {
      const kept = createSdkFetch({ keepAliveMs: 1500 });
      expect(await (await kept(quiet.url, { method: 'POST', body: 'a' })).text()).toBe('ok');
      await sleep(700); // idle, within keepAliveMs: the same connection
      expect(await (await kept(quiet.url, { method: 'POST', body: 'b' })).text()).toBe('ok');
      expect(accepted).toHaveLength(1);
      await sleep(2000); // idle longer than keepAliveMs: the client closed it
      expect(accepted[0]!.destroyed || accepted[0]!.readableEnded).toBe(true);
      expect(await (await kept(quiet.url, { method: 'POST', body: 'c' })).text()).toBe('ok');
      expect(accepted).toHaveLength(2);
      // The server ends the connection 100 ms after its answer; the next request takes a new one, no error.
      const fresh = createSdkFetch();
      for (const body of ['d', 'e']) {
        expect(await (await fresh(leaving.url, { method: 'POST', body })).text()).toBe('ok');
        await sleep(300);
      }
      expect(accepted).toHaveLength(4);
    } finally {
      quiet.close();
      leaving.close();
    }
  });

  it('a connection reset after the request went out is a failure, not a second request (the server may be working on it)', async () => {
    const srv = await dropping((sock) => setTimeout(() => sock.resetAndDestroy(), 20));
    const fresh = createSdkFetch();
    try {
      let failure: unknown;
      for (const body of ['a', 'b', 'c', 'd']) {
        try {
          await (await fresh(srv.url, { method: 'POST', body })).text();
        } catch (err) {
          failure = err;
          break;
        }
      }
      expect(failure).toBeInstanceOf(TypeError);
      expect(srv.heads()).toBe(srv.connections.length + 1); // the reset request was sent once
    } finally {
      srv.close();
    }
  });

  it('a compressed body: stopping mid-way ends the read with AbortError; a corrupt one is an error, not a hang', async () => {
    const ac = new AbortController();
    const reader = (await f(`${base}/gzip-stream`, { signal: ac.signal })).body!.getReader();
    expect((await reader.read()).done).toBe(false);
    ac.abort();
    await expect(reader.read()).rejects.toMatchObject({ name: 'AbortError' });
    for (const path of ['/truncated', '/mislabelled']) {
      await expect((await f(`${base}${path}`)).text()).rejects.toThrow(/could not be decoded \(gzip\)/);
    }
  });

  it('a reason phrase fetch cannot carry is dropped, the status kept', async () => {
    const raw = net.createServer((sock) => sock.once('data', () => sock.end(Buffer.from('HTTP/1.1 429 请求过多\r\ncontent-length: 2\r\nconnection: close\r\n\r\nno', 'utf8'))));
    await new Promise<void>((r) => raw.listen(0, '127.0.0.1', r));
    try {
      const r = await createSdkFetch()(`http://127.0.0.1:${(raw.address() as AddressInfo).port}/`);
      expect(r.status).toBe(429);
      expect(await r.text()).toBe('no');
    } finally {
      raw.close();
    }
  });

  it('a status fetch cannot represent is a failed request, not a crash', async () => {
    await expect(f(`${base}/odd-status`)).rejects.toBeInstanceOf(TypeError);
  });

  it('a body that breaks off is an error, not a short answer', async () => {
    const r = await f(`${base}/break`);
    await expect(r.text()).rejects.toBeInstanceOf(Error);
  });
});

describe('OpenAI provider against the local upstream', () => {
  let fake: FakeOpenAI;
  beforeAll(async () => {
    fake = await startFakeOpenAI();
  });
  afterAll(async () => fake.close());

  it('sends chat params and images, reads text and usage', async () => {
    fake.behaviour = { reply: 'hoot hoot', chunkSize: 2 };
    const p = new OpenAIProvider({ name: 'openai', apiKey: 'k', baseUrl: fake.baseUrl, strictParams: true });
    const r = await drain(
      p.stream(req({ params: { temperature: 0.5, stop: [], top_k: 3 }, messages: [{ role: 'user', content: [{ type: 'text', text: 'look' }, { type: 'image', url: 'https://x/y.png', detail: 'low' }] }] })),
    );
    expect(r.text).toBe('hoot hoot');
    expect(r.usage.at(-1)).toEqual({ promptTokens: 1, completionTokens: 5 });
    const body = fake.requests.at(-1)!.body;
    expect(body.temperature).toBe(0.5);
    expect(body).not.toHaveProperty('stop');
    expect(body).not.toHaveProperty('top_k');
    expect(body.messages).toEqual([{ role: 'user', content: [{ type: 'text', text: 'look' }, { type: 'image_url', image_url: { url: 'https://x/y.png', detail: 'low' } }] }]);
    // The SDK's own request headers: bearer auth, JSON, its user agent and platform headers.
    const headers = fake.requests.at(-1)!.headers;
    expect(headers.authorization).toBe('Bearer k');
    expect(headers['content-type']).toBe('application/json');
    expect(headers['user-agent']).toMatch(/^OpenAI\/JS /);
    expect(headers['x-stainless-lang']).toBe('js');
  });

  it('upstream failures are completion_request_error with the upstream message: JSON errors, other bodies, no connection', async () => {
    const p = new OpenAIProvider({ name: 'openai', apiKey: 'k', baseUrl: fake.baseUrl });
    fake.behaviour = { failStatus: 429, failMessage: 'Rate limit reached' };
    await expect(drain(p.stream(req()))).rejects.toMatchObject({ code: 'completion_request_error', message: '[429] Rate limit reached' });
    const html = http.createServer((_rq, rs) => rs.writeHead(502, { 'content-type': 'text/html' }).end('<h1>Bad Gateway</h1>'));
    await new Promise<void>((r) => html.listen(0, '127.0.0.1', r));
    try {
      const q = new OpenAIProvider({ name: 'openai', apiKey: 'k', baseUrl: `http://127.0.0.1:${(html.address() as AddressInfo).port}/v1` });
      await expect(drain(q.stream(req()))).rejects.toMatchObject({ code: 'completion_request_error', message: expect.stringContaining('<h1>Bad Gateway</h1>') });
    } finally {
      html.close();
    }
    const closed = new OpenAIProvider({ name: 'openai', apiKey: 'k', baseUrl: 'http://127.0.0.1:1/v1' });
    // the SDK says only "Connection error.": the message names the provider, its host and the network's answer
    await expect(drain(closed.stream(req()))).rejects.toMatchObject({ code: 'completion_request_error', message: expect.stringMatching(/^Cannot connect to model provider "openai" at 127\.0\.0\.1:1: .*ECONNREFUSED/) });
  });

  it('offers tools, sends tool turns, and joins the streamed call pieces into whole calls', async () => {
    fake.behaviour = { reply: 'Let me see.', toolCalls: [{ name: 'extract_parameters', arguments: '{"city": "Zürich", "n": [1, 2]}' }], chunkSize: 3 };
    const p = new OpenAIProvider({ name: 'openai', apiKey: 'k', baseUrl: fake.baseUrl });
    const messages = [
      { role: 'user' as const, content: 'weather in SF?' },
      { role: 'assistant' as const, content: 'calling', toolCalls: [{ id: 'c1', name: 'extract_parameters', arguments: '{"city":"SF"}' }] },
      { role: 'tool' as const, content: 'ok', toolCallId: 'c1' },
      { role: 'user' as const, content: 'and in Zürich?' },
    ];
    const r = await drain(p.stream(req({ messages, tools: [EXTRACT_TOOL], toolChoice: { name: 'extract_parameters' } })));
    expect(r.text).toBe('Let me see.');
    expect(r.calls).toEqual([{ id: expect.stringMatching(/^call_0_/), name: 'extract_parameters', arguments: '{"city": "Zürich", "n": [1, 2]}' }]);
    const body = fake.requests.at(-1)!.body;
    expect(body.tools).toEqual([{ type: 'function', function: EXTRACT_TOOL }]);
    expect(body.tool_choice).toEqual({ type: 'function', function: { name: 'extract_parameters' } });
    expect(body.messages).toEqual([
      { role: 'user', content: 'weather in SF?' },
      { role: 'assistant', content: 'calling', tool_calls: [{ id: 'c1', type: 'function', function: { name: 'extract_parameters', arguments: '{"city":"SF"}' } }] },
      { role: 'tool', content: 'ok', tool_call_id: 'c1' },
      { role: 'user', content: 'and in Zürich?' },
    ]);
    // Without tools nothing of them is sent, and a plain answer has no calls.
    fake.behaviour = { reply: 'plain' };
    const plain = await drain(p.stream(req()));
    expect(plain.calls).toEqual([]);
    expect(fake.requests.at(-1)!.body).not.toHaveProperty('tools');
    expect(fake.requests.at(-1)!.body).not.toHaveProperty('tool_choice');
  });

  it('a hanging upstream is released by abort (the upstream sees the connection close)', async () => {
    fake.behaviour = { hang: true };
    const p = new OpenAIProvider({ name: 'openai', apiKey: 'k', baseUrl: fake.baseUrl });
    const ac = new AbortController();
    const pending = drain(p.stream(req({ signal: ac.signal }))).catch((e) => e);
    await new Promise((r) => setTimeout(r, 50));
    ac.abort();
    expect(await pending).toBeInstanceOf(Error);
    await fake.waitForAbort();
  });

  it('is cancelled through `cancel` without its `signal` being made (a Cancellation, as generations pass it)', async () => {
    fake.behaviour = { hang: true };
    const p = new OpenAIProvider({ name: 'openai', apiKey: 'k', baseUrl: fake.baseUrl });
    const cancel = new Cancellation();
    let signalRead = false;
    const request = {
      ...req(),
      cancel,
      get signal() {
        signalRead = true;
        return cancel.signal;
      },
    };
    const pending = drain(p.stream(request)).catch((e: Error) => e);
    await new Promise((r) => setTimeout(r, 50));
    cancel.abort(new Error('stopped by its owner'));
    expect(await pending).toBeInstanceOf(Error);
    await fake.waitForAbort();
    expect(signalRead).toBe(false);
  });
});

describe('Anthropic provider against a local Messages API server', () => {
  let server: http.Server;
  let base: string;
  const seen: { headers: http.IncomingHttpHeaders; body: Record<string, unknown> }[] = [];
  beforeAll(async () => {
    server = http.createServer((rq, rs) => {
      let raw = '';
      rq.on('data', (c: Buffer) => (raw += c));
      rq.on('end', () => {
        const body = JSON.parse(raw) as Record<string, unknown>;
        seen.push({ headers: rq.headers, body });
        if (body.model === 'broken') {
          rs.writeHead(401, { 'content-type': 'application/json' }).end(JSON.stringify({ type: 'error', error: { type: 'authentication_error', message: 'invalid x-api-key' } }));
          return;
        }
        rs.writeHead(200, { 'content-type': 'text/event-stream' });
        const send = (event: string, data: unknown) => rs.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
        send('message_start', { type: 'message_start', message: { id: 'msg_1', type: 'message', role: 'assistant', content: [], model: body.model, stop_reason: null, stop_sequence: null, usage: { input_tokens: 11, output_tokens: 1 } } });
        send('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } });
        for (const t of ['Owls ', 'are ', 'quiet.']) send('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: t } });
        send('content_block_stop', { type: 'content_block_stop', index: 0 });
        if (Array.isArray(body.tools)) {
          send('content_block_start', { type: 'content_block_start', index: 1, content_block: { type: 'tool_use', id: 'toolu_1', name: 'extract_parameters', input: {} } });
          for (const j of ['{"city"', ': "Os', 'lo"}']) send('content_block_delta', { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: j } });
          send('content_block_stop', { type: 'content_block_stop', index: 1 });
        }
        send('message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 4 } });
        send('message_stop', { type: 'message_stop' });
        rs.end();
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => new Promise<void>((r) => server.close(() => r())));

  it('streams text and usage through the real protocol', async () => {
    const p = new AnthropicProvider({ apiKey: 'sk-ant-test', baseUrl: base });
    const r = await drain(p.stream(req({ model: 'claude-x', messages: [{ role: 'system', content: 'Be terse.' }, { role: 'user', content: [{ type: 'text', text: 'hi' }, { type: 'image', url: 'data:image/png;base64,AAAA' }] }] })));
    expect(r.text).toBe('Owls are quiet.');
    expect(r.usage.at(-1)).toEqual({ promptTokens: 11, completionTokens: 4 });
    const last = seen.at(-1)!;
    // The SDK (1.14) sends the key as a bearer token; older releases used `x-api-key`.
    expect([last.headers['x-api-key'], last.headers.authorization]).toContain(last.headers['x-api-key'] ? 'sk-ant-test' : 'Bearer sk-ant-test');
    expect(last.headers['anthropic-version']).toBeTruthy();
    expect(last.body).toMatchObject({ model: 'claude-x', system: 'Be terse.', max_tokens: 4096, stream: true });
    expect(last.body.messages).toEqual([{ role: 'user', content: [{ type: 'text', text: 'hi' }, { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } }] }]);
  });

  it('offers tools as tool definitions, sends tool turns as tool_use / tool_result blocks, reads tool_use', async () => {
    const p = new AnthropicProvider({ apiKey: 'sk-ant-test', baseUrl: base });
    const messages = [
      { role: 'user' as const, content: 'weather in SF?' },
      { role: 'assistant' as const, content: 'calling', toolCalls: [{ id: 'c1', name: 'extract_parameters', arguments: '{"city":"SF"}' }] },
      { role: 'tool' as const, content: 'ok', toolCallId: 'c1' },
      { role: 'user' as const, content: 'and in Oslo?' },
    ];
    const r = await drain(p.stream(req({ model: 'claude-x', messages, tools: [EXTRACT_TOOL], toolChoice: 'required' })));
    expect(r.text).toBe('Owls are quiet.');
    expect(r.calls).toEqual([{ id: 'toolu_1', name: 'extract_parameters', arguments: '{"city": "Oslo"}' }]);
    const body = seen.at(-1)!.body;
    expect(body.tools).toEqual([{ name: 'extract_parameters', description: 'Extract parameters', input_schema: EXTRACT_TOOL.parameters }]);
    expect(body.tool_choice).toEqual({ type: 'any' });
    expect(body.messages).toEqual([
      { role: 'user', content: 'weather in SF?' },
      { role: 'assistant', content: [{ type: 'text', text: 'calling' }, { type: 'tool_use', id: 'c1', name: 'extract_parameters', input: { city: 'SF' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'c1', content: 'ok' }] },
      { role: 'user', content: 'and in Oslo?' },
    ]);
  });

  it('an upstream error is completion_request_error with its message', async () => {
    const p = new AnthropicProvider({ apiKey: 'bad', baseUrl: base });
    const e = await drain(p.stream(req({ model: 'broken' }))).catch((err) => err);
    expect(e).toMatchObject({ code: 'completion_request_error', status: 400 });
    expect(e.message).toContain('invalid x-api-key');
  });
});

describe('usage and prices', () => {
  it('decimal prices are exact and rounded half up to 7 places', () => {
    expect(priceOf(1033, '0.001', '0.001')).toBe('0.0010330');
    expect(priceOf(128, '0.002', '0.001')).toBe('0.0002560');
    expect(addDecimals(['0.0010330', '0.0002560'])).toBe('0.0012890');
    expect(priceOf(1, '0.00000005', '1')).toBe('0.0000001');
    expect(priceOf(0, '5', '1')).toBe('0.0000000');
  });

  it('reported usage wins; otherwise the tokenizer counts', async () => {
    const count = async (texts: readonly string[]) => texts.map((t) => countTokens(t));
    const price = { input: '0.15', output: '0.6', unit: '0.000001', currency: 'EUR' };
    const reported = await buildUsage({ reported: { promptTokens: 100, completionTokens: 50 }, promptText: 'x', answer: 'y', price, latencySeconds: 1.5 }, count);
    expect(reported).toMatchObject({ prompt_tokens: 100, completion_tokens: 50, total_tokens: 150, prompt_price: '0.0000150', completion_price: '0.0000300', total_price: '0.0000450', currency: 'EUR', latency: 1.5 });
    const counted = await buildUsage({ reported: undefined, promptText: 'hello world', answer: 'hello', price: undefined, latencySeconds: 0 }, count);
    expect(counted).toMatchObject({ prompt_tokens: 2, completion_tokens: 1, total_price: '0.0000000', prompt_unit_price: '0', currency: 'USD' });
  });
});
