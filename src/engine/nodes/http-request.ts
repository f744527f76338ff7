import { NodeFailure, type GraphNode, type NodeContext, type NodeHandler } from '../types.js';
import { isObject } from './shared.js';

const METHODS = ['get', 'post', 'put', 'patch', 'delete', 'head', 'options'] as const;
const BODY_TYPES = ['none', 'json', 'raw-text', 'x-www-form-urlencoded', 'form-data'] as const;
type BodyType = (typeof BODY_TYPES)[number];

interface Spec {
  readonly method: string;
  readonly url: string;
  readonly headers: string;
  readonly params: string;
  readonly bodyType: BodyType;
  /** `[{key, type, value}]` (new DSL) or a plain string (old DSL). */
  readonly bodyData: unknown;
  readonly auth: { type: 'no-auth' } | { type: 'api-key'; keyType: string; apiKey: string; header: string };
  readonly timeouts: { connect: number; read: number; write: number };
}

function specOf(node: GraphNode): Spec {
  const d = node.data;
  const method = typeof d.method === 'string' ? d.method.toLowerCase() : '';
  if (!(METHODS as readonly string[]).includes(method)) throw new Error(`method "${String(d.method)}" is not supported (supported: ${METHODS.join(', ')})`);
  if (typeof d.url !== 'string' || d.url.trim() === '') throw new Error('url must be a non-empty string');
  for (const f of ['headers', 'params'] as const) if (d[f] !== undefined && d[f] !== null && typeof d[f] !== 'string') throw new Error(`${f} must be a string of "key:value" lines`);
  const body = d.body ?? { type: 'none' };
  if (!isObject(body)) throw new Error('body must be a mapping with type and data');
  const bodyType = body.type ?? 'none';
  if (typeof bodyType !== 'string' || !(BODY_TYPES as readonly string[]).includes(bodyType)) {
    throw new Error(`body.type "${String(bodyType)}" is not supported (supported: ${BODY_TYPES.join(', ')})`);
  }
  if (Array.isArray(body.data) && body.data.some((x) => isObject(x) && x.type === 'file')) throw new Error('body.data: file fields are not supported');
  const a = d.authorization ?? { type: 'no-auth' };
  if (!isObject(a) || (a.type !== 'no-auth' && a.type !== 'api-key')) throw new Error('authorization.type must be "no-auth" or "api-key"');
  let auth: Spec['auth'] = { type: 'no-auth' };
  if (a.type === 'api-key') {
    const c = isObject(a.config) ? a.config : {};
    const keyType = typeof c.type === 'string' ? c.type : 'bearer';
    if (!['basic', 'bearer', 'custom'].includes(keyType)) throw new Error('authorization.config.type must be basic, bearer or custom');
    if (typeof c.api_key !== 'string' || c.api_key === '') throw new Error('authorization.config.api_key must be a non-empty string');
    const header = typeof c.header === 'string' && c.header ? c.header : 'Authorization';
    if (keyType === 'custom' && !(typeof c.header === 'string' && c.header)) throw new Error('authorization.config.header is required for a custom api-key');
    auth = { type: 'api-key', keyType, apiKey: c.api_key, header };
  }
  const t = isObject(d.timeout) ? d.timeout : {};
  const secs = (v: unknown, dflt: number) => (typeof v === 'number' && v > 0 ? v : dflt);
  return {
    method,
    url: d.url,
    headers: typeof d.headers === 'string' ? d.headers : '',
    params: typeof d.params === 'string' ? d.params : '',
    bodyType: bodyType as BodyType,
    bodyData: body.data,
    auth,
    timeouts: { connect: secs(t.connect, 10), read: secs(t.read, 60), write: secs(t.write, 20) },
  };
}

/** `key:value` lines (Dify's headers / params text), rendered. */
function pairs(ctx: NodeContext, text: string): [string, string][] {
  const out: [string, string][] = [];
  for (const line of ctx.pool.render(text).split('\n')) {
    if (!line.trim()) continue;
    const i = line.indexOf(':');
    const key = (i < 0 ? line : line.slice(0, i)).trim();
    if (key) out.push([key, i < 0 ? '' : line.slice(i + 1).trim()]);
  }
  return out;
}

function bodyText(ctx: NodeContext, data: unknown): string {
  if (typeof data === 'string') return ctx.pool.render(data);
  if (Array.isArray(data) && isObject(data[0])) return ctx.pool.render(String(data[0].value ?? ''));
  return '';
}

function formPairs(ctx: NodeContext, data: unknown): [string, string][] {
  if (typeof data === 'string') return pairs(ctx, data);
  if (!Array.isArray(data)) return [];
  return data.filter(isObject).filter((x) => typeof x.key === 'string' && x.key !== '').map((x) => [ctx.pool.render(String(x.key)), ctx.pool.render(String(x.value ?? ''))]);
}

/** Base64 of a UTF-8 string without I/O modules. */
function base64(s: string): string {
  let bin = '';
  for (const b of new TextEncoder().encode(s)) bin += String.fromCharCode(b);
  return btoa(bin);
}

/**
 * Dify's HTTP request node: renders url, headers, params and body templates, sends the request
 * through the HttpRequester port (the server's SSRF guard) and outputs `status_code`, `body`,
 * `headers`, `files` (always empty). A 4xx/5xx response succeeds unless the node has an error
 * strategy or retries configured (as Dify).
 */
export const httpRequestNode: NodeHandler = {
  validate(node) {
    specOf(node);
  },
  async run(ctx) {
    const spec = specOf(ctx.node);
    const http = ctx.ports.http;
    if (!http) throw new NodeFailure('no HTTP requester is configured on this server', 'HttpRequestNodeError', false);
    let url: URL;
    const rendered = ctx.pool.render(spec.url).trim();
    try {
      url = new URL(rendered);
    } catch {
      throw new NodeFailure(`Invalid URL: ${rendered || '(empty)'}`, 'InvalidURLError', false);
    }
    for (const [k, v] of pairs(ctx, spec.params)) url.searchParams.append(k, v);
    const headers: Record<string, string> = {};
    for (const [k, v] of pairs(ctx, spec.headers)) headers[k] = v;
    const has = (name: string) => Object.keys(headers).some((k) => k.toLowerCase() === name.toLowerCase());
    if (spec.auth.type === 'api-key') {
      const { keyType, apiKey, header } = spec.auth;
      headers[header] = keyType === 'bearer' ? `Bearer ${apiKey}` : keyType === 'basic' ? `Basic ${apiKey.includes(':') ? base64(apiKey) : apiKey}` : apiKey;
    }
    let body: string | undefined;
    switch (spec.bodyType) {
      case 'none':
        break;
      case 'json': {
        body = bodyText(ctx, spec.bodyData);
        try {
          JSON.parse(body);
        } catch (err) {
          throw new NodeFailure(`Failed to parse JSON body: ${(err as Error).message}`, 'RequestBodyError', false);
        }
        if (!has('content-type')) headers['Content-Type'] = 'application/json';
        break;
      }
      case 'raw-text':
        body = bodyText(ctx, spec.bodyData);
        if (!has('content-type')) headers['Content-Type'] = 'text/plain';
        break;
      case 'x-www-form-urlencoded':
        body = new URLSearchParams(formPairs(ctx, spec.bodyData)).toString();
        if (!has('content-type')) headers['Content-Type'] = 'application/x-www-form-urlencoded';
        break;
      case 'form-data': {
        const boundary = `----dovetail${ctx.ports.newId().replace(/-/g, '')}`;
        body = formPairs(ctx, spec.bodyData).map(([k, v]) => `--${boundary}\r\nContent-Disposition: form-data; name="${k.replace(/"/g, '%22')}"\r\n\r\n${v}\r\n`).join('') + `--${boundary}--\r\n`;
        headers['Content-Type'] = `multipart/form-data; boundary=${boundary}`;
        break;
      }
    }
    // The request as the run's events show it: the api key masked (as Dify's `to_log`).
    const shown = { ...headers };
    if (spec.auth.type === 'api-key') {
      const name = spec.auth.header.toLowerCase();
      for (const k of Object.keys(shown)) if (k.toLowerCase() === name) shown[k] = '*'.repeat(shown[k]!.length);
    }
    const inputs = { method: spec.method.toUpperCase(), url: url.href, headers: shown, ...(body !== undefined ? { body } : {}) };
    let res;
    try {
      const credentialHeaders = spec.auth.type === 'api-key' ? [spec.auth.header] : [];
      res = await http.send({ method: spec.method.toUpperCase(), url: url.href, headers, body, timeouts: spec.timeouts, credentialHeaders }, ctx.signal);
    } catch (err) {
      if (ctx.signal.aborted) throw err;
      throw new NodeFailure((err as Error).message || 'HTTP request failed', 'HttpRequestNodeError', true, { cause: err });
    }
    const outputs = { status_code: res.status, body: res.body, headers: { ...res.headers }, files: [] };
    const d = ctx.node.data;
    const strict = typeof d.error_strategy === 'string' || (isObject(d.retry_config) && d.retry_config.retry_enabled === true);
    if (strict && (res.status < 200 || res.status >= 300)) {
      throw new NodeFailure(`HTTP request failed with status code ${res.status}: ${res.body.slice(0, 200)}`, 'HTTPResponseCodeError', true);
    }
    return { type: 'succeeded', inputs: null, processData: { request: inputs }, outputs };
  },
};
