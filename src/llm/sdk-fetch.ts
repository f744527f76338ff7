import diagnostics from 'node:diagnostics_channel';
import type { IncomingHttpHeaders } from 'node:http';
import type { Socket } from 'node:net';
import zlib from 'node:zlib';
import { Agent, buildConnector, type Dispatcher } from 'undici';

/**
 * Requests written on each connection, counted from undici's `undici:client:sendHeaders` channel:
 * a failure on a connection that has carried an earlier exchange is a kept-alive connection the
 * server closed meanwhile.
 */
const exchanges = new WeakMap<object, number>();
diagnostics.subscribe('undici:client:sendHeaders', (message) => {
  const { socket } = message as { socket: object };
  exchanges.set(socket, (exchanges.get(socket) ?? 0) + 1);
});

/** How many times a request is sent again after failing on a kept-alive connection. */
const MAX_STALE_RETRIES = 4;

/** Errors raised on a connection that had already carried an exchange before the failing one. */
const reusedConnectionErrors = new WeakSet<object>();

/**
 * `RequestInit` as the SDKs hand it on: `fetchOptions` given to an SDK call reach `fetch` as they are.
 * `onRequestSent` runs (as a microtask) once the request has been written to the connection.
 */
export interface SdkFetchInit extends RequestInit {
  readonly onRequestSent?: () => void;
}

/** The SDK call option that makes `fetch` report when the request is on its way. */
export function reportSent(onSent: (() => void) | undefined): { fetchOptions?: object } {
  return onSent ? { fetchOptions: { onRequestSent: onSent } } : {};
}

/**
 * A `fetch` for the model SDKs, on undici's dispatcher with keep-alive connections, instead of the
 * built-in `fetch`. What matters for streaming answers:
 *
 * - the response body is delivered **one chunk per network read**: every HTTP chunk the parser
 *   found in what the socket brought is passed on together. The built-in `fetch` enqueues every
 *   HTTP chunk of a chunked body separately, and `node:http` copies each into its own buffer and
 *   calls into JavaScript for it; an upstream that writes one chunk per token costs one stream
 *   read (and several allocations) per token there, and its burst is held up behind them;
 * - no WHATWG request machinery on the way out.
 *
 * It implements what the SDKs use: method, headers, a string/bytes body, `signal` (rejects with an
 * `AbortError` and closes the connection), a `Response` with status, headers and a streaming body
 * (with backpressure). Compressed bodies are decompressed. Connection failures reject with
 * `TypeError('fetch failed')` and the cause, as `fetch` does; a request that finds its kept-alive
 * connection closed by the server is sent again on another one. There are no header or body
 * timeouts: a generation's own time limit (`APP_MAX_EXECUTION_TIME`) aborts it.
 */
export function createSdkFetch(opts: { connections?: number } = {}): typeof fetch {
  return createUpstreamHttp(opts).fetch;
}

/** An upstream answer before it is made a `Response`: status, headers and the body stream. */
export interface RawResponse {
  readonly status: number;
  readonly statusText: string;
  readonly headers: IncomingHttpHeaders;
  /** Null for statuses without a body and for HEAD. */
  readonly body: ReadableStream<Uint8Array> | null;
}

export interface UpstreamHttp {
  /** The `fetch` above, for the SDKs. */
  readonly fetch: typeof fetch;
  /** The same request without the `Response`/`Headers` objects (a quarter of a millisecond per answer). */
  request(url: string, init: SdkFetchInit): Promise<RawResponse>;
}

/** One keep-alive connection pool with both ways in: `fetch` for the SDKs, `request` for callers that read the raw answer. */
export function createUpstreamHttp(opts: { connections?: number } = {}): UpstreamHttp {
  const connect = buildConnector({});
  const agent = new Agent({
    // Idle connections are closed after 4 s, before common servers' 5 s keep-alive timeout.
    keepAliveTimeout: 4000,
    headersTimeout: 0,
    bodyTimeout: 0,
    connections: opts.connections ?? null,
    connect: (options, callback) =>
      connect(options, (err, socket) => {
        // Registered before undici's own listeners, so the mark is there when the request fails.
        socket?.on('error', (e: Error) => {
          if ((exchanges.get(socket) ?? 0) > 1) reusedConnectionErrors.add(e);
        });
        if (err) callback(err, null);
        else callback(null, socket as Socket);
      }),
  });
  const request = async (input: string | URL, init: SdkFetchInit): Promise<RawResponse> => {
    const url = new URL(input);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new TypeError(`fetch failed: unsupported protocol ${url.protocol}`);
    const signal = init.signal ?? undefined;
    if (signal?.aborted) throw abortError(signal);
    const headers = toHeaderRecord(init.headers);
    if (headers['accept-encoding'] === undefined) headers['accept-encoding'] = 'gzip, deflate, br';
    const options: Dispatcher.DispatchOptions = {
      origin: url.origin,
      path: `${url.pathname}${url.search}`,
      method: (init.method ?? 'GET') as Dispatcher.HttpMethod,
      headers,
      body: (await requestBody(init.body)) ?? null,
    };
    const send = (attempt: number) =>
      new Promise<RawResponse>((resolve, reject) => {
        agent.dispatch(options, new ResponseHandler(signal, init.method === 'HEAD', init.onRequestSent, resolve, (err, beforeResponse) => {
          // A kept-alive connection the server closed meanwhile: again, on another connection (the
          // pool may hold more such; a fresh connection's failure is final).
          if (beforeResponse && attempt < MAX_STALE_RETRIES && !signal?.aborted && reusedConnectionErrors.has(err)) resolve(send(attempt + 1));
          else reject(signal?.aborted ? abortError(signal) : new TypeError('fetch failed', { cause: err }));
        }));
      });
    return send(0);
  };
  const fetch = async (input: string | URL | Request, init: SdkFetchInit = {}): Promise<Response> => {
    return toResponse(await request(input instanceof Request ? input.url : input, init));
  };
  return { fetch: fetch as typeof globalThis.fetch, request };
}

/** The `Response` of a raw answer (the body is not read). */
export function toResponse(raw: RawResponse): Response {
  return new Response(raw.body, { status: raw.status, statusText: raw.statusText, headers: toHeaders(raw.headers) });
}

type Sink = { write(chunk: Buffer): void; end(): void };

/** One request's dispatch handler: resolves a `Response` at the headers, then feeds its body. */
class ResponseHandler implements Dispatcher.DispatchHandler {
  #controller: Dispatcher.DispatchController | undefined;
  #body: ReadableStreamDefaultController<Uint8Array> | undefined;
  #sink: Sink | undefined;
  #parts: Buffer[] = [];
  #flushQueued = false;
  #done = false;
  /** The body, made when the request goes out; handed on with the response. */
  #stream: ReadableStream<Uint8Array> | undefined;
  #responded = false;
  /** Undefined until the first body bytes; true while the parser is held after them. */
  #holding: boolean | undefined;
  readonly #onAbort = () => {
    const err = abortError(this.signal!);
    // Not on a connection yet: reject now; the request is dropped when it gets one.
    if (this.#controller) this.#controller.abort(err);
    else this.fail(err, true);
  };

  constructor(
    readonly signal: AbortSignal | undefined,
    readonly head: boolean,
    readonly onSent: (() => void) | undefined,
    readonly resolve: (r: RawResponse) => void,
    readonly fail: (err: Error, beforeResponse: boolean) => void,
  ) {
    signal?.addEventListener('abort', this.#onAbort, { once: true });
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    if (this.signal?.aborted) return this.#onAbort();
    // Made while the upstream works, off the path to the first byte.
    this.#stream ??= this.#bodyStream(controller);
    // undici writes the request right after this call returns, in the same tick.
    if (this.onSent) queueMicrotask(this.onSent);
  }

  onResponseStart(controller: Dispatcher.DispatchController, status: number, headers: IncomingHttpHeaders, statusText?: string): void {
    if (status < 200) return; // 1xx: the real response follows
    if (status > 599) {
      // A status HTTP does not have (e.g. 999) is a failed request, as for `fetch`, not a crash.
      const err = new RangeError(`the upstream answered with status ${status}`);
      this.#finish();
      this.fail(err, false);
      controller.abort(err);
      return;
    }
    const nullBody = status === 204 || status === 205 || status === 304 || this.head;
    if (!nullBody) this.#sink = decompressing(headers['content-encoding'], this.#direct, (err) => controller.abort(err)) ?? this.#direct;
    this.#responded = true;
    this.resolve({ status, statusText: statusText ?? '', headers, body: nullBody ? null : this.#stream! });
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (!this.#sink) return;
    this.#sink.write(chunk);
    if (this.#holding === undefined) {
      // The first body bytes (the first token) go on before the parser works through the rest of
      // a burst: it resumes once this tick's work, their delivery included, is done.
      this.#holding = true;
      controller.pause();
      setImmediate(() => {
        this.#holding = false;
        if ((this.#body?.desiredSize ?? 1) > 0) controller.resume();
      });
    }
  }

  onResponseEnd(): void {
    this.#sink?.end();
    this.#finish();
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    const cause = this.signal?.aborted ? abortError(this.signal) : err;
    if (this.#responded && this.#body) {
      this.#flush();
      try {
        this.#body.error(cause);
      } catch {
        // already closed or cancelled by the reader
      }
    } else if (!this.#done) this.fail(err, true);
    this.#finish();
  }

  #finish(): void {
    this.#done = true;
    this.signal?.removeEventListener('abort', this.#onAbort);
  }

  /** The body stream; `#direct` gathers parts until the parser has gone through the whole read. */
  #bodyStream(controller: Dispatcher.DispatchController): ReadableStream<Uint8Array> {
    return new ReadableStream<Uint8Array>(
      {
        start: (c) => {
          this.#body = c;
        },
        pull: () => {
          if (controller.paused && !this.#holding) controller.resume();
        },
        cancel: () => {
          this.#body = undefined;
          this.#sink = undefined;
          if (!this.#done) controller.abort(new DOMException('The body was cancelled', 'AbortError'));
        },
      },
      { highWaterMark: 1 << 20, size: (chunk) => chunk.byteLength },
    );
  }

  readonly #direct: Sink = {
    write: (chunk) => {
      this.#parts.push(chunk);
      if (this.#flushQueued) return;
      this.#flushQueued = true;
      queueMicrotask(() => this.#flush());
    },
    end: () => {
      this.#flush();
      this.#body?.close();
      this.#body = undefined;
    },
  };

  #flush(): void {
    this.#flushQueued = false;
    if (this.#parts.length === 0 || !this.#body) return;
    const parts = this.#parts;
    this.#parts = [];
    this.#body.enqueue(parts.length === 1 ? parts[0]! : Buffer.concat(parts));
    if ((this.#body.desiredSize ?? 1) <= 0) this.#controller?.pause();
  }
}

/** A sink that inflates `encoding` (gzip, deflate, br) into `out`; undefined for identity. */
function decompressing(encoding: string | string[] | undefined, out: Sink, fail: (err: Error) => void): Sink | undefined {
  const enc = String(encoding ?? '').toLowerCase();
  const unzip = enc === 'gzip' || enc === 'x-gzip' ? zlib.createGunzip() : enc === 'deflate' ? zlib.createInflate() : enc === 'br' ? zlib.createBrotliDecompress() : undefined;
  if (!unzip) return undefined;
  unzip.on('data', (c: Buffer) => out.write(c));
  unzip.once('end', () => out.end());
  unzip.once('error', fail);
  return { write: (chunk) => unzip.write(chunk), end: () => unzip.end() };
}

function abortError(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  return reason instanceof Error && reason.name === 'AbortError' ? reason : new DOMException('This operation was aborted', 'AbortError');
}

function toHeaderRecord(h: HeadersInit | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (!h) return out;
  const entries = h instanceof Headers ? h.entries() : Array.isArray(h) ? h : Object.entries(h);
  for (const [k, v] of entries) out[k.toLowerCase()] = v;
  return out;
}

function toHeaders(h: Record<string, string | string[] | undefined>): Headers {
  const out = new Headers();
  for (const [k, v] of Object.entries(h)) {
    if (v === undefined) continue;
    if (Array.isArray(v)) for (const x of v) out.append(k, x);
    else out.set(k, v);
  }
  return out;
}

async function requestBody(body: BodyInit | null | undefined): Promise<Buffer | undefined> {
  if (body === undefined || body === null) return undefined;
  if (typeof body === 'string') return Buffer.from(body);
  if (body instanceof Uint8Array) return Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  if (body instanceof ArrayBuffer) return Buffer.from(body);
  // FormData, Blob, streams: let the platform serialise them.
  return Buffer.from(await new Response(body).arrayBuffer());
}
