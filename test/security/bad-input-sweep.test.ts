/**
 * The bad-input sweep: every operation of Dify's OpenAPI document, driven with wrong types, missing
 * required fields, huge and NUL-containing strings, bad UUIDs, wrong content types and broken
 * multipart bodies. Every answer must be below 500, every error in the `{code, message, status}`
 * envelope, a 400 caused by one field must name it, and `/health` must answer throughout.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { PROJECT_ROOT } from '../helpers/fixtures.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { endNode, startNode, workflowDsl } from '../helpers/workflow-dsl.js';
import { completionApp } from '../helpers/apps.js';

type Json = Record<string, unknown>;
const spec = JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'test', 'fixtures', 'dify-openapi', 'openapi_service.json'), 'utf8')) as Json;
const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;
// One 200 KB run of letters: the input that made token counting quadratic (token-stall.test.ts).
const HUGE = 'h'.repeat(200_000);
const NUL = 'a\u0000b';

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Follows `$ref`s (and the first branch of allOf/anyOf/oneOf) to a concrete schema; bounded depth. */
function resolve(schema: unknown, depth = 0): Json {
  if (!isObject(schema) || depth > 20) return {};
  if (typeof schema.$ref === 'string') {
    let node: unknown = spec;
    for (const p of schema.$ref.replace(/^#\//, '').split('/')) node = isObject(node) ? node[p] : undefined;
    return resolve(node, depth + 1);
  }
  for (const k of ['allOf', 'anyOf', 'oneOf'] as const) {
    const list = schema[k];
    if (Array.isArray(list) && list.length > 0 && !schema.type && !schema.properties) {
      if (k === 'allOf') return list.reduce<Json>((acc, s) => { const r = resolve(s, depth + 1); return { ...acc, ...r, properties: { ...(acc.properties as Json), ...(r.properties as Json) }, required: [...((acc.required as string[]) ?? []), ...((r.required as string[]) ?? [])] }; }, {});
      return resolve(list[0], depth + 1);
    }
  }
  return schema;
}

/** A plausible value for a schema (its example, default or first enum value, else by type). */
function sample(raw: unknown, depth = 0): unknown {
  const s = resolve(raw);
  if (s.example !== undefined) return s.example;
  if (s.default !== undefined) return s.default;
  if (Array.isArray(s.enum) && s.enum.length > 0) return s.enum[0];
  if (depth > 4) return null;
  switch (s.type) {
    case 'object': {
      const out: Json = {};
      const props = (s.properties ?? {}) as Json;
      for (const name of (s.required as string[] | undefined) ?? []) out[name] = sample(props[name], depth + 1);
      return out;
    }
    case 'array': return s.items ? [sample(s.items, depth + 1)] : [];
    case 'integer': return 1;
    case 'number': return 0.5;
    case 'boolean': return true;
    case 'string': return s.format === 'uuid' ? randomUUID() : 'x';
    default: return 'x';
  }
}

/** A value of another JSON type than the schema asks for. */
function wrongType(raw: unknown): unknown {
  const s = resolve(raw);
  switch (s.type) {
    case 'string': return { not: 'a string' };
    case 'integer':
    case 'number': return 'not-a-number';
    case 'boolean': return 'maybe';
    case 'array': return { not: 'an array' };
    case 'object': return 'not-an-object';
    default: return [[{ deep: true }]];
  }
}

interface Case {
  readonly name: string;
  readonly method: string;
  readonly path: string;
  readonly query?: string;
  readonly contentType?: string;
  readonly body?: string;
  /** The field a 400 must name. */
  readonly field?: string;
}

interface Op {
  readonly method: string;
  readonly apiPath: string;
  readonly op: Json;
}

const ops: Op[] = Object.entries(spec.paths as Json).flatMap(([apiPath, item]) =>
  METHODS.filter((m) => isObject((item as Json)[m])).map((m) => ({ method: m.toUpperCase(), apiPath, op: (item as Json)[m] as Json })),
);

let s: TestServer;
const keys: Record<'chat' | 'workflow' | 'completion' | 'dataset', string> = { chat: '', workflow: '', completion: '', dataset: '' };
let datasetId = '';

beforeAll(async () => {
  s = await startServer();
  keys.chat = (await s.importApp(readFileSync(path.join(PROJECT_ROOT, 'examples', 'chat-helper.yml'), 'utf8'))).apiKey;
  keys.workflow = (await s.importApp(workflowDsl([startNode([]), endNode({})], [['start', 'end']]))).apiKey;
  keys.completion = (await s.importApp(completionApp({ provider: 'mock', model: 'mock' }))).apiKey;
  keys.dataset = await s.datasetKey();
  const r = await fetch(`${s.api}/datasets`, { method: 'POST', headers: { authorization: `Bearer ${keys.dataset}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'sweep', indexing_technique: 'economy' }) });
  datasetId = (await r.json()).id;
});
afterAll(async () => {
  await s?.close();
});

function keyFor(apiPath: string): string {
  if (apiPath.startsWith('/datasets') || apiPath.startsWith('/workspaces')) return keys.dataset;
  if (apiPath.startsWith('/workflow') || apiPath.startsWith('/form')) return keys.workflow;
  if (apiPath.startsWith('/completion')) return keys.completion;
  return keys.chat;
}

function params(op: Json, where: 'path' | 'query'): Json[] {
  return ((op.parameters as unknown[]) ?? []).map((p) => resolve(p)).filter((p) => p.in === where);
}

/** The path with every parameter filled: the real dataset for `dataset_id` (not for DELETE), else a random UUID. */
function fillPath(o: Op, override: Record<string, string> = {}): string {
  return o.apiPath.replace(/\{(\w+)\}/g, (_m, name: string) => {
    if (name in override) return override[name]!;
    if (name === 'dataset_id' && o.method !== 'DELETE') return datasetId;
    if (name === 'action') return 'enable';
    if (name === 'model_type') return 'text-embedding';
    return randomUUID();
  });
}

function baseQuery(o: Op): Record<string, string> {
  const q: Record<string, string> = {};
  for (const p of params(o.op, 'query')) if (p.required) q[p.name as string] = p.name === 'user' ? 'sweeper' : String(sample(p.schema));
  if (params(o.op, 'query').some((p) => p.name === 'user')) q.user = 'sweeper';
  return q;
}

function jsonBodySchema(op: Json): Json | undefined {
  const content = (op.requestBody as Json | undefined)?.content as Json | undefined;
  const media = content?.['application/json'] as Json | undefined;
  return media ? resolve(media.schema) : undefined;
}

function isMultipart(op: Json): boolean {
  const content = (op.requestBody as Json | undefined)?.content as Json | undefined;
  return !!content?.['multipart/form-data'];
}

function baseBody(op: Json, schema: Json): Json {
  const body = (sample(schema) ?? {}) as Json;
  const props = (schema.properties ?? {}) as Json;
  if ('user' in props) body.user = 'sweeper';
  if ('response_mode' in props) body.response_mode = 'blocking';
  if ('indexing_technique' in props) body.indexing_technique = 'economy';
  if ('inputs' in props && !isObject(body.inputs)) body.inputs = {};
  return body;
}

function casesFor(o: Op): Case[] {
  const out: Case[] = [];
  // First the request as valid as the document lets us build it: its answer decides whether a
  // 400 of a mutated request can be blamed on the mutated field.
  const q = (extra: Record<string, string> = {}) => new URLSearchParams({ ...baseQuery(o), ...extra }).toString();
  const schema = jsonBodySchema(o.op);
  const base = schema ? baseBody(o.op, schema) : undefined;
  const withBody = (body: unknown, extra: Partial<Case>): Case => ({ name: '', method: o.method, path: fillPath(o), query: q(), contentType: 'application/json', body: JSON.stringify(body), ...extra });
  const plain = base ? withBody(base, {}) : { name: '', method: o.method, path: fillPath(o), query: q() };
  out.push({ ...plain, name: 'baseline' });

  // Path parameters: a bad UUID, NUL, the longest accepted length, non-ASCII.
  for (const p of params(o.op, 'path')) {
    const name = p.name as string;
    for (const [label, v] of [['bad uuid', 'not-a-uuid'], ['NUL', encodeURIComponent(NUL)], ['100 chars', 'x'.repeat(100)], ['unicode', encodeURIComponent('ü💥')]] as const) {
      out.push({ ...plain, name: `path ${name}: ${label}`, path: fillPath(o, { [name]: v }) });
    }
  }
  // Query parameters: wrong type, huge (within the header limit), NUL, bad UUID.
  for (const p of params(o.op, 'query')) {
    const name = p.name as string;
    const t = resolve(p.schema).type;
    const variants: [string, string][] = [['huge', 'q'.repeat(8000)], ['NUL', NUL]];
    if (t === 'integer' || t === 'number' || t === 'boolean') variants.push(['wrong type', 'abc']);
    if (/_id$|^id$/.test(name)) variants.push(['bad uuid', 'not-a-uuid']);
    for (const [label, v] of variants) out.push({ ...plain, name: `query ${name}: ${label}`, query: q({ [name]: v }), field: label === 'wrong type' ? name : undefined });
  }
  if (schema && base) {
    const props = (schema.properties ?? {}) as Json;
    for (const [name, ps] of Object.entries(props)) {
      const t = resolve(ps).type;
      out.push(withBody({ ...base, [name]: wrongType(ps) }, { name: `body ${name}: wrong type`, field: name }));
      if (t === 'string' || t === undefined) {
        out.push(withBody({ ...base, [name]: HUGE }, { name: `body ${name}: huge string` }));
        out.push(withBody({ ...base, [name]: NUL }, { name: `body ${name}: NUL string` }));
      }
      if (/_id$|^id$/.test(name)) out.push(withBody({ ...base, [name]: 'not-a-uuid' }, { name: `body ${name}: bad uuid` }));
    }
    for (const name of (schema.required as string[] | undefined) ?? []) {
      const { [name]: _drop, ...rest } = base;
      out.push(withBody(rest, { name: `body ${name}: missing`, field: name }));
    }
    for (const [label, body] of [['array', '[]'], ['string', '"text"'], ['null', 'null'], ['truncated JSON', '{"a":'], ['empty', '']] as const) {
      out.push({ ...plain, name: `body: ${label}`, body });
    }
    out.push({ ...plain, name: 'body: text/plain content type', contentType: 'text/plain', body: JSON.stringify(base) });
    out.push({ ...plain, name: 'body: form-urlencoded content type', contentType: 'application/x-www-form-urlencoded', body: 'a=1' });
  }
  if (isMultipart(o.op)) {
    const part = `--XYZ\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\nContent-Type: text/plain\r\n\r\nhello`;
    out.push({ ...plain, name: 'multipart: JSON instead', contentType: 'application/json', body: '{}' });
    out.push({ ...plain, name: 'multipart: empty form', contentType: 'multipart/form-data; boundary=XYZ', body: '--XYZ--\r\n' });
    out.push({ ...plain, name: 'multipart: text part only', contentType: 'multipart/form-data; boundary=XYZ', body: '--XYZ\r\nContent-Disposition: form-data; name="user"\r\n\r\nsweeper\r\n--XYZ--\r\n' });
    out.push({ ...plain, name: 'multipart: no boundary', contentType: 'multipart/form-data', body: `${part}\r\n--XYZ--\r\n` });
    out.push({ ...plain, name: 'multipart: truncated, no closing boundary', contentType: 'multipart/form-data; boundary=XYZ', body: part });
  }
  return out;
}

interface Finding {
  readonly op: string;
  readonly name: string;
  readonly status: number;
  readonly problem: string;
  readonly body: string;
}

async function send(c: Case): Promise<{ status: number; text: string; type: string }> {
  const headers: Record<string, string> = { authorization: `Bearer ${keyFor(c.path.replace(/^\/v1/, ''))}` };
  if (c.contentType) headers['content-type'] = c.contentType;
  const hasBody = c.body !== undefined && c.method !== 'GET';
  if (process.env.SWEEP_TRACE) process.stderr.write(`${c.method} ${c.path.slice(0, 120)} — ${c.name}\n`);
  // A request left unanswered is a finding, not a hung suite.
  const signal = AbortSignal.timeout(60_000);
  try {
    const r = await fetch(`${s.api}${c.path}${c.query ? `?${c.query}` : ''}`, { method: c.method, headers, signal, ...(hasBody ? { body: c.body } : {}) });
    return { status: r.status, text: await r.text(), type: r.headers.get('content-type') ?? '' };
  } catch (err) {
    return { status: 0, text: `no answer: ${(err as Error).message}`, type: '' };
  }
}

function check(c: Case, r: { status: number; text: string; type: string }, baselineStatus: number): string | undefined {
  if (r.status === 0) return r.text;
  if (r.status >= 500) return `answered ${r.status}`;
  if (r.status < 400) return undefined;
  let body: unknown;
  try {
    body = JSON.parse(r.text);
  } catch {
    return 'error body is not JSON';
  }
  if (!isObject(body) || Object.keys(body).sort().join() !== 'code,message,status') return 'error body is not {code, message, status}';
  if (body.status !== r.status || typeof body.code !== 'string' || typeof body.message !== 'string') return 'envelope fields disagree with the response';
  if (r.text.length > 2000) return `error body is ${r.text.length} bytes (echoes the value?)`;
  // Dify's own messages spell fields as words ("Tag IDs is required."): compare letters only.
  const letters = (t: string) => t.toLowerCase().replace(/[^a-z0-9]/g, '');
  if (c.field && baselineStatus !== 400 && r.status === 400 && !letters(body.message as string).includes(letters(c.field))) return `400 message does not name ${c.field}`;
  return undefined;
}

describe('bad-input sweep over every operation of the OpenAPI document', () => {
  it('covers every operation of the document', () => {
    expect(ops.length).toBeGreaterThanOrEqual(80);
  });

  it('never answers 5xx, always the envelope, names the field, and /health answers throughout', { timeout: 600_000 }, async () => {
    const findings: Finding[] = [];
    let sent = 0;
    for (const o of ops) {
      let baselineStatus = 0;
      for (const c of casesFor(o)) {
        const r = await send(c);
        sent += 1;
        if (c.name === 'baseline') baselineStatus = r.status;
        const problem = check(c, r, baselineStatus);
        if (problem) findings.push({ op: `${o.method} ${o.apiPath}`, name: c.name, status: r.status, problem, body: r.text.slice(0, 200) });
      }
      const health = await fetch(`${s.url}/health`);
      expect(health.status, `/health after ${o.method} ${o.apiPath}`).toBe(200);
    }
    expect(sent).toBeGreaterThan(1000);
    expect(findings).toEqual([]);
  });
});
