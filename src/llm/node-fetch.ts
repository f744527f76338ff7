import http from 'node:http';
import https from 'node:https';
import { Readable } from 'node:stream';
import zlib from 'node:zlib';

/**
 * A `fetch` for the model SDKs, on `node:http` with keep-alive agents instead of the built-in
 * (undici) `fetch`. Two things matter for streaming answers:
 *
 * - the response body is delivered **one chunk per network read**: everything the socket brought
 *   is passed on at once. undici's `fetch` enqueues every HTTP chunk of a chunked body separately,
 *   so an upstream that writes one chunk per token costs one stream read (and one promise) per
 *   token, and its burst is held up behind them;
 * - no WHATWG request machinery on the way out (about a millisecond per request on this path).
 *
 * It implements what the SDKs use: method, headers, a string/bytes body, `signal` (rejects with an
 * `AbortError` and closes the connection), a `Response` with status, headers and a streaming body.
 * Compressed bodies are decompressed. Connection failures reject with `TypeError('fetch failed')`
 * and the cause, as `fetch` does; a request that finds its kept-alive connection closed by the
 * server is sent once more on a new one.
 */
export function createNodeFetch(opts: { maxSockets?: number } = {}): typeof fetch {
  // Idle connections are closed after 4 s, before common servers' 5 s keep-alive timeout.
  const agentOptions = { keepAlive: true, timeout: 4000, maxSockets: opts.maxSockets ?? Infinity };
  const agents = { 'http:': new http.Agent(agentOptions), 'https:': new https.Agent(agentOptions) };
  return (async (input: string | URL | Request, init: RequestInit = {}): Promise<Response> => {
    const url = new URL(input instanceof Request ? input.url : input);
    const transport = url.protocol === 'https:' ? https : url.protocol === 'http:' ? http : undefined;
    if (!transport) throw new TypeError(`fetch failed: unsupported protocol ${url.protocol}`);
    const signal = init.signal ?? undefined;
    if (signal?.aborted) throw abortError(signal);
    const headers = toNodeHeaders(init.headers);
    const body = await requestBody(init.body);
    if (body !== undefined) headers['content-length'] = String(body.byteLength);
    if (headers['accept-encoding'] === undefined) headers['accept-encoding'] = 'gzip, deflate, br';

    const agent = agents[url.protocol as 'http:' | 'https:'];
    const send = (retried: boolean) =>
      new Promise<Response>((resolve, reject) => {
        const req = transport.request(url, { method: init.method ?? 'GET', headers, agent });
        req.setNoDelay(true);
        let response: http.IncomingMessage | undefined;
        const onAbort = () => {
          const err = abortError(signal!);
          response?.destroy(err);
          req.destroy(err);
        };
        signal?.addEventListener('abort', onAbort, { once: true });
        const detach = () => signal?.removeEventListener('abort', onAbort);
        req.once('error', (err: NodeJS.ErrnoException) => {
          detach();
          if (err.name === 'AbortError') return reject(err);
          // A kept-alive connection the server closed meanwhile: once more on a new one.
          if (!retried && !response && req.reusedSocket && (err.code === 'ECONNRESET' || err.code === 'EPIPE')) return resolve(send(true));
          reject(new TypeError('fetch failed', { cause: err }));
        });
        req.once('response', (res) => {
          response = res;
          res.once('close', detach);
          const status = res.statusCode ?? 502;
          const nullBody = status === 204 || status === 205 || status === 304 || init.method === 'HEAD';
          try {
            resolve(new Response(nullBody ? null : coalescingBody(decoded(res)), { status, statusText: res.statusMessage, headers: toHeaders(res.headers) }));
          } catch (err) {
            // A status fetch cannot represent (e.g. 999) is a failed request, not a crash.
            res.destroy();
            reject(new TypeError('fetch failed', { cause: err }));
          }
        });
        req.end(body);
      });
    return send(false);
  }) as typeof fetch;
}

function abortError(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  return reason instanceof Error && reason.name === 'AbortError' ? reason : new DOMException('This operation was aborted', 'AbortError');
}

function toNodeHeaders(h: HeadersInit | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (!h) return out;
  const entries = h instanceof Headers ? h.entries() : Array.isArray(h) ? h : Object.entries(h);
  for (const [k, v] of entries) out[k.toLowerCase()] = v;
  return out;
}

function toHeaders(h: http.IncomingHttpHeaders): Headers {
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

function decoded(res: http.IncomingMessage): Readable {
  const enc = String(res.headers['content-encoding'] ?? '').toLowerCase();
  const unzip = enc === 'gzip' || enc === 'x-gzip' ? zlib.createGunzip() : enc === 'deflate' ? zlib.createInflate() : enc === 'br' ? zlib.createBrotliDecompress() : undefined;
  if (!unzip) return res;
  res.on('error', (err) => unzip.destroy(err));
  unzip.on('close', () => res.destroy());
  return res.pipe(unzip);
}

/** A web stream that passes on everything buffered in `src` as one chunk per `readable` event. */
function coalescingBody(src: Readable): ReadableStream<Uint8Array> {
  let cancelled = () => undefined as void;
  return new ReadableStream<Uint8Array>({
    start(controller) {
      let open = true;
      const finish = (err?: unknown) => {
        if (!open) return;
        open = false;
        if (err === undefined) controller.close();
        else controller.error(err);
      };
      src.on('readable', () => {
        const parts: Buffer[] = [];
        let c: Buffer | null;
        while ((c = src.read() as Buffer | null) !== null) parts.push(c);
        if (open && parts.length) controller.enqueue(parts.length === 1 ? parts[0]! : Buffer.concat(parts));
      });
      src.once('end', () => finish());
      src.once('error', (err) => finish(err));
      // A connection closed before the end (reset, abort) is an error, not a short body.
      src.once('close', () => {
        if (!src.readableEnded) finish(src.errored ?? new Error('terminated'));
      });
      cancelled = () => {
        open = false;
        src.destroy();
      };
    },
    cancel() {
      cancelled();
    },
  });
}
