import type { NodeHandler, NodeContext } from '../types.js';
import { isObject } from './shared.js';

/** Dify's `trigger-webhook` node (1.10): a run started by a call to `/triggers/webhook/{webhook_id}`. */

export const WEBHOOK_METHODS = ['get', 'post', 'head', 'patch', 'put', 'delete'] as const;
export const WEBHOOK_CONTENT_TYPES = ['application/json', 'multipart/form-data', 'application/x-www-form-urlencoded', 'text/plain', 'application/octet-stream'] as const;
/** Dify's `_WEBHOOK_ALLOWED_TYPES` (SegmentType values). */
export const WEBHOOK_VALUE_TYPES = ['string', 'number', 'boolean', 'object', 'array[string]', 'array[number]', 'array[boolean]', 'array[object]', 'file'] as const;

export type WebhookMethod = (typeof WEBHOOK_METHODS)[number];
export type WebhookContentType = (typeof WEBHOOK_CONTENT_TYPES)[number];
export type WebhookValueType = (typeof WEBHOOK_VALUE_TYPES)[number];

export interface WebhookParameter {
  readonly name: string;
  readonly type: WebhookValueType;
  readonly required: boolean;
}

/** The node's data as Dify's `WebhookData` reads it (defaults as Dify's). */
export interface WebhookConfig {
  readonly method: WebhookMethod;
  readonly contentType: WebhookContentType;
  readonly headers: readonly WebhookParameter[];
  readonly params: readonly WebhookParameter[];
  readonly body: readonly WebhookParameter[];
  /** Answer at once and run in the background (default, as Dify's editor), or wait for the run's outputs. */
  readonly asyncMode: boolean;
  readonly statusCode: number;
  /** The answer's body: JSON when it starts with `{` or `[`, else `{"message": …}`; `{{#node.var#}}` references are filled. */
  readonly responseBody: string;
  /** Seconds a waiting (not async) call waits for the run's outputs (Dify's `timeout`, default 30). */
  readonly timeoutSeconds: number;
}

/** The raw request a run of the node starts with (Dify's `webhook_data`), after the server checked it against the node. */
export interface WebhookData {
  readonly method: string;
  readonly headers: Record<string, string>;
  readonly query_params: Record<string, unknown>;
  readonly body: Record<string, unknown>;
  readonly files: Record<string, unknown>;
}

function parameters(v: unknown, field: string): WebhookParameter[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw new Error(`${field} must be a list`);
  return v.map((p, i) => {
    if (!isObject(p) || typeof p.name !== 'string' || p.name === '') throw new Error(`${field}[${i}].name must be a non-empty string`);
    const type = p.type === undefined || p.type === null ? 'string' : p.type;
    if (!(WEBHOOK_VALUE_TYPES as readonly unknown[]).includes(type)) {
      throw new Error(`${field}[${i}] (${p.name}) has type ${JSON.stringify(type)}; a webhook parameter is one of ${WEBHOOK_VALUE_TYPES.join(', ')}`);
    }
    return { name: p.name, type: type as WebhookValueType, required: p.required === true };
  });
}

/** Reads and checks the node's data; throws a message naming the field. */
export function webhookConfig(data: Readonly<Record<string, unknown>>): WebhookConfig {
  const method = typeof data.method === 'string' ? data.method.toLowerCase() : data.method === undefined ? 'get' : data.method;
  if (!(WEBHOOK_METHODS as readonly unknown[]).includes(method)) throw new Error(`method must be one of ${WEBHOOK_METHODS.join(', ')}, got ${JSON.stringify(data.method)}`);
  const contentType = typeof data.content_type === 'string' ? data.content_type.toLowerCase() : data.content_type === undefined ? 'application/json' : data.content_type;
  if (!(WEBHOOK_CONTENT_TYPES as readonly unknown[]).includes(contentType)) {
    throw new Error(`content_type must be one of ${WEBHOOK_CONTENT_TYPES.join(', ')}, got ${JSON.stringify(data.content_type)}`);
  }
  const headers = parameters(data.headers, 'headers');
  const params = parameters(data.params, 'params');
  const body = parameters(data.body, 'body');
  for (const p of params) if (p.type !== 'string' && p.type !== 'number' && p.type !== 'boolean') throw new Error(`params: ${p.name} has type ${p.type}; a query parameter is a string, number or boolean`);
  for (const p of body) {
    if (p.type === 'file' && contentType !== 'multipart/form-data' && contentType !== 'application/octet-stream') {
      throw new Error(`body: ${p.name} is a file, which only a multipart/form-data or application/octet-stream webhook receives`);
    }
  }
  const statusCode = data.status_code === undefined || data.status_code === null ? 200 : Number(data.status_code);
  if (!Number.isInteger(statusCode) || statusCode < 100 || statusCode > 599) throw new Error(`status_code must be an HTTP status between 100 and 599, got ${JSON.stringify(data.status_code)}`);
  if (data.response_body !== undefined && data.response_body !== null && typeof data.response_body !== 'string') throw new Error('response_body must be a string');
  const timeout = data.timeout === undefined || data.timeout === null ? 30 : Number(data.timeout);
  if (!Number.isFinite(timeout) || timeout <= 0) throw new Error(`timeout must be a positive number of seconds, got ${JSON.stringify(data.timeout)}`);
  return {
    method: method as WebhookMethod,
    contentType: contentType as WebhookContentType,
    headers,
    params,
    body,
    asyncMode: data.async_mode !== false,
    statusCode,
    responseBody: typeof data.response_body === 'string' ? data.response_body : '',
    timeoutSeconds: timeout,
  };
}

/** A header or parameter name as a variable name (Dify's `_sanitize_key`: `-` becomes `_`). */
export function sanitizedName(name: string): string {
  return name.replaceAll('-', '_');
}

function lookup(map: Record<string, unknown>, key: string): unknown {
  if (key in map) return map[key];
  const alternate = key.includes('-') ? key.replaceAll('-', '_') : key.replaceAll('_', '-');
  return alternate in map ? map[alternate] : undefined;
}

/**
 * The node's variables from the request (Dify's `_extract_configured_outputs`): each declared
 * header under its sanitized name (found case-insensitively), each declared query parameter and
 * body field under its name (the whole body for text/plain and octet-stream; the uploaded file for
 * a file field), and `_webhook_raw`, the whole request.
 */
export function webhookOutputs(cfg: WebhookConfig, data: WebhookData): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const lower: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(data.headers)) lower[k.toLowerCase()] = v;
  for (const h of cfg.headers) out[sanitizedName(h.name)] = lookup(data.headers, h.name) ?? lookup(lower, h.name.toLowerCase()) ?? null;
  for (const p of cfg.params) out[p.name] = data.query_params[p.name] ?? null;
  for (const b of cfg.body) {
    if (cfg.contentType === 'text/plain') out[b.name] = String(data.body.raw ?? '');
    else if (cfg.contentType === 'application/octet-stream') out[b.name] = data.body.raw ?? null;
    else if (b.type === 'file') out[b.name] = data.files[b.name] ?? null;
    else out[b.name] = data.body[b.name] ?? null;
  }
  out._webhook_raw = data;
  return out;
}

/** Dify's root nodes hand the system variables on as outputs named `sys.<name>`. */
export function systemOutputs(ctx: NodeContext): Record<string, unknown> {
  const sys = ctx.pool.toJSON().sys ?? {};
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(sys)) out[`sys.${k}`] = v;
  return out;
}

function isWebhookData(v: unknown): v is WebhookData {
  return isObject(v) && typeof v.method === 'string' && isObject(v.headers) && isObject(v.query_params) && isObject(v.body) && isObject(v.files);
}

export const triggerWebhookNode: NodeHandler = {
  validate(node) {
    webhookConfig(node.data);
  },
  async run(ctx) {
    const inputs = ctx.pool.toJSON()[ctx.node.id] ?? {};
    const raw = inputs.webhook_data;
    // a run started otherwise (the API's /workflows/run on a graph of triggers only) has no request: every variable is null
    const data: WebhookData = isWebhookData(raw) ? raw : { method: '', headers: {}, query_params: {}, body: {}, files: {} };
    const outputs = { ...webhookOutputs(webhookConfig(ctx.node.data), data), ...systemOutputs(ctx) };
    return { type: 'succeeded', inputs: { ...inputs }, outputs };
  },
};
