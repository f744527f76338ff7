import type { HttpRequester, HttpRequestSpec, HttpResponse } from '../engine/types.js';
import { sendRemote } from '../files/remote-fetch.js';

export interface HttpRequestNodeConfig {
  /** `SSRF_ALLOW_HOSTS`: hosts that may resolve to private, loopback, reserved or this host's own addresses. */
  readonly allowHosts: readonly string[];
  /** `HTTP_REQUEST_NODE_MAX_TEXT_SIZE` (bytes, default 1 MiB as Dify). */
  readonly maxResponseBytes: number;
  /**
   * `HTTP_REQUEST_MAX_CONNECT_TIMEOUT` / `HTTP_REQUEST_MAX_READ_TIMEOUT` / `HTTP_REQUEST_MAX_WRITE_TIMEOUT`
   * (seconds, defaults 10 / 600 / 600 as Dify); a node's `timeout.connect|read|write` are capped to them.
   */
  readonly maxConnectTimeout: number;
  readonly maxReadTimeout: number;
  readonly maxWriteTimeout: number;
}

/**
 * The http-request node's port: requests go through the SSRF guard of src/files/remote-fetch.ts.
 * `timeout.read` bounds idle time between bytes, and connect + write + read (each capped) bound the
 * whole request, so an upstream that trickles one byte a second cannot hold a node open.
 */
export class GuardedHttpRequester implements HttpRequester {
  constructor(private readonly config: HttpRequestNodeConfig) {}

  async send(req: HttpRequestSpec, signal: AbortSignal): Promise<HttpResponse> {
    const c = this.config;
    const connect = Math.min(req.timeouts.connect, c.maxConnectTimeout);
    const read = Math.min(req.timeouts.read, c.maxReadTimeout);
    const write = Math.min(req.timeouts.write, c.maxWriteTimeout);
    const res = await sendRemote(
      { method: req.method, url: req.url, headers: req.headers, ...(req.body !== undefined ? { body: req.body } : {}) },
      {
        maxBytes: c.maxResponseBytes,
        limitName: 'HTTP_REQUEST_NODE_MAX_TEXT_SIZE',
        allowHosts: c.allowHosts,
        connectTimeoutMs: connect * 1000,
        readTimeoutMs: read * 1000,
        totalTimeoutMs: (connect + write + read) * 1000,
        totalTimeoutName: 'timeout.connect + timeout.write + timeout.read, capped by HTTP_REQUEST_MAX_CONNECT_TIMEOUT, HTTP_REQUEST_MAX_WRITE_TIMEOUT, HTTP_REQUEST_MAX_READ_TIMEOUT',
        credentialHeaders: req.credentialHeaders ?? [],
        signal,
      },
    );
    return { status: res.status, headers: res.headers, body: res.body.toString('utf8') };
  }
}
