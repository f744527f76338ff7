import type { Server } from 'node:http';
import type { FastifyReply } from 'fastify';
import { DEFAULT_SSE_MAX_BUFFERED_BYTES, DEFAULT_SSE_PING_INTERVAL_MS } from '../config/defaults.js';
import type { Metrics } from '../infra/metrics.js';

/** Open streams per HTTP server (every encapsulated context of one app shares its `server`), for shutdown. */
const OPEN = new WeakMap<Server, Set<SseStream>>();

/** Ends every open stream of this server with `payload` as its last frame (graceful shutdown); returns how many. */
export function endOpenStreams(server: Server, payload: object): number {
  const open = OPEN.get(server);
  if (!open) return 0;
  const streams = [...open];
  for (const s of streams) s.end({ ...payload, ...s.shutdownFields });
  return streams.length;
}

export interface SseStream {
  /** Writes `data: <compact json>\n\n`. Returns false once the client has gone. */
  send(payload: object): boolean;
  /** Writes the keep-alive frame `event: ping\n\n`. */
  ping(): void;
  /** Ends the response (idempotent), with `payload` as its last frame when given: one write for both. */
  end(payload?: object): void;
  /**
   * Resolves once the client has taken the unsent bytes down to `maxBufferedBytes` (at once when
   * they are within it): true, or false when the stream closed meanwhile. A stream that reads its
   * frames from a log awaits it before reading more (`slowClient: 'wait'`).
   */
  drained(): Promise<boolean>;
  /** Aborted when the client disconnects or the stream ends. */
  readonly signal: AbortSignal;
  readonly closed: boolean;
  /** Added to the shutdown frame of this stream (`SseOptions.shutdownFields`). */
  readonly shutdownFields: Readonly<Record<string, unknown>> | undefined;
}

export interface SseOptions {
  /** Send a ping as the very first frame (Dify's pub/sub streams do). */
  readonly leadingPing?: boolean;
  readonly pingIntervalMs?: number;
  /** Extra response headers. */
  readonly headers?: Record<string, string>;
  /** Send the headers with the first frame (or ping) instead of at once: one write for both. */
  readonly headersWithFirstFrame?: boolean;
  /**
   * Write every frame to the connection at once. By default frames sent in one event-loop turn
   * go out together, at its end (the first frame always at once); a stream whose frames are
   * already gathered (one per upstream read) wants each out before the work that follows it.
   */
  readonly flushEachFrame?: boolean;
  /** Fields the last frame gets when a shutdown ends the stream (a run stream names its run: where to reconnect). */
  readonly shutdownFields?: Readonly<Record<string, unknown>>;
  /** Most bytes held unsent for this client (`SSE_MAX_BUFFERED_BYTES`). */
  readonly maxBufferedBytes?: number;
  /**
   * What happens past `maxBufferedBytes`: `drop` (default) ends the connection at the next write
   * (a generation stream: its frames come from a model call that does not wait); `wait` writes
   * on and leaves the bound to the caller, which awaits `drained()` before producing more (a run
   * stream pauses its reading of the run's log; the run goes on).
   */
  readonly slowClient?: 'drop' | 'wait';
  /**
   * The keep-alive frame (default Dify's `event: ping\n\n`). OpenAI-compatible clients parse
   * every event's data as JSON: their streams keep alive with an SSE comment (`: ping\n\n`).
   */
  readonly pingFrame?: string;
  /** Written after the last frame when the stream ends (OpenAI's `data: [DONE]\n\n`). */
  readonly closingFrame?: string;
}

/**
 * Takes over the reply and opens a `text/event-stream` with Dify's framing: JSON frames as
 * `data: {…}\n\n` and keep-alive as `event: ping\n\n` (no data line, no `id:`/`retry:`).
 */
export function openSse(reply: FastifyReply, opts: SseOptions = {}): SseStream {
  reply.hijack();
  const res = reply.raw;
  // made when the signal is first asked for (a run stream does, a generation stream does not)
  let controller: AbortController | undefined;
  const headers: Record<string, string | number | string[]> = {};
  for (const [k, v] of Object.entries(reply.getHeaders())) if (v !== undefined) headers[k] = v as string;
  res.writeHead(200, {
    ...headers,
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    // no `connection` header of ours: Node sends `Connection: keep-alive` with its `Keep-Alive:
    // timeout=<keepAliveTimeout>` hint, so a client keeps the connection for its next request
    // (undici-based clients without a hint drop it after 4 s and open a new one)
    'x-accel-buffering': 'no',
    ...opts.headers,
  });
  let closed = false;
  const server = reply.server.server as Server;
  let open = OPEN.get(server);
  if (!open) OPEN.set(server, (open = new Set()));
  const metrics = (reply.server as { metrics?: Metrics }).metrics;
  const streams = metrics?.activeStreams;
  streams?.inc();
  const maxBuffered = opts.maxBufferedBytes ?? DEFAULT_SSE_MAX_BUFFERED_BYTES;
  const buffered = { bytes: () => (closed ? 0 : res.writableLength) };
  metrics?.sseBuffers.add(buffered);
  const close = () => {
    if (closed) return;
    closed = true;
    open.delete(stream);
    metrics?.sseBuffers.delete(buffered);
    streams?.dec();
    clearInterval(timer);
    controller?.abort();
  };
  res.on('close', close);
  const write = (frame: string): boolean => {
    if (closed || res.destroyed) return false;
    if (res.writableLength > maxBuffered && opts.slowClient !== 'wait') {
      // a client that does not read: its unsent frames would grow with the answer
      metrics?.sseSlowClientsDropped.inc();
      reply.log.warn({ bufferedBytes: res.writableLength, limit: maxBuffered }, 'stream dropped: the client does not read (SSE_MAX_BUFFERED_BYTES)');
      res.destroy();
      close();
      return false;
    }
    res.write(frame);
    return true;
  };
  // a keep-alive is pointless while frames wait to be read (and would only add to them)
  const pingFrame = opts.pingFrame ?? 'event: ping\n\n';
  const ping = () => void (res.writableLength === 0 && write(pingFrame));
  const timer = setInterval(ping, opts.pingIntervalMs ?? DEFAULT_SSE_PING_INTERVAL_MS);
  timer.unref();
  if (opts.leadingPing) write(pingFrame);
  else if (!opts.headersWithFirstFrame) res.flushHeaders();
  let sent = false;
  const stream: SseStream = {
    send: (payload) => {
      if (!write(`data: ${JSON.stringify(payload)}\n\n`)) return false;
      // Node holds a response's writes until the next tick to send them together; the first
      // frame (the time to first token) goes out at once.
      if (!sent || opts.flushEachFrame) {
        sent = true;
        res.uncork();
      }
      return true;
    },
    ping,
    drained: () => {
      if (closed || res.destroyed) return Promise.resolve(false);
      if (res.writableLength <= maxBuffered) return Promise.resolve(true);
      return new Promise<boolean>((resolve) => {
        const done = () => {
          res.off('drain', done);
          res.off('close', done);
          resolve(!closed && !res.destroyed);
        };
        res.on('drain', done);
        res.on('close', done);
      });
    },
    end: (payload) => {
      if (!closed && !res.destroyed) {
        const last = `${payload ? `data: ${JSON.stringify(payload)}\n\n` : ''}${opts.closingFrame ?? ''}`;
        res.end(last || undefined);
      }
      close();
    },
    get signal() {
      controller ??= new AbortController();
      if (closed) controller.abort();
      return controller.signal;
    },
    shutdownFields: opts.shutdownFields,
    get closed() {
      return closed;
    },
  };
  open.add(stream);
  return stream;
}
