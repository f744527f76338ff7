import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.js';
import { readSse } from '../helpers/sse.js';
import { endNode, startNode, templateNode, workflowDsl } from '../helpers/workflow-dsl.js';

/**
 * template-transform nodes render a DSL's Jinja2 (nunjucks) inside QuickJS in a worker thread:
 * the known nunjucks escapes find no host there, and a runaway template ends at
 * CODE_EXECUTION_TIMEOUT while the server keeps serving.
 */
let s: TestServer;
const SECRET = 'sk-template-escape-test-secret';

beforeAll(async () => {
  process.env.OPENAI_API_KEY_TEMPLATE_TEST = SECRET;
  s = await startServer({ env: { CODE_EXECUTION_TIMEOUT: '3', TEMPLATE_TRANSFORM_MAX_LENGTH: '1000' } });
});
afterAll(async () => {
  delete process.env.OPENAI_API_KEY_TEMPLATE_TEST;
  await s?.close();
});

const headers = (key: string) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' });
const app = (template: string) => workflowDsl([startNode([{ variable: 'n', type: 'number', required: false }]), templateNode('t', template, { n: ['start', 'n'] }), endNode({ out: ['t', 'output'] })], [['start', 't'], ['t', 'end']]);

async function render(template: string, inputs: Record<string, unknown> = {}): Promise<{ status: string; outputs: { out?: string } | null; error: string | null }> {
  const { apiKey } = await s.importApp(app(template));
  const r = await fetch(`${s.api}/workflows/run`, { method: 'POST', headers: headers(apiKey), body: JSON.stringify({ inputs, response_mode: 'blocking', user: 'u' }) });
  expect(r.status).toBe(200);
  return (await r.json()).data;
}

describe('template-transform in the sandbox', () => {
  it('renders Jinja2 as before: loops, filters, the map filter, cycler and joiner', async () => {
    const d = await render('{% for i in range(0, n) %}{{ i }}{% endfor %}|{{ "ab" | upper }}|{{ [{"a": 1}, {"a": 2}] | map(attribute="a") | join(",") }}|{% set c = cycler("x", "y") %}{{ c.next() }}{{ c.next() }}', { n: 3 });
    expect(d).toMatchObject({ status: 'succeeded', outputs: { out: '012|AB|1,2|xy' } });
  });

  it.each([
    ['range.constructor', '{{ range.constructor("return typeof process + typeof require + typeof fetch")() }}', 'undefinedundefinedundefined'],
    ['constructor.constructor', '{{ "".constructor.constructor("return typeof process")() }}', 'undefined'],
    ['__proto__', '{{ "".__proto__.constructor.constructor("return typeof globalThis.process")() }}', 'undefined'],
    ['cycler', '{% set c = cycler(1) %}{{ c.next.constructor("return typeof process")() }}', 'undefined'],
    ['joiner', '{% set j = joiner() %}{{ j.constructor("return typeof console + typeof setTimeout")() }}', 'undefinedundefined'],
  ])('%s reaches no host object', async (_name, template, expected) => {
    const d = await render(template);
    expect(d.status).toBe('succeeded');
    expect(d.outputs?.out).toBe(expected);
  });

  it('an escape that asks for the environment gets an error, never a secret', async () => {
    const d = await render('{{ range.constructor("return process.env.OPENAI_API_KEY_TEMPLATE_TEST")() }}');
    expect(d.status).toBe('failed');
    expect(d.error).toMatch(/^template rendering failed: [\s\S]*ReferenceError: process is not defined/);
    expect(JSON.stringify(d)).not.toContain(SECRET);
  });

  it('nothing a render leaves behind reaches the next one', async () => {
    const first = await render('{{ range.constructor("globalThis.leak = 1; Object.prototype.leak = 2; return typeof leak")() }}');
    expect(first.status).toBe('succeeded');
    const second = await render('{{ range.constructor("return typeof leak + typeof ({}).leak")() }}');
    expect(second).toMatchObject({ status: 'succeeded', outputs: { out: 'undefinedundefined' } });
  });

  it('a huge range ends the node at CODE_EXECUTION_TIMEOUT, and the server answers /health meanwhile', async () => {
    // Nested so that no list outgrows CODE_MAX_MEMORY_MB: 10^10 rounds that only the time limit ends.
    const { apiKey } = await s.importApp(app('{% for i in range(0, n) %}{% for j in range(0, n) %}{% endfor %}{% endfor %}'));
    const res = await fetch(`${s.api}/workflows/run`, { method: 'POST', headers: headers(apiKey), body: JSON.stringify({ inputs: { n: 100_000 }, response_mode: 'streaming', user: 'u' }) });
    // 1. wait until the template node runs; 2. /health answers before that node finishes.
    let healthAnsweredWhileRunning = false;
    let finished: Record<string, unknown> | undefined;
    for await (const f of readSse(res)) {
      if (f.kind !== 'data') continue;
      if (f.data.event === 'node_started' && (f.data.data as { node_id: string }).node_id === 't') {
        const h = await fetch(`${s.url}/health`);
        healthAnsweredWhileRunning = h.status === 200;
      }
      if (f.data.event === 'node_finished' && (f.data.data as { node_id: string }).node_id === 't') finished = f.data.data as Record<string, unknown>;
    }
    expect(healthAnsweredWhileRunning).toBe(true);
    expect(finished).toMatchObject({ status: 'failed', error: 'Code execution timed out after 3s (CODE_EXECUTION_TIMEOUT).' });
    // The sandbox is usable again at once.
    expect(await render('{{ n + 1 }}', { n: 1 })).toMatchObject({ status: 'succeeded', outputs: { out: '2' } });
  });

  it('a range too large for CODE_MAX_MEMORY_MB ends the node naming the limit (or the time limit first)', async () => {
    const d = await render('{% for i in range(0, n) %}{% endfor %}', { n: 2_000_000_000 });
    expect(d.status).toBe('failed');
    expect(d.error).toMatch(/^(Code execution ran out of memory: more than 128 MB \(CODE_MAX_MEMORY_MB\)|Code execution timed out after 3s \(CODE_EXECUTION_TIMEOUT\))\.$/);
    expect(await render('{{ n }}', { n: 5 })).toMatchObject({ status: 'succeeded', outputs: { out: '5' } });
  });

  it('an output longer than TEMPLATE_TRANSFORM_MAX_LENGTH fails the node naming the setting', async () => {
    const d = await render('{% for i in range(0, 2000) %}x{% endfor %}');
    expect(d).toMatchObject({ status: 'failed', error: 'Output length exceeds 1000 characters (TEMPLATE_TRANSFORM_MAX_LENGTH)' });
  });
});
