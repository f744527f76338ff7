import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { EventStreamCodec } from '@smithy/core/event-streams';

/** One request a fake model server received. */
export interface SeenRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: Record<string, unknown>;
}

export interface FakeModelServer {
  /** `http://127.0.0.1:PORT` (no path). */
  readonly url: string;
  readonly requests: SeenRequest[];
  /** Resolves when the client closes a connection before its answer ended. */
  closedEarly(): Promise<void>;
  close(): Promise<void>;
}

async function serve(handle: (seen: SeenRequest, res: http.ServerResponse) => void): Promise<FakeModelServer> {
  const requests: SeenRequest[] = [];
  let early = false;
  const waiters: (() => void)[] = [];
  const server = http.createServer((rq, rs) => {
    rs.on('close', () => {
      if (rs.writableEnded) return;
      early = true;
      for (const w of waiters.splice(0)) w();
    });
    const chunks: Buffer[] = [];
    rq.on('data', (c: Buffer) => chunks.push(c));
    rq.on('end', () => {
      const raw = Buffer.concat(chunks).toString();
      const seen = { method: rq.method ?? '', path: rq.url ?? '', headers: rq.headers, body: (raw ? JSON.parse(raw) : {}) as Record<string, unknown> };
      requests.push(seen);
      handle(seen, rs);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    closedEarly: () => (early ? Promise.resolve() : new Promise<void>((r) => waiters.push(r))),
    async close() {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/**
 * A local Anthropic Messages API (`POST /v1/messages`, streaming): when the request turns
 * `thinking` on, a thinking block (`thinking`) comes first, then the text block (`answer`).
 */
export function startFakeAnthropic(opts: { thinking: string; answer: string }): Promise<FakeModelServer> {
  return serve((seen, rs) => {
    rs.writeHead(200, { 'content-type': 'text/event-stream' });
    const send = (event: string, data: Record<string, unknown>) => rs.write(`event: ${event}\ndata: ${JSON.stringify({ type: event, ...data })}\n\n`);
    send('message_start', { message: { id: 'msg_1', type: 'message', role: 'assistant', content: [], model: seen.body.model, stop_reason: null, stop_sequence: null, usage: { input_tokens: 7, output_tokens: 1 } } });
    let index = 0;
    if (seen.body.thinking) {
      send('content_block_start', { index, content_block: { type: 'thinking', thinking: '', signature: '' } });
      for (const t of opts.thinking.match(/.{1,5}/gs) ?? []) send('content_block_delta', { index, delta: { type: 'thinking_delta', thinking: t } });
      send('content_block_delta', { index, delta: { type: 'signature_delta', signature: 'sig' } });
      send('content_block_stop', { index });
      index++;
    }
    send('content_block_start', { index, content_block: { type: 'text', text: '' } });
    for (const t of opts.answer.match(/.{1,5}/gs) ?? []) send('content_block_delta', { index, delta: { type: 'text_delta', text: t } });
    send('content_block_stop', { index });
    send('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 9 } });
    send('message_stop', {});
    rs.end();
  });
}

/**
 * A local Bedrock runtime speaking the Converse stream: `POST /model/{modelId}/converse-stream`
 * answered with AWS's binary event stream (`application/vnd.amazon.eventstream`, messages
 * encoded by the Smithy codec the SDK decodes with): `messageStart`, reasoning deltas (when
 * `reasoning` is given), text deltas, `contentBlockStop`, `messageStop`, `metadata` with usage;
 * with `hangAfterStart`, one text delta and then nothing.
 */
export function startFakeBedrock(opts: { answer: string; reasoning?: string; hangAfterStart?: boolean }): Promise<FakeModelServer> {
  const codec = new EventStreamCodec((b) => Buffer.from(b).toString('utf8'), (s) => new Uint8Array(Buffer.from(s, 'utf8')));
  const event = (type: string, body: unknown) =>
    codec.encode({
      headers: {
        ':message-type': { type: 'string', value: 'event' },
        ':event-type': { type: 'string', value: type },
        ':content-type': { type: 'string', value: 'application/json' },
      },
      body: new Uint8Array(Buffer.from(JSON.stringify(body))),
    });
  return serve((seen, rs) => {
    if (!/^\/model\/[^/]+\/converse-stream$/.test(seen.path)) {
      rs.writeHead(404, { 'content-type': 'application/json', 'x-amzn-errortype': 'ResourceNotFoundException' }).end(JSON.stringify({ message: `no route ${seen.path}` }));
      return;
    }
    rs.writeHead(200, { 'content-type': 'application/vnd.amazon.eventstream', 'x-amzn-requestid': 'req-1' });
    rs.write(event('messageStart', { role: 'assistant' }));
    if (opts.hangAfterStart) {
      rs.write(event('contentBlockDelta', { contentBlockIndex: 0, delta: { text: 'first ' } }));
      return;
    }
    for (const t of opts.reasoning?.match(/.{1,5}/gs) ?? []) rs.write(event('contentBlockDelta', { contentBlockIndex: 0, delta: { reasoningContent: { text: t } } }));
    for (const t of opts.answer.match(/.{1,5}/gs) ?? []) rs.write(event('contentBlockDelta', { contentBlockIndex: 1, delta: { text: t } }));
    rs.write(event('contentBlockStop', { contentBlockIndex: 1 }));
    rs.write(event('messageStop', { stopReason: 'end_turn' }));
    rs.write(event('metadata', { usage: { inputTokens: 12, outputTokens: 5, totalTokens: 17 }, metrics: { latencyMs: 1 } }));
    rs.end();
  });
}
