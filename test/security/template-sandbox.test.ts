import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.js';
import { endNode, startNode, templateNode, workflowDsl } from '../helpers/workflow-dsl.js';

/**
 * template-transform nodes render a DSL's Jinja2 in the server's thread with an interpreter that
 * walks the template's syntax tree over plain data (src/code/jinja): the known escapes of
 * JavaScript template engines find no JavaScript object to climb, and a runaway template ends at
 * TEMPLATE_MAX_STEPS / TEMPLATE_TRANSFORM_MAX_LENGTH, failing its node while the server serves on.
 */
let s: TestServer;
const SECRET = 'sk-template-escape-test-secret';

beforeAll(async () => {
  process.env.OPENAI_API_KEY_TEMPLATE_TEST = SECRET;
  s = await startServer({ env: { TEMPLATE_MAX_STEPS: '100000', TEMPLATE_TRANSFORM_MAX_LENGTH: '1000' } });
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

describe('template-transform rendered by the Jinja interpreter', () => {
  it('renders Jinja2 as before: loops, filters, the map filter, cycler and joiner', async () => {
    const d = await render('{% for i in range(0, n) %}{{ i }}{% endfor %}|{{ "ab" | upper }}|{{ [{"a": 1}, {"a": 2}] | map(attribute="a") | join(",") }}|{% set c = cycler("x", "y") %}{{ c.next() }}{{ c.next() }}|{% set j = joiner("-") %}{% for i in [1, 2] %}{{ j() }}{{ i }}{% endfor %}', { n: 3 });
    expect(d).toMatchObject({ status: 'succeeded', outputs: { out: '012|AB|1,2|xy|1-2' } });
  });

  it.each([
    ['range.constructor', '{{ range.constructor("return typeof process + typeof require + typeof fetch")() }}'],
    ['constructor.constructor', '{{ "".constructor.constructor("return typeof process")() }}'],
    ['__proto__', '{{ "".__proto__.constructor.constructor("return typeof globalThis.process")() }}'],
    ['cycler', '{% set c = cycler(1) %}{{ c.next.constructor("return typeof process")() }}'],
    ['joiner', '{% set j = joiner() %}{{ j.constructor("return typeof console + typeof setTimeout")() }}'],
    ['a list method', '{{ [].constructor.constructor("return 1")() }}'],
    ['a mapping prototype', '{{ {}.__proto__.constructor.constructor("return 1")() }}'],
  ])('%s reaches no JavaScript function: the node fails naming what it called', async (_name, template) => {
    const d = await render(template);
    expect(d.status).toBe('failed');
    expect(d.error).toBe('template rendering failed: Cannot call something that is not a function: got UndefinedValue');
  });

  it('attributes of values are their own data only: prototypes and constructors read as undefined', async () => {
    const d = await render('[{{ "".constructor }}|{{ n.constructor }}|{{ {}.constructor }}|{{ [].__proto__ }}|{{ range.call }}|{{ {"a": 1}.toString }}|{{ {"__proto__": "own"}.__proto__ }}]', { n: 1 });
    expect(d).toMatchObject({ status: 'succeeded', outputs: { out: '[||||||own]' } });
  });

  it('an escape that asks for the environment gets an error, never a secret', async () => {
    const d = await render('{{ range.constructor("return process.env.OPENAI_API_KEY_TEMPLATE_TEST")() }}');
    expect(d.status).toBe('failed');
    expect(d.error).toMatch(/^template rendering failed: /);
    expect(JSON.stringify(d)).not.toContain(SECRET);
  });

  it('nothing a render sets reaches the next one', async () => {
    const first = await render('{% set range = 5 %}{% set leak = 1 %}{% set True = 0 %}{{ range }}{{ leak }}{{ True }}');
    expect(first).toMatchObject({ status: 'succeeded', outputs: { out: '510' } });
    const second = await render('{{ range(2) | list }}{{ leak is defined }}{{ True }}');
    expect(second).toMatchObject({ status: 'succeeded', outputs: { out: '[0, 1]FalseTrue' } });
  });

  it('a huge loop ends the node at TEMPLATE_MAX_STEPS, and the server answers /health and renders at once', async () => {
    const d = await render('{% for i in range(0, n) %}{% for j in range(0, n) %}{% endfor %}{% endfor %}', { n: 100_000 });
    expect(d).toMatchObject({ status: 'failed', error: 'Template rendering stopped after 100000 steps (TEMPLATE_MAX_STEPS).' });
    expect((await fetch(`${s.url}/health`)).status).toBe(200);
    expect(await render('{{ n + 1 }}', { n: 1 })).toMatchObject({ status: 'succeeded', outputs: { out: '2' } });
  });

  it('range(10**9) fails before the list is built, naming TEMPLATE_MAX_STEPS', async () => {
    for (const t of ['{% for i in range(0, n) %}{% endfor %}', '{{ range(10**9) | length }}']) {
      const d = await render(t, { n: 2_000_000_000 });
      expect(d).toMatchObject({ status: 'failed', error: 'Template rendering stopped after 100000 steps (TEMPLATE_MAX_STEPS).' });
    }
  });

  it("'x' * 10**9 and a growing replace fail before the string is built, naming TEMPLATE_TRANSFORM_MAX_LENGTH", async () => {
    for (const t of ["{{ 'x' * 10**9 }}", "{% set s = 'x' * 900 %}{{ s.replace('x', s) | length }}", "{{ 'ab' | center(10**9) }}", "{{ 'a\\nb' | indent(10**9) }}"]) {
      const d = await render(t);
      expect(d).toMatchObject({ status: 'failed', error: 'Output length exceeds 1000 characters (TEMPLATE_TRANSFORM_MAX_LENGTH)' });
    }
  });

  it('a macro that calls itself for ever fails the node', async () => {
    const d = await render('{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}');
    expect(d).toMatchObject({ status: 'failed', error: 'template rendering failed: recursion deeper than 400 levels' });
  });

  it('an output longer than TEMPLATE_TRANSFORM_MAX_LENGTH fails the node naming the setting', async () => {
    const d = await render('{% for i in range(0, 2000) %}x{% endfor %}');
    expect(d).toMatchObject({ status: 'failed', error: 'Output length exceeds 1000 characters (TEMPLATE_TRANSFORM_MAX_LENGTH)' });
  });
});
