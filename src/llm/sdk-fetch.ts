import diagnostics from 'node:diagnostics_channel';
import type { IncomingHttpHeaders } from 'node:http';
import type { Socket } from 'node:net';
import type { Agent, Dispatcher } from 'undici';
import { DEFAULT_MODEL_HTTP_KEEPALIVE_SECONDS } from '../lib/setting-defaults.js';
import { UpstreamBody, type ResponseBody } from './upstream-body.js';
import { cancelSourceOf, type CancelSource } from '../lib/cancellation.js';

/**
 * Per connection: how many requests were written on it and how many bytes it had read when the
 * last one was written (from undici's `undici:client:sendHeaders` diagnostics channel).
 */
const written = new WeakMap<object, { readonly requests: number; readonly bytesRead: number }>();
diagnostics.subscribe('undici:client:sendHeaders', (message) => {
  const { socket } = message as { socket: Socket };
  written.set(socket, { requests: (written.get(socket)?.requests ?? 0) + 1, bytesRead: socket.bytesRead });
});

/** How many times a request is sent again after finding its kept-alive connection closed. */
const MAX_STALE_RETRIES = 4;

/**
 * Failures that mean "the server had closed this kept-alive connection": it ended the connection
 * (or refused the write) without a byte of answer, on a connection that had carried an earlier
 * exchange. A reset after the request went through is not among them: the server may be working
 * on it, and a POST is not sent twice.
 */
const staleConnectionErrors = new WeakSet<object>();

function markStale(socket: Socket, err: Error): void {
  const w = written.get(socket);
  const code = (err as { code?: string }).code;
  const closedUnanswered = (code === 'UND_ERR_SOCKET' && err.message === 'other side closed') || code === 'EPIPE';
  if (w && w.requests > 1 && socket.bytesRead === w.bytesRead && closedUnanswered) staleConnectionErrors.add(err);
}

/**
 * `RequestInit` as the SDKs hand it on: `fetchOptions` given to an SDK call reach `fetch` as they are.
 * `onRequestSent` runs (as a microtask) once the request has been written to the connection.
 */
export interface SdkFetchInit extends RequestInit {
  readonly onRequestSent?: () => void;
  /** Cancels the request as `signal` does (and instead of it): Dovetail's own callers, without an `AbortSignal`. */
  readonly cancel?: CancelSource;
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
 * connection closed by the server (closed without a byte of answer) is sent again on another one.
 * There are no header or body timeouts: a generation's own time limit (`APP_MAX_EXECUTION_TIME`)
 * aborts it. Unlike `fetch`, redirects are not followed and one `content-encoding` is decoded.
 */
export function createSdkFetch(opts: UpstreamHttpOptions = {}): typeof fetch {
  return createUpstreamHttp(opts).fetch;
}

/** An upstream answer before it is made a `Response`: status, headers and the body stream. */
export interface RawResponse {
  readonly status: number;
  readonly statusText: string;
  readonly headers: IncomingHttpHeaders;
  /** Null for statuses without a body and for HEAD. */
  readonly body: ResponseBody | null;
}

export interface UpstreamHttp {
  /** The `fetch` above, for the SDKs. */
  readonly fetch: typeof fetch;
  /** The same request without the `Response`/`Headers` objects (a quarter of a millisecond per answer). */
  request(url: string, init: SdkFetchInit): Promise<RawResponse>;
}

export interface UpstreamHttpOptions {
  /** Most connections per origin (default: no limit). */
  readonly connections?: number;
  /**
   * How long an idle connection is kept for the next request, ms (default `MODEL_HTTP_KEEPALIVE_SECONDS`'s
   * 60 s); a server's `Keep-Alive: timeout` hint shortens it.
   */
  readonly keepAliveMs?: number;
}

/**
 * One keep-alive connection pool with both ways in: `fetch` for the SDKs, `request` for callers that read the raw answer.
 *
 * Idle connections are kept `keepAliveMs` so that a burst of streams after a quiet minute finds them
 * open (a new connection costs a handshake, TLS included, before the request can leave). A server
 * that closes an idle connection sooner says so with a FIN, and the pool drops it; one that closes it
 * while a request is being written is caught by the stale-connection retry below.
 */
export function createUpstreamHttp(opts: UpstreamHttpOptions = {}): UpstreamHttp {
  const keepAliveMs = opts.keepAliveMs ?? DEFAULT_MODEL_HTTP_KEEPALIVE_SECONDS * 1000;
  let agent: Agent | undefined;
  let agentLoading: Promise<Agent> | undefined;
  // undici (~110 modules) is loaded with the first request, not when a provider is set up (docs/speed.md, "Start-up").
  const makeAgent = async (): Promise<Agent> => {
    const { Agent, buildConnector } = await import('undici');
    const connect = buildConnector({});
    return (agent = new Agent({
      keepAliveTimeout: keepAliveMs,
      keepAliveMaxTimeout: keepAliveMs,
      headersTimeout: 0,
      bodyTimeout: 0,
      connections: opts.connections ?? null,
      connect: (options, callback) =>
        connect(options, (err, socket) => {
          // Registered before undici's own listeners, so the mark is there when the request fails.
          socket?.on('error', (e: Error) => markStale(socket as Socket, e));
          if (err) callback(err, null);
          else callback(null, socket as Socket);
        }),
    }));
  };
  const request = async (input: string | URL, init: SdkFetchInit): Promise<RawResponse> => {
    const url = new URL(input);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new TypeError(`fetch failed: unsupported protocol ${url.protocol}`);
    const cancel = cancelSourceOf(init);
    if (cancel?.aborted) throw abortError(cancel);
    const headers = toHeaderRecord(init.headers);
    if (headers['accept-encoding'] === undefined) headers['accept-encoding'] = 'gzip, deflate, br';
    const options: Dispatcher.DispatchOptions = {
      origin: url.origin,
      path: `${url.pathname}${url.search}`,
      method: (init.method ?? 'GET') as Dispatcher.HttpMethod,
      headers,
      body: bytesOf(init.body) ?? (await serialised(init.body, headers)),
    };
    const dispatcher = agent ?? (await (agentLoading ??= makeAgent()));
    // Reported once, also when a stale connection makes the request go out again.
    let reported = !init.onRequestSent;
    const onSent = () => {
      if (reported) return;
      reported = true;
      try {
        init.onRequestSent!();
      } catch {
        // the caller's hook must not break the request
      }
    };
    const send = (attempt: number) =>
      new Promise<RawResponse>((resolve, reject) => {
        dispatcher.dispatch(options, new ResponseHandler(cancel, init.method === 'HEAD', onSent, resolve, (err, beforeResponse) => {
          // A kept-alive connection the server had closed: again, on another connection (the pool
          // may hold more such; a fresh connection's failure is final).
          if (beforeResponse && attempt < MAX_STALE_RETRIES && !cancel?.aborted && staleConnectionErrors.has(err)) resolve(send(attempt + 1));
          else reject(cancel?.aborted ? abortError(cancel) : new TypeError('fetch failed', { cause: err }));
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
  return new Response(raw.body?.stream ?? null, { status: raw.status, statusText: raw.statusText, headers: toHeaders(raw.headers) });
}

/** HTTP allows any byte in a reason phrase; `Response` takes Latin-1 only. */
// the range starts at \x00 on purpose: any Latin-1 text is a valid header value
// eslint-disable-next-line no-control-regex
const latin1 = (text: string | undefined) => (text && /^[\x00-\xff]*$/.test(text) ? text : '');

/** One request's dispatch handler: resolves the raw answer at the headers, then feeds its body. */
class ResponseHandler implements Dispatcher.DispatchHandler {
  #controller: Dispatcher.DispatchController | undefined;
  /** Made once the request has been written (off the path to the first byte); handed on with the answer. */
  #body: UpstreamBody | undefined;
  #responded = false;
  /** The request (not its body stream) has ended: undici's controller no longer applies. */
  #requestDone = false;
  /** Undefined until the first body bytes; true while the parser is held after them. */
  #holding: boolean | undefined;
  /** Removes `#onAbort` from the caller's cancellation. */
  readonly #unlisten: (() => void) | undefined;
  readonly #onAbort = () => {
    const err = abortError(this.cancel!);
    if (!this.#controller) return this.#settle(err); // not on a connection yet; dropped when it gets one
    if (!this.#requestDone) this.#controller.abort(err);
    else this.#body?.error(err); // the request ended but its body is still being inflated
  };

  constructor(
    readonly cancel: CancelSource | undefined,
    readonly head: boolean,
    readonly onSent: () => void,
    readonly resolve: (r: RawResponse) => void,
    readonly fail: (err: Error, beforeResponse: boolean) => void,
  ) {
    this.#unlisten = cancel?.onAbort(this.#onAbort);
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    if (this.cancel?.aborted) return this.#onAbort();
    // undici writes the request right after this call returns, in the same tick; the body stream
    // is made after that write, off the request's path (and before any answer can arrive).
    queueMicrotask(() => {
      if (!this.#responded) this.#bodyOf(controller);
      this.onSent();
    });
  }

  /** The answer's body stream, fed by `controller`'s request (made once). */
  #bodyOf(controller: Dispatcher.DispatchController): UpstreamBody {
    return (this.#body ??= new UpstreamBody(
      {
        pause: () => {
          if (!this.#requestDone) controller.pause();
        },
        resume: () => {
          if (!this.#requestDone && !this.#holding && controller.paused) controller.resume();
        },
        abort: (reason) => {
          if (!this.#requestDone) controller.abort(reason);
        },
      },
      () => this.#release(),
    ));
  }

  onResponseStart(controller: Dispatcher.DispatchController, status: number, headers: IncomingHttpHeaders, statusText?: string): void {
    if (status < 200) return; // 1xx: the real response follows
    if (status > 599) {
      // A status HTTP does not have (e.g. 999) is a failed request, as for `fetch`, not a crash.
      const err = new RangeError(`the upstream answered with status ${status}`);
      this.#settle(err, false);
      controller.abort(err);
      return;
    }
    const nullBody = status === 204 || status === 205 || status === 304 || this.head;
    this.#responded = true;
    if (nullBody) this.#body = undefined;
    else this.#bodyOf(controller).decode(headers['content-encoding']);
    this.resolve({ status, statusText: latin1(statusText), headers, body: this.#body ?? null });
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (!this.#responded || !this.#body?.open) return;
    this.#body.write(chunk);
    if (this.#holding === undefined) {
      // The first body bytes (the first token) go on before the parser works through the rest of
      // a burst: it resumes once this tick's work, their delivery included, is done.
      this.#holding = true;
      controller.pause();
      setImmediate(() => {
        this.#holding = false;
        if (!this.#requestDone && controller.paused && this.#body?.open !== false) controller.resume();
      });
    }
  }

  onResponseEnd(): void {
    this.#requestDone = true;
    if (this.#body) this.#body.end();
    else this.#release();
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    this.#requestDone = true;
    const cause = this.cancel?.aborted ? abortError(this.cancel) : err;
    if (this.#responded && this.#body) this.#body.error(cause);
    else if (this.#responded) this.#release();
    else this.#settle(err);
  }

  /** Fails the request before any answer (once). */
  #settle(err: Error, beforeResponse = true): void {
    if (this.#responded) return;
    this.#responded = true;
    this.#body = undefined;
    this.#release();
    this.fail(err, beforeResponse);
  }

  /** The answer and its body are over: the caller's cancellation no longer concerns this request. */
  #release(): void {
    this.#unlisten?.();
  }
}

function abortError(cancel: CancelSource): Error {
  const reason = cancel.reason;
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

/** A string or bytes body as a Buffer (no await on the common path); null for other kinds. */
function bytesOf(body: BodyInit | null | undefined): Buffer | null {
  if (typeof body === 'string') return Buffer.from(body);
  if (body instanceof Uint8Array) return Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  if (body instanceof ArrayBuffer) return Buffer.from(body);
  return null;
}

/**
 * FormData, Blob, streams: the platform serialises them, and gives the content type `fetch` would
 * send (a multipart boundary) when `headers` has none (the SDKs leave it to `fetch` for uploads).
 */
async function serialised(body: BodyInit | null | undefined, headers: Record<string, string>): Promise<Buffer | null> {
  if (body === undefined || body === null) return null;
  const r = new Response(body);
  const type = r.headers.get('content-type');
  if (type && headers['content-type'] === undefined) headers['content-type'] = type;
  return Buffer.from(await r.arrayBuffer());
}
