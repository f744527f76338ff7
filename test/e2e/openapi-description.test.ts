import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Ajv } from 'ajv';
import { startServer, type TestServer } from '../helpers/server.js';
import { PROJECT_ROOT } from '../helpers/fixtures.js';

type Json = Record<string, unknown>;
type Operation = { parameters?: { name: string; in: string }[]; requestBody?: { content?: Record<string, { schema?: Json }> } };

const DIFY = JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'test', 'fixtures', 'dify-openapi', 'openapi_service.json'), 'utf8')) as {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Json> };
};
const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

let s: TestServer;
let doc: { openapi: string; paths: Record<string, Record<string, Operation>>; components?: Json };

beforeAll(async () => {
  s = await startServer();
  const r = await fetch(`${s.api}/openapi.json`);
  expect(r.status).toBe(200);
  doc = await r.json();
});
afterAll(async () => {
  await s?.close();
});

/** Resolves a local `$ref` in Dify's document (one level is enough for request bodies). */
function deref(schema: Json | undefined, root: { components: { schemas: Record<string, Json> } }): Json {
  if (!schema) return {};
  const ref = schema.$ref;
  if (typeof ref === 'string') return deref(root.components.schemas[ref.split('/').at(-1)!], root);
  return schema;
}

/** The property names of a request body schema (through `$ref` and `allOf`). */
function bodyProperties(op: Operation, root: { components: { schemas: Record<string, Json> } }): { props: Set<string>; type: string | undefined } {
  const content = op.requestBody?.content ?? {};
  const [type, media] = Object.entries(content)[0] ?? [];
  const props = new Set<string>();
  const walk = (raw: Json | undefined) => {
    const sch = deref(raw, root);
    for (const k of Object.keys((sch.properties as Json | undefined) ?? {})) props.add(k);
    for (const part of (sch.allOf as Json[] | undefined) ?? []) walk(part);
  };
  walk(media?.schema);
  return { props, type };
}

/** Operations as `METHOD /path` (Dify's paths are relative to `/v1`: `prefix` strips ours to match). */
function operations(paths: Record<string, Record<string, Operation>>, prefix = ''): Map<string, Operation> {
  const out = new Map<string, Operation>();
  for (const [p, item] of Object.entries(paths)) {
    if (!p.startsWith(prefix)) continue;
    for (const m of METHODS) if (item[m]) out.set(`${m.toUpperCase()} ${p.slice(prefix.length)}`, item[m]!);
  }
  return out;
}

/** What an operation of ours lacks against Dify's: parameter names, request body media type and properties. */
function problemsOf(ours: Map<string, Operation>, theirs: Map<string, Operation>, ourRoot: { components: { schemas: Record<string, Json> } }): string[] {
  const problems: string[] = [];
  for (const key of [...theirs.keys()].filter((k) => ours.has(k))) {
    const a = ours.get(key)!;
    const b = theirs.get(key)!;
    const names = (op: Operation, where: string) => new Set((op.parameters ?? []).filter((p) => p.in === where).map((p) => p.name));
    for (const where of ['path', 'query']) {
      const mine = names(a, where);
      for (const n of names(b, where)) if (!mine.has(n)) problems.push(`${key}: ${where} parameter ${n} is missing`);
    }
    const theirBody = bodyProperties(b, DIFY);
    if (!theirBody.type) continue;
    const ourBody = bodyProperties(a, ourRoot);
    if (!ourBody.type) problems.push(`${key}: no request body (Dify: ${theirBody.type})`);
    else {
      if (ourBody.type !== theirBody.type) problems.push(`${key}: request body is ${ourBody.type}, Dify's ${theirBody.type}`);
      for (const p of theirBody.props) if (!ourBody.props.has(p)) problems.push(`${key}: request body property ${p} is missing`);
    }
  }
  return problems;
}

describe('GET /v1/openapi.json', () => {
  it('is an OpenAPI 3.1 document that Ajv compiles (every schema in it is valid JSON Schema)', () => {
    expect(doc.openapi).toBe('3.1.0');
    const ajv = new Ajv({ strict: false });
    for (const [key, op] of operations(doc.paths)) {
      for (const media of Object.values(op.requestBody?.content ?? {})) expect(() => ajv.compile(media.schema ?? {}), key).not.toThrow();
    }
  });

  it('describes every operation Dify\'s description has that Dovetail serves, with the same parameter names and compatible bodies', () => {
    const ours = operations(doc.paths, '/v1');
    const theirs = operations(DIFY.paths);
    // Dovetail serves nearly all of Dify's operations (the rest are listed below)
    expect([...theirs.keys()].filter((k) => ours.has(k)).length).toBeGreaterThan(50);
    const problems = problemsOf(ours, theirs, doc as never);
    expect(problems).toEqual([]);
  });

  it('Dovetail serves every Dify operation (82 of 82), plus a few of its own', () => {
    const theirs = operations(DIFY.paths);
    const ours = operations(doc.paths, '/v1');
    expect(theirs.size).toBe(82);
    expect([...theirs.keys()].filter((k) => !ours.has(k)).sort()).toEqual([]);
    // Dify's underscore aliases and the indexing pause/resume routes (served by Dify, not in its
    // description), and Dovetail's OpenAI-compatible extension
    expect([...ours.keys()].filter((k) => !theirs.has(k)).sort()).toEqual([
      'GET /models',
      'PATCH /datasets/{dataset_id}/documents/{document_id}/processing/pause',
      'PATCH /datasets/{dataset_id}/documents/{document_id}/processing/resume',
      'POST /chat/completions',
      'POST /datasets/{dataset_id}/document/create_by_file',
      'POST /datasets/{dataset_id}/document/create_by_text',
      'POST /datasets/{dataset_id}/documents/{document_id}/update_by_file',
      'POST /datasets/{dataset_id}/documents/{document_id}/update_by_text',
    ]);
    // the description itself and the page are not operations of the API
    expect(Object.keys(doc.paths).filter((p) => p.startsWith('/docs') || p === '/v1/openapi.json')).toEqual([]);
  });

  it('the comparison catches a missing parameter, body and body property (so the check above can fail)', () => {
    const ours = new Map<string, Operation>([
      ['GET /datasets', { parameters: [{ name: 'page', in: 'query' }] }],
      ['POST /datasets', { requestBody: { content: { 'application/json': { schema: { properties: { name: {} } } } } } }],
      ['POST /datasets/tags', {}],
    ]);
    const problems = problemsOf(ours, operations(DIFY.paths), { components: { schemas: {} } });
    expect(problems).toContain('GET /datasets: query parameter limit is missing');
    expect(problems).toContain('POST /datasets: request body property indexing_technique is missing');
    expect(problems).toContain('POST /datasets/tags: no request body (Dify: application/json)');
  });
});

describe('/docs reads like Dify\'s reference', () => {
  type Described = Operation & { tags?: string[]; summary?: string; description?: string; responses?: Record<string, { $ref?: string; content?: Record<string, { schema?: Json }> }> };
  const ops = () => operations(doc.paths as Record<string, Record<string, Operation>>) as Map<string, Described>;

  it("groups every operation under Dify's tags, with Dify's summaries where Dify describes the operation", () => {
    const tagNames = ((doc as { tags?: { name: string }[] }).tags ?? []).map((t) => t.name);
    expect(tagNames.slice(0, 3)).toEqual(['Chat Messages', 'Files', 'End Users']);
    expect(ops().get('POST /v1/chat-messages')).toMatchObject({ tags: ['Chat Messages'], summary: 'Send Chat Message' });
    expect(ops().get('POST /v1/workflows/run')).toMatchObject({ tags: ['Workflow Runs'] });
    expect(ops().get('POST /v1/datasets')).toMatchObject({ tags: ['Knowledge Bases'] });
    // every operation has a tag that the document lists
    expect([...ops()].filter(([, op]) => !op.tags?.length || !tagNames.includes(op.tags[0]!)).map(([k]) => k)).toEqual([]);
    // every operation Dify describes has its summary
    const theirs = operations(DIFY.paths) as Map<string, Described>;
    const missing = [...ops()].filter(([k, op]) => k.includes(' /v1/') && theirs.has(k.replace(' /v1/', ' /')) && !op.summary).map(([k]) => k);
    expect(missing).toEqual([]);
  });

  it("gives every operation Dify describes Dify's success responses, with Dify's schemas (examples left out)", () => {
    type Responses = Record<string, { content?: Record<string, { schema?: Json }> }>;
    // Dify's schema without its examples, in OpenAPI 3.1's terms (3.0's `nullable: true` is a `null` type)
    const noExamples = (x: unknown): unknown => {
      if (Array.isArray(x)) return x.map(noExamples);
      if (!x || typeof x !== 'object') return x;
      const { nullable, ...rest } = x as Json;
      const out = Object.fromEntries(Object.entries(rest).filter(([k]) => k !== 'examples' && k !== 'example').map(([k, v]) => [k, noExamples(v)]));
      // keywords beside a $ref (Dify's descriptions) are kept around an allOf
      if (typeof out.$ref === 'string' && Object.keys(out).length > 1) {
        const { $ref, ...others } = out;
        return { ...others, allOf: [{ $ref }] };
      }
      if (nullable === true && typeof out.type === 'string') out.type = [out.type, 'null'];
      return out;
    };
    const difyResponses = DIFY as unknown as { components: { responses: Record<string, Responses[string]> } };
    const problems: string[] = [];
    const refs = new Set<string>();
    const collect = (x: unknown): void => {
      if (Array.isArray(x)) x.forEach(collect);
      else if (x && typeof x === 'object') {
        const ref = (x as Json).$ref;
        if (typeof ref === 'string') refs.add(ref);
        Object.values(x).forEach(collect);
      }
    };
    const theirs = operations(DIFY.paths) as Map<string, Described>;
    let withSchema = 0;
    for (const [key, op] of ops()) {
      const their = key.includes(' /v1/') ? theirs.get(key.replace(' /v1/', ' /')) : undefined;
      if (!their) continue;
      for (const [code, raw] of Object.entries(their.responses ?? {}).filter(([c]) => /^2/.test(c))) {
        const ref = (raw as Json).$ref;
        const expected = (typeof ref === 'string' ? difyResponses.components.responses[ref.split('/').at(-1)!] : raw) as Responses[string];
        const mine = op.responses?.[code];
        if (!mine) {
          problems.push(`${key}: no ${code} response`);
          continue;
        }
        for (const [media, { schema }] of Object.entries(expected.content ?? {})) {
          const got = mine.content?.[media]?.schema;
          if (!got) problems.push(`${key}: ${code} ${media} has no schema`);
          else if (media === 'text/event-stream') {
            // Dify's, with the event types Dovetail sends added to its description
            const { description, ...rest } = got as Json;
            const { description: theirText, ...theirRest } = noExamples(schema) as Json;
            expect(rest, key).toEqual(theirRest);
            expect(String(description).startsWith(String(theirText ?? '')), key).toBe(true);
          } else expect(got, `${key} ${code} ${media}`).toEqual(noExamples(schema));
          collect(got);
          if (got) withSchema++;
        }
      }
    }
    expect(problems).toEqual([]);
    expect(withSchema).toBeGreaterThan(60);
    // every schema they refer to is in the document, as Dify's description has it (and what it refers to)
    const schemas = (doc.components?.schemas ?? {}) as Record<string, Json>;
    for (let seen = 0; seen !== refs.size; ) {
      seen = refs.size;
      for (const ref of [...refs]) collect(schemas[ref.split('/').at(-1)!]);
    }
    for (const ref of refs) {
      const name = ref.split('/').at(-1)!;
      expect(ref, name).toBe(`#/components/schemas/${name}`);
      expect(schemas[name], name).toEqual(noExamples(DIFY.components.schemas[name]));
    }
    expect(ops().get('POST /v1/chat-messages')?.responses?.['200']?.content?.['application/json']?.schema).toEqual({ $ref: '#/components/schemas/ChatCompletionResponse' });
  });

  it('describes the event types of the streaming operations as their text/event-stream answer', () => {
    for (const [key, events] of [
      ['POST /v1/chat-messages', ['message', 'message_end', 'workflow_finished', 'ping', 'error']],
      ['POST /v1/completion-messages', ['message', 'message_end', 'error']],
      ['POST /v1/workflows/run', ['workflow_started', 'node_finished', 'text_chunk', 'workflow_paused', 'workflow_finished']],
    ] as const) {
      const stream = ops().get(key)?.responses?.['200']?.content?.['text/event-stream']?.schema as { description?: string } | undefined;
      expect(stream?.description, key).toBeDefined();
      for (const e of events) expect(stream!.description, `${key} ${e}`).toContain(`\`${e}\``);
    }
  });

  it("hides the form page's own assets; / links to /docs and the form pages; an unknown path is still a JSON 404", async () => {
    expect(Object.keys(doc.paths).filter((p) => p.startsWith('/form/-/'))).toEqual([]);
    const origin = s.api.replace(/\/v1$/, '');
    const json = await fetch(`${origin}/`);
    expect(json.status).toBe(200);
    const index = (await json.json()) as { links: { href: string }[] };
    expect(index.links.map((l) => l.href)).toEqual(expect.arrayContaining(['/docs', '/v1/openapi.json', '/form/{token}']));
    const html = await fetch(`${origin}/`, { headers: { accept: 'text/html' } });
    expect(html.headers.get('content-type')).toMatch(/^text\/html/);
    // a page for people: the strict policy of the form page (nothing inline, nothing from elsewhere)
    expect(html.headers.get('content-security-policy')).toContain("default-src 'none'");
    expect(await html.text()).toContain('<a href="/docs">');
    const unknown = await fetch(`${origin}/no-such-page`);
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ code: 'not_found', status: 404 });
  });
});
