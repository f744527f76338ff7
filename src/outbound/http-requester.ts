import type { HttpRequester, HttpRequestSpec, HttpResponse } from '../engine/types.js';
import { sendRemote } from '../files/remote-fetch.js';

export interface HttpRequestNodeConfig {
  /** `SSRF_ALLOW_HOSTS`: hosts that may resolve to private or loopback addresses. */
  readonly allowHosts: readonly string[];
  /** `HTTP_REQUEST_NODE_MAX_TEXT_SIZE` (bytes, default 1 MiB as Dify). */
  readonly maxResponseBytes: number;
  /** `HTTP_REQUEST_MAX_CONNECT_TIMEOUT` / `HTTP_REQUEST_MAX_READ_TIMEOUT` (seconds; node timeouts are capped to them). */
  readonly maxConnectTimeout: number;
  readonly maxReadTimeout: number;
}

/** The http-request node's port: requests go through the SSRF guard of src/files/remote-fetch.ts. */
export class GuardedHttpRequester implements HttpRequester {
  constructor(private readonly config: HttpRequestNodeConfig) {}

  async send(req: HttpRequestSpec, signal: AbortSignal): Promise<HttpResponse> {
    const c = this.config;
    const res = await sendRemote(
      { method: req.method, url: req.url, headers: req.headers, ...(req.body !== undefined ? { body: req.body } : {}) },
      {
        maxBytes: c.maxResponseBytes,
        limitName: 'HTTP_REQUEST_NODE_MAX_TEXT_SIZE',
        allowHosts: c.allowHosts,
        connectTimeoutMs: Math.min(req.timeouts.connect, c.maxConnectTimeout) * 1000,
        readTimeoutMs: Math.min(req.timeouts.read, c.maxReadTimeout) * 1000,
        credentialHeaders: req.credentialHeaders ?? [],
        signal,
      },
    );
    return { status: res.status, headers: res.headers, body: res.body.toString('utf8') };
  }
}
