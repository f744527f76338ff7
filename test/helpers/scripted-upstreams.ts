import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { EventStreamCodec } from '@smithy/core/event-streams';

/** What the upstream streams for the next request: these text deltas in order, then this usage. */
export interface Script {
  readonly text: readonly string[];
  readonly usage: { readonly prompt: number; readonly completion: number };
}

type Next = { readonly kind: 'answer'; readonly script: Script } | { readonly kind: 'fail'; readonly status: number; readonly message: string } | { readonly kind: 'stall'; readonly first: string };

/**
 * A local model upstream speaking one provider's wire protocol, told per request what to do:
 * stream a script, refuse with a protocol error, or send one delta and hold the connection.
 */
export interface ScriptedUpstream {
  /** `http://127.0.0.1:PORT` (no path). */
  readonly url: string;
  /** Requests received so far (path and JSON body). */
  readonly requests: { readonly path: string; readonly body: Record<string, unknown> }[];
  answer(script: Script): void;
  fail(status: number, message: string): void;
  stall(first: string): void;
  /** Resolves when the client closes a connection before its answer ended. */
  closedEarly(): Promise<void>;
  close(): Promise<void>;
}

/** How one protocol writes each kind of answer. */
interface Protocol {
  /** Starts a streamed answer and returns a writer of text deltas and the end (with usage). */
  open(res: http.ServerResponse, body: Record<string, unknown>): { delta(text: string): void; end(usage: Script['usage']): void };
  error(res: http.ServerResponse, status: number, message: string): void;
}

async function scripted(protocol: Protocol): Promise<ScriptedUpstream> {
  const requests: { path: string; body: Record<string, unknown> }[] = [];
  let next: Next = { kind: 'answer', script: { text: ['ok'], usage: { prompt: 1, completion: 1 } } };
  let early = 0;
  const waiters: (() => void)[] = [];
  const server = http.createServer((rq, rs) => {
    rs.on('close', () => {
      if (rs.writableEnded) return;
      early++;
      for (const w of waiters.splice(0)) w();
    });
    const chunks: Buffer[] = [];
    rq.on('data', (c: Buffer) => chunks.push(c));
    rq.on('end', () => {
      const raw = Buffer.concat(chunks).toString();
      const body = (raw ? JSON.parse(raw) : {}) as Record<string, unknown>;
      requests.push({ path: rq.url ?? '', body });
      const now = next;
      if (now.kind === 'fail') return protocol.error(rs, now.status, now.message);
      const w = protocol.open(rs, body);
      if (now.kind === 'stall') return w.delta(now.first);
      for (const t of now.script.text) w.delta(t);
      w.end(now.script.usage);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    answer: (script) => void (next = { kind: 'answer', script }),
    fail: (status, message) => void (next = { kind: 'fail', status, message }),
    stall: (first) => void (next = { kind: 'stall', first }),
    closedEarly: () => (early > 0 ? Promise.resolve() : new Promise<void>((r) => waiters.push(r))),
    async close() {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

const sse = (res: http.ServerResponse) => res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });

/** OpenAI's Chat Completions stream (`POST …/chat/completions`, also Azure's deployment paths): SSE chunks, a usage chunk, `[DONE]`. */
export function scriptedOpenAI(): Promise<ScriptedUpstream> {
  return scripted({
    open(res, body) {
      sse(res);
      const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) =>
        res.write(`data: ${JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: body.model ?? 'm', choices, ...extra })}\n\n`);
      chunk([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }]);
      return {
        delta: (text) => chunk([{ index: 0, delta: { content: text }, finish_reason: null }]),
        end(usage) {
          chunk([{ index: 0, delta: {}, finish_reason: 'stop' }]);
          chunk([], { usage: { prompt_tokens: usage.prompt, completion_tokens: usage.completion, total_tokens: usage.prompt + usage.completion } });
          res.end('data: [DONE]\n\n');
        },
      };
    },
    error(res, status, message) {
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message, type: 'invalid_request_error', param: null, code: null } }));
    },
  });
}

/** Anthropic's Messages stream (`POST /v1/messages`): typed SSE events, input tokens at the start, output tokens at the end. */
export function scriptedAnthropic(): Promise<ScriptedUpstream> {
  let usageIn = 0;
  return scripted({
    open(res, body) {
      sse(res);
      const send = (event: string, data: Record<string, unknown>) => res.write(`event: ${event}\ndata: ${JSON.stringify({ type: event, ...data })}\n\n`);
      // input tokens are known when the message starts: the script's are read at `end`, so the start carries the last ones (rewritten below)
      send('message_start', { message: { id: 'msg_1', type: 'message', role: 'assistant', content: [], model: body.model, stop_reason: null, stop_sequence: null, usage: { input_tokens: usageIn, output_tokens: 1 } } });
      send('content_block_start', { index: 0, content_block: { type: 'text', text: '' } });
      return {
        delta: (text) => send('content_block_delta', { index: 0, delta: { type: 'text_delta', text } }),
        end(usage) {
          send('content_block_stop', { index: 0 });
          send('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { input_tokens: usage.prompt, output_tokens: usage.completion } });
          send('message_stop', {});
          res.end();
        },
      };
    },
    error(res, status, message) {
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ type: 'error', error: { type: status === 429 ? 'rate_limit_error' : status >= 500 ? 'api_error' : 'invalid_request_error', message } }));
    },
  }).then((u) => {
    const answer = u.answer.bind(u);
    return { ...u, answer: (s: Script) => ((usageIn = s.usage.prompt), answer(s)) };
  });
}

/** Bedrock's Converse stream (`POST /model/{id}/converse-stream`): AWS binary event-stream messages; errors as `x-amzn-errortype` answers. */
export function scriptedBedrock(): Promise<ScriptedUpstream> {
  const codec = new EventStreamCodec((b) => Buffer.from(b).toString('utf8'), (s) => new Uint8Array(Buffer.from(s, 'utf8')));
  const event = (type: string, body: unknown) =>
    codec.encode({
      headers: { ':message-type': { type: 'string', value: 'event' }, ':event-type': { type: 'string', value: type }, ':content-type': { type: 'string', value: 'application/json' } },
      body: new Uint8Array(Buffer.from(JSON.stringify(body))),
    });
  return scripted({
    open(res) {
      res.writeHead(200, { 'content-type': 'application/vnd.amazon.eventstream', 'x-amzn-requestid': 'req-1' });
      res.write(event('messageStart', { role: 'assistant' }));
      return {
        delta: (text) => res.write(event('contentBlockDelta', { contentBlockIndex: 0, delta: { text } })),
        end(usage) {
          res.write(event('contentBlockStop', { contentBlockIndex: 0 }));
          res.write(event('messageStop', { stopReason: 'end_turn' }));
          res.end(event('metadata', { usage: { inputTokens: usage.prompt, outputTokens: usage.completion, totalTokens: usage.prompt + usage.completion }, metrics: { latencyMs: 1 } }));
        },
      };
    },
    error(res, status, message) {
      const type = status === 429 ? 'ThrottlingException' : status >= 500 ? 'InternalServerException' : 'ValidationException';
      res.writeHead(status, { 'content-type': 'application/json', 'x-amzn-errortype': `${type}:http://internal.amazon.com/coral/com.amazon.bedrock/`, 'x-amzn-requestid': 'req-1' }).end(JSON.stringify({ message }));
    },
  });
}
