import { RemoteFetchError, sendRemote } from '../files/remote-fetch.js';
import { ToolError } from './tool.js';

/** Outbound limits every tool request obeys (from config). */
export interface ToolHttpConfig {
  /** `SSRF_ALLOW_HOSTS`: hosts that may resolve to private or loopback addresses. */
  readonly allowHosts: readonly string[];
  /** `TOOL_REQUEST_TIMEOUT`, seconds (default 60): connect and idle-read timeout of one request. */
  readonly timeoutSeconds: number;
  /** `TOOL_RESPONSE_MAX_SIZE`, bytes (default 5 MiB): the largest response a tool reads. */
  readonly maxResponseBytes: number;
}

export interface ToolHttpRequest {
  readonly method?: string;
  readonly url: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string;
  /** Values that must never appear in an error (API keys); replaced by `***`. */
  readonly secrets?: readonly (string | undefined)[];
}

export interface ToolHttpResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly text: string;
  readonly url: string;
}

function scrub(message: string, secrets: readonly (string | undefined)[]): string {
  let out = message;
  for (const s of secrets) if (s) out = out.split(s).join('***').split(encodeURIComponent(s)).join('***');
  return out;
}

/**
 * HTTP for tools: every request goes through the SSRF guard (src/files/remote-fetch.ts) with the
 * tool timeouts and size limit; a non-2xx answer or a transport failure is a `ToolError` naming
 * the provider, with credentials scrubbed.
 */
export class ToolHttp {
  constructor(readonly config: ToolHttpConfig) {}

  async send(provider: string, req: ToolHttpRequest, signal: AbortSignal): Promise<ToolHttpResponse> {
    const secrets = req.secrets ?? [];
    try {
      const res = await sendRemote(
        { method: req.method ?? 'GET', url: req.url, headers: { 'user-agent': 'Dovetail', ...req.headers }, ...(req.body !== undefined ? { body: req.body } : {}) },
        {
          maxBytes: this.config.maxResponseBytes,
          limitName: 'TOOL_RESPONSE_MAX_SIZE',
          allowHosts: this.config.allowHosts,
          connectTimeoutMs: this.config.timeoutSeconds * 1000,
          readTimeoutMs: this.config.timeoutSeconds * 1000,
          credentialHeaders: ['authorization', 'x-api-key'],
          signal,
        },
      );
      const text = res.body.toString('utf8');
      if (res.status < 200 || res.status >= 300) {
        throw new ToolError(scrub(`${provider}: the upstream answered HTTP ${res.status}: ${text.slice(0, 300)}`, secrets));
      }
      return { status: res.status, headers: res.headers, text, url: res.url };
    } catch (err) {
      if (err instanceof ToolError) throw err;
      if (signal.aborted) throw err;
      const msg = err instanceof RemoteFetchError ? err.message : (err as Error).message;
      throw new ToolError(scrub(`${provider}: ${msg}`, secrets));
    }
  }

  /** `send`, then the body parsed as JSON (a `ToolError` when it is not JSON). */
  async json(provider: string, req: ToolHttpRequest, signal: AbortSignal): Promise<unknown> {
    const res = await this.send(provider, req, signal);
    try {
      return JSON.parse(res.text);
    } catch {
      throw new ToolError(`${provider}: the upstream answered with something that is not JSON: ${scrub(res.text.slice(0, 200), req.secrets ?? [])}`);
    }
  }
}
