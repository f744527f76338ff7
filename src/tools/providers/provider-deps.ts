import type { ToolHttp } from '../tool-http.js';
import type { ToolProviderSettings } from '../tool.js';

/** What an HTTP-backed provider is built from: the guarded HTTP client and its own settings. */
export interface ProviderDeps {
  readonly http: ToolHttp;
  readonly settings: ToolProviderSettings;
}

/** The base URL without trailing slashes. */
export const base = (url: string) => url.replace(/\/+$/, '');

export const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

export const str = (v: unknown) => (typeof v === 'string' ? v : v === undefined || v === null ? '' : String(v));
