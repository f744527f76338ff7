import { lookup } from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import type { LookupFunction } from 'node:net';
import { isBlockedAddress, isOwnAddress } from './blocked-addresses.js';

export { isBlockedAddress } from './blocked-addresses.js';

/** A remote fetch refused or failed; the message says why (it reaches the caller). */
export class RemoteFetchError extends Error {
  override name = 'RemoteFetchError';
}

export interface RemoteFetchOptions {
  /** Largest body accepted, in bytes. */
  readonly maxBytes: number;
  /** Host names (or IPs) that may resolve to private, loopback, reserved or this host's own addresses. */
  readonly allowHosts: readonly string[];
  readonly timeoutMs?: number;
  readonly maxRedirects?: number;
  readonly signal?: AbortSignal;
}

export interface RemoteFile {
  readonly body: Buffer;
  /** From Content-Type, without parameters ('' when absent). */
  readonly mimeType: string;
  /** From Content-Disposition or the last path segment ('' when neither gives one). */
  readonly filename: string;
  readonly url: string;
}

/** Resolves a host and refuses private targets unless allow-listed; the result is pinned for the connection. */
async function checkedAddress(host: string, allowHosts: readonly string[]): Promise<{ address: string; family: number }> {
  const bare = host.replace(/^\[|\]$/g, '');
  const allowed = allowHosts.includes(bare.toLowerCase());
  let addrs: { address: string; family: number }[];
  try {
    addrs = isIP(bare) ? [{ address: bare, family: isIP(bare) }] : await lookup(bare, { all: true });
  } catch {
    throw new RemoteFetchError(`cannot resolve host ${bare}`);
  }
  if (addrs.length === 0) throw new RemoteFetchError(`cannot resolve host ${bare}`);
  if (!allowed && addrs.some((a) => isBlockedAddress(a.address))) {
    throw new RemoteFetchError(`host ${bare} resolves to a private, loopback or reserved address, which is not allowed (SSRF_ALLOW_HOSTS)`);
  }
  if (!allowed && addrs.some((a) => isOwnAddress(a.address))) {
    throw new RemoteFetchError(`host ${bare} resolves to an address of this server, which is not allowed (SSRF_ALLOW_HOSTS)`);
  }
  return addrs[0]!;
}

function filenameFrom(res: http.IncomingMessage, url: URL): string {
  const cd = res.headers['content-disposition'];
  const m = cd ? /filename\*?=(?:UTF-8'')?"?([^";]+)"?/i.exec(cd) : null;
  if (m) return decodeURIComponent(m[1]!).split(/[\\/]/).pop() ?? '';
  return decodeURIComponent(url.pathname.split('/').pop() ?? '');
}

/** A `lookup` that answers with the address the guard checked, so the connection cannot rebind. */
function lookupPinnedTo(pinned: { address: string; family: number }): LookupFunction {
  return (_h, o, cb) => {
    if ((o as { all?: boolean }).all) (cb as (e: null, a: { address: string; family: number }[]) => void)(null, [pinned]);
    else cb(null, pinned.address, pinned.family);
  };
}

/**
 * Reads a body of at most `maxBytes` (declared or actual); the errors say `<what> is … over the
 * limit of <limit>`, and a broken read `<failure>: <cause>`.
 */
async function readCapped(res: http.IncomingMessage, maxBytes: number, what: string, limit: string, failure: string): Promise<Buffer> {
  const declared = Number(res.headers['content-length'] ?? NaN);
  if (declared > maxBytes) {
    res.destroy();
    throw new RemoteFetchError(`${what} is ${declared} bytes, over the limit of ${limit}`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of res) {
      size += (chunk as Buffer).length;
      if (size > maxBytes) {
        res.destroy();
        throw new RemoteFetchError(`${what} is over the limit of ${limit}`);
      }
      chunks.push(chunk as Buffer);
    }
  } catch (err) {
    if (err instanceof RemoteFetchError) throw err;
    throw new RemoteFetchError(`${failure}: ${(err as Error).message}`);
  }
  return Buffer.concat(chunks);
}

/**
 * Fetches an http(s) URL through the SSRF guard: only http/https, every hop's address checked and
 * pinned (no DNS rebinding), at most `maxRedirects` redirects, the body capped at `maxBytes`.
 */
export async function fetchRemote(rawUrl: string, opts: RemoteFetchOptions): Promise<RemoteFile> {
  let url: URL;
  try {
    url = new URL(rawUrl);
  } catch {
    throw new RemoteFetchError(`invalid URL: ${rawUrl}`);
  }
  for (let hop = 0; hop <= (opts.maxRedirects ?? 3); hop++) {
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new RemoteFetchError(`only http and https URLs can be fetched, got ${url.protocol}`);
    const pinnedLookup = lookupPinnedTo(await checkedAddress(url.hostname, opts.allowHosts));
    const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
      const req = (url.protocol === 'https:' ? https : http).get(url, { lookup: pinnedLookup, timeout: opts.timeoutMs ?? 10_000, signal: opts.signal }, resolve);
      req.on('timeout', () => req.destroy(new RemoteFetchError(`timed out fetching ${url.href}`)));
      req.on('error', (err) => reject(err instanceof RemoteFetchError ? err : new RemoteFetchError(`cannot fetch ${url.href}: ${err.message}`)));
    });
    const status = res.statusCode ?? 0;
    if (status >= 300 && status < 400 && res.headers.location) {
      res.resume();
      url = new URL(res.headers.location, url);
      continue;
    }
    if (status < 200 || status >= 300) {
      res.resume();
      throw new RemoteFetchError(`fetching ${url.href} failed with HTTP ${status}`);
    }
    const body = await readCapped(res, opts.maxBytes, 'remote file', `${opts.maxBytes} bytes`, `cannot fetch ${url.href}`);
    return {
      body,
      mimeType: String(res.headers['content-type'] ?? '').split(';')[0]!.trim(),
      filename: filenameFrom(res, url),
      url: url.href,
    };
  }
  throw new RemoteFetchError(`too many redirects fetching ${rawUrl}`);
}

export interface RemoteRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: string | Uint8Array;
}

export interface RemoteResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Buffer;
  readonly url: string;
}

export interface RemoteRequestOptions {
  /** Largest response body accepted, in bytes (the message names `limitName`). */
  readonly maxBytes: number;
  readonly limitName?: string;
  readonly allowHosts: readonly string[];
  readonly connectTimeoutMs: number;
  /** Idle time allowed while waiting for response data. */
  readonly readTimeoutMs: number;
  /**
   * Time the whole exchange may take, redirects and the last body byte included (a server that
   * trickles bytes cannot hold the request open past it); `totalTimeoutName` says which setting.
   */
  readonly totalTimeoutMs?: number;
  readonly totalTimeoutName?: string;
  readonly maxRedirects?: number;
  readonly signal?: AbortSignal;
  /** Headers besides Authorization / Cookie that carry credentials: dropped on a cross-origin redirect. */
  readonly credentialHeaders?: readonly string[];
}

const CREDENTIAL_HEADERS = ['authorization', 'cookie', 'proxy-authorization'];

function withoutCredentials(headers: Record<string, string>, extra: readonly string[]): Record<string, string> {
  const drop = new Set([...CREDENTIAL_HEADERS, ...extra.map((h) => h.toLowerCase())]);
  return Object.fromEntries(Object.entries(headers).filter(([k]) => !drop.has(k.toLowerCase())));
}

/**
 * Sends any HTTP request through the same SSRF guard as `fetchRemote` (every hop's address checked
 * and pinned) and returns the response whatever its status. Redirects are followed (303 → GET).
 */
export async function sendRemote(req: RemoteRequest, opts: RemoteRequestOptions): Promise<RemoteResponse> {
  let url: URL;
  try {
    url = new URL(req.url);
  } catch {
    throw new RemoteFetchError(`invalid URL: ${req.url}`);
  }
  let method = req.method.toUpperCase();
  let body = req.body;
  let sendHeaders: Record<string, string> = { ...req.headers };
  const total = opts.totalTimeoutMs;
  const overall = total === undefined ? undefined : new AbortController();
  const timer = total === undefined ? undefined : setTimeout(() => {
    const secs = total / 1000;
    overall!.abort(new RemoteFetchError(`timed out: ${req.url} did not answer in full within ${secs}s${opts.totalTimeoutName ? ` (${opts.totalTimeoutName})` : ''}`));
  }, total);
  const signal = overall ? (opts.signal ? AbortSignal.any([opts.signal, overall.signal]) : overall.signal) : opts.signal;
  try {
    return await exchange();
  } catch (err) {
    if (overall?.signal.aborted) throw overall.signal.reason;
    throw err;
  } finally {
    clearTimeout(timer);
  }

  async function exchange(): Promise<RemoteResponse> {
    for (let hop = 0; hop <= (opts.maxRedirects ?? 3); hop++) {
      if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new RemoteFetchError(`only http and https URLs can be requested, got ${url.protocol}`);
      const pinnedLookup = lookupPinnedTo(await checkedAddress(url.hostname, opts.allowHosts));
      const target = url;
      const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
        const r = (target.protocol === 'https:' ? https : http).request(target, { method, headers: sendHeaders, lookup: pinnedLookup, ...(signal ? { signal } : {}) }, resolve);
        const connectTimer = setTimeout(() => r.destroy(new RemoteFetchError(`timed out connecting to ${target.host} after ${opts.connectTimeoutMs / 1000}s`)), opts.connectTimeoutMs);
        r.on('socket', (sock) => {
          if (!sock.connecting) clearTimeout(connectTimer);
          else sock.once('connect', () => clearTimeout(connectTimer));
        });
        r.setTimeout(opts.readTimeoutMs, () => r.destroy(new RemoteFetchError(`timed out waiting for ${target.href} after ${opts.readTimeoutMs / 1000}s`)));
        r.on('error', (err) => {
          clearTimeout(connectTimer);
          reject(err instanceof RemoteFetchError ? err : new RemoteFetchError(`cannot reach ${target.href}: ${err.message}`));
        });
        r.on('response', () => clearTimeout(connectTimer));
        r.end(body);
      });
      const status = res.statusCode ?? 0;
      if (status >= 300 && status < 400 && res.headers.location) {
        res.resume();
        const next = new URL(res.headers.location, url);
        // Credentials stay with the origin they were given for (as browsers and httpx do).
        if (next.origin !== url.origin) sendHeaders = withoutCredentials(sendHeaders, opts.credentialHeaders ?? []);
        url = next;
        if (status === 303 || ((status === 301 || status === 302) && method === 'POST')) {
          method = 'GET';
          body = undefined;
        }
        continue;
      }
      const limit = `${opts.maxBytes} bytes${opts.limitName ? ` (${opts.limitName})` : ''}`;
      const content = await readCapped(res, opts.maxBytes, 'the response', limit, `cannot read ${url.href}`);
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(', ') : v;
      return { status, headers, body: content, url: url.href };
    }
    throw new RemoteFetchError(`too many redirects requesting ${req.url}`);
  }
}
