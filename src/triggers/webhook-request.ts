import { invalidParam } from '../infra/errors.js';
import type { WebhookConfig, WebhookData, WebhookParameter } from '../engine/nodes/trigger-webhook.js';

/**
 * A webhook request checked against its node, as Dify's `WebhookService.extract_and_validate_webhook_data`:
 * method and content type must be the node's; required headers must be there; query parameters
 * and form fields (strings on the wire) are converted to their declared type; JSON fields must
 * already have it. Undeclared fields pass as they came. Every failure is a 400 naming the field.
 */

/** The request as the route read it. */
export interface WebhookRequest {
  readonly method: string;
  readonly headers: Record<string, string>;
  readonly query: Record<string, string>;
  /** The Content-Type without parameters, lower-case ('' when absent). */
  readonly contentType: string;
  /** Parsed body: JSON object, form fields, or `{raw}` for text and octet-stream. */
  readonly body: Record<string, unknown>;
  /** Uploaded files of a multipart body, by field name (already stored). */
  readonly files: Record<string, unknown>;
}

const BOOLEANS: Readonly<Record<string, boolean>> = { true: true, false: false, '1': true, '0': false, yes: true, no: false };

/** Dify's `_convert_form_value`: a string as a string, number or boolean. */
function fromForm(name: string, value: unknown, type: WebhookParameter['type']): unknown {
  const text = typeof value === 'string' ? value : String(value);
  if (type === 'string') return text;
  if (type === 'number') {
    const n = text.trim() === '' ? Number.NaN : Number(text);
    if (!Number.isFinite(n)) throw invalidParam(`Parameter '${name}' validation failed: Cannot convert '${text}' to number`);
    return n;
  }
  if (type === 'boolean') {
    const b = BOOLEANS[text.toLowerCase()];
    if (b === undefined) throw invalidParam(`Parameter '${name}' validation failed: Cannot convert '${text}' to boolean`);
    return b;
  }
  throw invalidParam(`Parameter '${name}' validation failed: Unsupported type '${type}' for form data parameter '${name}'`);
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

const LABELS: Readonly<Record<string, string>> = {
  'array[string]': 'array of strings',
  'array[number]': 'array of numbers',
  'array[boolean]': 'array of booleans',
  'array[object]': 'array of objects',
};

function pyType(v: unknown): string {
  if (v === null) return 'NoneType';
  if (Array.isArray(v)) return 'list';
  if (typeof v === 'string') return 'str';
  if (typeof v === 'boolean') return 'bool';
  if (typeof v === 'number') return Number.isInteger(v) ? 'int' : 'float';
  return 'dict';
}

/** Dify's `_validate_json_value`: a JSON value must already be of its declared type. */
function fromJson(name: string, value: unknown, type: WebhookParameter['type']): unknown {
  const ok =
    type === 'string' ? typeof value === 'string'
    : type === 'number' ? typeof value === 'number' && Number.isFinite(value)
    : type === 'boolean' ? typeof value === 'boolean'
    : type === 'object' ? isPlainObject(value)
    : type === 'array[string]' ? Array.isArray(value) && value.every((x) => typeof x === 'string')
    : type === 'array[number]' ? Array.isArray(value) && value.every((x) => typeof x === 'number')
    : type === 'array[boolean]' ? Array.isArray(value) && value.every((x) => typeof x === 'boolean')
    : type === 'array[object]' ? Array.isArray(value) && value.every(isPlainObject)
    : true;
  if (!ok) throw invalidParam(`Parameter '${name}' validation failed: Expected ${LABELS[type] ?? type}, got ${pyType(value)}`);
  return value;
}

/** Dify's `_validate_http_metadata`: the call's method and content type must be the node's (no Content-Type reads as JSON). */
export function checkMethodAndType(cfg: WebhookConfig, method: string, contentType: string): void {
  if (method.toUpperCase() !== cfg.method.toUpperCase()) throw invalidParam(`HTTP method mismatch. Expected ${cfg.method.toUpperCase()}, got ${method.toUpperCase()}`);
  const type = contentType || 'application/json';
  if (type !== cfg.contentType) throw invalidParam(`Content-type mismatch. Expected ${cfg.contentType}, got ${type}`);
}

/** Checks `req` against the node and returns the run's `webhook_data`. */
export function checkWebhookRequest(cfg: WebhookConfig, req: WebhookRequest): WebhookData {
  checkMethodAndType(cfg, req.method, req.contentType);
  const method = req.method.toUpperCase();

  const lower = new Set(Object.keys(req.headers).map((k) => k.toLowerCase()));
  const sanitized = new Set([...lower].map((k) => k.replaceAll('-', '_')));
  for (const h of cfg.headers) {
    if (h.required && !lower.has(h.name.toLowerCase()) && !sanitized.has(h.name.toLowerCase().replaceAll('-', '_'))) throw invalidParam(`Required header missing: ${h.name}`);
  }

  const query: Record<string, unknown> = { ...req.query };
  for (const p of cfg.params) {
    if (!(p.name in req.query)) {
      if (p.required) throw invalidParam(`Required parameter missing: ${p.name}`);
      continue;
    }
    query[p.name] = fromForm(p.name, req.query[p.name], p.type);
  }

  let body: Record<string, unknown>;
  if (cfg.contentType === 'text/plain' || cfg.contentType === 'application/octet-stream') {
    const raw = req.body.raw;
    if (cfg.body.some((b) => b.required) && (raw === undefined || raw === null || raw === '')) throw invalidParam(`Required body content missing for ${cfg.contentType} request`);
    body = req.body;
  } else {
    const form = cfg.contentType !== 'application/json';
    body = { ...req.body };
    for (const b of cfg.body) {
      if (b.type === 'file') {
        if (b.required && !(b.name in req.files)) throw invalidParam(`Required file missing: ${b.name}`);
        continue;
      }
      if (!(b.name in req.body)) {
        if (b.required) throw invalidParam(`Required body parameter missing: ${b.name}`);
        continue;
      }
      body[b.name] = form ? fromForm(b.name, req.body[b.name], b.type) : fromJson(b.name, req.body[b.name], b.type);
    }
  }
  return { method, headers: req.headers, query_params: query, body, files: req.files };
}

/**
 * The answer's body (Dify's `generate_webhook_response`): the configured `response_body` with its
 * `{{#node.var#}}` references filled by `render`, parsed as JSON when it starts with `{` or `[`
 * (else `{"message": …}`); no body configured answers `{"status": "success", "message": "Webhook processed successfully"}`.
 */
export function webhookResponseBody(responseBody: string, render: (template: string) => string): unknown {
  if (!responseBody) return { status: 'success', message: 'Webhook processed successfully' };
  const text = render(responseBody);
  if (/^\s*[{[]/.test(text)) {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      return { message: text };
    }
  }
  return { message: text };
}
