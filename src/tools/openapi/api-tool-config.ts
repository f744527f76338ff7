import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ConfigError } from '../../config-error.js';
import { OpenApiError, parseOpenApi, readOpenApiText, type ApiDocument } from './openapi-parser.js';

/** Dify's ApiToolProvider credentials (`auth_type` and the `api_key_*` fields). */
export interface ApiToolCredentials {
  readonly authType: 'none' | 'api_key_header' | 'api_key_query';
  /** Header name (default `Authorization`). */
  readonly header: string;
  /** `bearer` → `Bearer KEY`, `basic` → `Basic KEY`, `custom` → `KEY`. */
  readonly headerPrefix: 'bearer' | 'basic' | 'custom';
  /** Query parameter name (default `key`). */
  readonly queryParam: string;
  readonly value: string | undefined;
}

/** One custom OpenAPI tool provider (`api_tools.NAME` in dovetail.yaml). */
export interface ApiToolProviderConfig {
  /** The provider's name, as Dify's `provider_name` of a tool node. */
  readonly name: string;
  /** Dify provider ids (`provider_id`) that mean this provider. */
  readonly providerIds: readonly string[];
  readonly document: ApiDocument;
  /** `server_url`, else the document's `servers[0].url`. */
  readonly serverUrl: string;
  readonly credentials: ApiToolCredentials;
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function oneOf<T extends string>(v: unknown, allowed: readonly T[], fallback: T, key: string): T {
  if (v === undefined || v === null || v === '') return fallback;
  if (!(allowed as readonly unknown[]).includes(v)) throw new ConfigError(`${key} must be one of ${allowed.join(', ')}, got "${String(v)}"`);
  return v as T;
}

function credentialsOf(raw: unknown, key: string): ApiToolCredentials {
  if (raw !== undefined && !isObj(raw)) throw new ConfigError(`${key} must be a mapping (auth_type, api_key_header, api_key_header_prefix, api_key_query_param, api_key_value)`);
  const c = raw ?? {};
  // Dify's older `api_key` auth type is the header one
  const authType = oneOf(c.auth_type === 'api_key' ? 'api_key_header' : c.auth_type, ['none', 'api_key_header', 'api_key_query'] as const, 'none', `${key}.auth_type`);
  const value = typeof c.api_key_value === 'string' && c.api_key_value !== '' ? c.api_key_value : undefined;
  if (authType !== 'none' && !value) throw new ConfigError(`${key}.api_key_value must be set when auth_type is ${authType}`);
  const header = typeof c.api_key_header === 'string' && c.api_key_header ? c.api_key_header : 'Authorization';
  if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(header)) throw new ConfigError(`${key}.api_key_header must be an HTTP header name, got "${header}"`);
  return {
    authType,
    header,
    headerPrefix: oneOf(c.api_key_header_prefix, ['bearer', 'basic', 'custom'] as const, 'custom', `${key}.api_key_header_prefix`),
    queryParam: typeof c.api_key_query_param === 'string' && c.api_key_query_param ? c.api_key_query_param : 'key',
    value,
  };
}

/**
 * Reads `api_tools` of dovetail.yaml: each entry an OpenAPI 3 document, inline (`schema`, a
 * mapping or YAML / JSON text) or in a file (`schema_file`, relative to the config file), with
 * Dify's credentials. A bad entry is a ConfigError naming it.
 */
export function readApiTools(file: Record<string, unknown>, configDir: string): ApiToolProviderConfig[] {
  const section = file.api_tools;
  if (section === undefined || section === null) return [];
  if (!isObj(section)) throw new ConfigError('api_tools must be a mapping of provider name to settings');
  return Object.entries(section).map(([name, raw]) => {
    const key = `api_tools.${name}`;
    if (!isObj(raw)) throw new ConfigError(`${key} must be a mapping (schema or schema_file, provider_ids, server_url, credentials)`);
    let document: ApiDocument;
    try {
      let doc: Record<string, unknown>;
      if (raw.schema !== undefined && raw.schema_file !== undefined) throw new OpenApiError('set schema or schema_file, not both');
      if (isObj(raw.schema)) doc = raw.schema;
      else if (typeof raw.schema === 'string') doc = readOpenApiText(raw.schema);
      else if (typeof raw.schema_file === 'string') {
        const p = path.resolve(configDir, raw.schema_file);
        let text: string;
        try {
          text = readFileSync(p, 'utf8');
        } catch (err) {
          throw new OpenApiError(`schema_file ${raw.schema_file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
        }
        doc = readOpenApiText(text);
      } else throw new OpenApiError('schema (the OpenAPI document) or schema_file (its path, relative to the config file) is required');
      document = parseOpenApi(doc);
    } catch (err) {
      if (err instanceof OpenApiError) throw new ConfigError(`${key}: ${err.message}`);
      throw err;
    }
    const serverUrl = typeof raw.server_url === 'string' && raw.server_url ? raw.server_url : document.serverUrl;
    if (!/^https?:\/\/[^\s]+$/.test(serverUrl)) throw new ConfigError(`${key}: the server URL must be an http(s) URL (server_url, or servers[0].url of the document), got "${serverUrl}"`);
    const ids = raw.provider_ids ?? [];
    if (!Array.isArray(ids) || !ids.every((x) => typeof x === 'string')) throw new ConfigError(`${key}.provider_ids must be a list of Dify provider ids`);
    return { name, providerIds: ids as string[], document, serverUrl: serverUrl.replace(/\/+$/, ''), credentials: credentialsOf(raw.credentials, `${key}.credentials`) };
  });
}
