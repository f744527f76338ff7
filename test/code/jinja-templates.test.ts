import { describe, expect, it } from 'vitest';
import { JinjaTemplates } from '../../src/code/jinja-templates.js';
import { jinjaSyntaxError } from '../../src/code/template-syntax.js';

const limits = { maxSteps: 10_000, timeoutMs: 1000, maxLength: 500 };
const jinja = new JinjaTemplates(limits);
const render = (t: string, vars: Record<string, unknown> = {}) => jinja.renderNow(t, vars);

describe('JinjaTemplates: the Jinja2 that Dify templates use', () => {
  it.each([
    ['loop.*', '{% for x in xs %}{{ loop.index }}{{ loop.index0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.revindex }};{% endfor %}', { xs: ['a', 'b'] }, '10True False22;21False True21;'.replace(/ /g, '')],
    ['for … else, break', '{% for x in xs %}{% if x == 3 %}{% break %}{% endif %}{{ x }}{% endfor %}|{% for x in [] %}{% else %}none{% endfor %}', { xs: [1, 2, 3] }, '12|none'],
    ['for over items()', '{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}', { d: { a: 1, b: 'x' } }, 'a=1;b=x;'],
    ['macros with defaults and call', '{% macro m(a, b="z") %}<{{ a }}{{ b }}>{% endmacro %}{{ m(1) }}{{ m(2, b=3) }}', {}, '<1z><23>'],
    ['tojson', '{{ d | tojson }}', { d: { a: [1, 'é'], b: null } }, '{"a": [1, "é"], "b": null}'],
    ['whitespace control', 'a  {%- if true -%}  b  {%- endif -%}  c\n', {}, 'abc'],
    ['set and namespace', '{% set ns = namespace(n=0) %}{% for x in xs %}{% set ns.n = ns.n + x %}{% endfor %}{{ ns.n }}', { xs: [1, 2, 3] }, '6'],
    ['tests', '{{ x is defined }}{{ y is none }}{{ 4 is even }}{{ "a" is string }}{{ z is undefined }}', { x: 1, y: null }, 'TrueTrueTrueTrueTrue'],
    ['string methods', '{{ s.strip().upper() }}|{{ s.split(",") | length }}|{{ s.startswith(" a") }}|{{ s.replace("a", "A") }}', { s: ' a,b ' }, 'A,B|2|True| A,b '],
    ['python printing of values', '{{ d }} {{ xs }} {{ t }} {{ n }}', { d: { a: 1, b: "it's" }, xs: [1, 'a', null, false], t: true, n: null }, '{\'a\': 1, \'b\': "it\'s"} [1, \'a\', None, False] True '],
    ['arithmetic', '{{ 7 // 2 }} {{ 7 % 2 }} {{ 7 / 2 }} {{ 2 ** 10 }} {{ "ab" * 2 }} {{ 1 ~ "x" }}', {}, '3 1 3.5 1024 abab 1x'],
    ['slices, subscripts, ternary', '{{ xs[1:] }} {{ xs[-1] }} {{ d["a"] }} {{ "y" if xs else "n" }}', { xs: [1, 2, 3], d: { a: 'A' } }, '[2, 3] 3 A y'],
    ['filters from the library', '{{ s | title }} {{ s | capitalize }} {{ s | length }} {{ xs | sort | join(",") }} {{ xs | reverse | list }} {{ xs | first }} {{ xs | last }} {{ u | default("d") }} {{ xs | unique | list | length }}', { s: 'hello world', xs: [3, 1, 2] }, 'Hello World Hello world 11 1,2,3 [2, 1, 3] 3 2 d 3'],
    ['filters added to it', '{{ x | round(1) }} {{ x | round }} {{ xs | sum }} {{ xs | min }} {{ xs | max }} {{ s | truncate(8) }} {{ s | wordcount }} {{ "<b>" | e }} {{ "<b>x</b>" | striptags }} {{ "ab" | center(6) }}|', { x: 2.46, xs: [3, 1, 2], s: 'hello big world' }, '2.5 2.0 6 1 3 hello... 3 &lt;b&gt; x   ab  |'],
    ['map, select, reject, batch, format, int', '{{ xs | map("upper") | join }} {{ ns | select("odd") | list }} {{ ns | reject("odd") | list }} {{ ns | batch(2) | list }} {{ "%s-%d-%.1f" | format("a", 2, 1.26) }} {{ -2.5 | int }} {{ "12" | int + 1 }}', { xs: ['a', 'b'], ns: [1, 2, 3] }, 'AB [1, 3] [2] [[1, 2], [3]] a-2-1.3 -2 13'],
    ['map(attribute=) and selectattr', '{{ fs | map(attribute="name") | join(", ") }} {{ fs | selectattr("ok") | map(attribute="name") | list }}', { fs: [{ name: 'a', ok: true }, { name: 'b', ok: false }] }, "a, b ['a']"],
    ['filter blocks and comments', '{# note #}{% filter upper %}abc{% endfilter %}', {}, 'ABC'],
    ['undefined names print nothing', '[{{ nope }}{{ x.y.z }}]', { x: {} }, '[]'],
    ['a trailing newline is dropped, as Jinja2 does', 'a\n', {}, 'a'],
    ['loop.cycle, output before a break kept, loop.previtem', '{% for x in xs %}{{ loop.cycle("o", "e") }}{{ x }}{% if x == 2 %}!{% break %}{% endif %}{% endfor %}|{% for x in xs %}{{ loop.previtem }}{% endfor %}', { xs: [1, 2, 3] }, 'o1e2!|12'],
    ['floats print as Python prints them', '{{ 4 / 2 }} {{ 2.0 }} {{ 3 * 1.0 }} {{ 7 // 2.0 }} {{ -0.0 }} {{ [1.0, 2] }} {{ 1.5 | int }}', {}, '2.0 2.0 3.0 3.0 -0.0 [1.0, 2] 1'],
    ['strings compare, a string is iterable, tuples print as tuples', '{{ "a" < "b" }}{% for c in "ab" %}[{{ c }}]{% endfor %}{{ (1, "x") }}', {}, 'True[a][b](1, \'x\')'],
  ])('%s', (_name, template, vars, expected) => {
    expect(render(template, vars)).toBe(expected);
  });

  it('checks syntax with the same parser (import) and reports the first line of the error', () => {
    expect(jinjaSyntaxError('{{ a }}{% for x in y %}{{ x }}{% endfor %}')).toBeUndefined();
    expect(jinjaSyntaxError('{% if %}')).toMatch(/Unexpected token/);
    expect(() => render('{% if %}')).toThrow(/^template rendering failed: /);
  });
});

describe('JinjaTemplates: plain data only, bounded', () => {
  it('reads own data properties only: no getter runs, class instances and functions are None', () => {
    let getterRan = false;
    const withGetter = Object.defineProperty({ a: 1 }, 'g', { enumerable: true, get: () => ((getterRan = true), 'secret') });
    class Secret {
      token = 'secret';
    }
    const out = render('{{ o.a }}|{{ o.g }}|{{ c }}|{{ c.token }}|{{ f }}|{{ o.constructor }}|{{ o.hasOwnProperty }}', { o: withGetter, c: new Secret(), f: () => 'secret' });
    expect(out).toBe('1||||||');
    expect(getterRan).toBe(false);
  });

  it('a cyclic value reads as None instead of recursing', () => {
    const a: Record<string, unknown> = { x: 1 };
    a.self = a;
    expect(render('{{ a.x }}{{ a.self }}', { a })).toBe('1');
  });

  it('stops at the step budget, the output length and the time limit, naming each setting', () => {
    expect(() => render('{% for i in range(100000) %}{% endfor %}')).toThrow('Template rendering stopped after 10000 steps (TEMPLATE_MAX_STEPS).');
    expect(() => render('{% for i in range(100) %}{% for j in range(100) %}{{ j }}{% endfor %}{% endfor %}')).toThrow(/TEMPLATE_MAX_STEPS|TEMPLATE_TRANSFORM_MAX_LENGTH/);
    expect(() => render('{{ "x" * 501 }}')).toThrow('Output length exceeds 500 characters (TEMPLATE_TRANSFORM_MAX_LENGTH)');
    expect(() => render('{% set xs = [1] %}{% for i in range(30) %}{% set xs = xs + xs %}{% endfor %}{{ xs | length }}')).toThrow('Template rendering stopped after 10000 steps (TEMPLATE_MAX_STEPS).');
    let t = 0;
    const slowClock = new JinjaTemplates({ ...limits, maxSteps: 1_000_000 }, () => (t += 10));
    expect(() => slowClock.renderNow('{% for i in range(100000) %}{{ i }}{% endfor %}', {})).toThrow('Template rendering timed out after 1000 ms (TEMPLATE_RENDER_TIMEOUT_MS).');
  });

  it('a stopped run renders nothing', async () => {
    const ac = new AbortController();
    ac.abort();
    await expect(jinja.render('x', {}, ac.signal)).rejects.toThrow();
  });
});
