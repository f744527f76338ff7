import { Template } from '@huggingface/jinja';
import nunjucks from 'nunjucks';
import { JinjaTemplates } from '../src/code/jinja-templates.js';
import { fmt, median } from './lib.js';

const ROUNDS = 7;
const RENDERS = 2000;

/** Typical template-transform templates: the chain bench's, a loop with filters, a Dify knowledge-context join. */
const CASES: readonly { name: string; template: string; vars: Record<string, unknown> }[] = [
  { name: 'chain node ({{ v | length }}:{{ i }})', template: '{{ v | length }}:{{ i }}', vars: { v: 'app-0123', i: 'run-1' } },
  {
    name: 'loop + filters over 10 items',
    template: '{% for item in items %}{{ loop.index }}. {{ item.name | upper }} ({{ item.tags | join("/") }}){% if not loop.last %}, {% endif %}{% endfor %} ({{ items | length }} items)',
    vars: { items: Array.from({ length: 10 }, (_, k) => ({ name: `name${k}`, tags: ['a', `t${k}`] })) },
  },
  {
    name: 'knowledge context (5 chunks)',
    template: '{% for c in chunks %}[{{ c.metadata.document_name }}] {{ c.content | trim }}\n{% endfor %}',
    vars: { chunks: Array.from({ length: 5 }, (_, k) => ({ content: ` chunk ${k} `.repeat(20), metadata: { document_name: `doc${k}.pdf`, score: 0.5 } })) },
  },
];

/** µs per render of `f`, median of ROUNDS rounds of RENDERS renders, the three renderers taken in turn each round. */
function measure(fs: readonly (() => string)[]): number[] {
  const rounds: number[][] = fs.map(() => []);
  for (let r = 0; r < ROUNDS + 2; r++) {
    fs.forEach((f, j) => {
      const t = performance.now();
      for (let i = 0; i < RENDERS; i++) f();
      if (r >= 2) rounds[j]!.push(((performance.now() - t) / RENDERS) * 1000);
    });
  }
  return rounds.map(median);
}

/**
 * One template render in process: Dovetail's bounded evaluator (src/code/jinja) against
 * @huggingface/jinja's own interpreter (its value classes, no bounds: the path templates took
 * before) and nunjucks (compiled to JavaScript, no sandbox: what LangGraph.js users run).
 */
export async function run(): Promise<void> {
  const ours = new JinjaTemplates({ maxSteps: 1_000_000, timeoutMs: 1000, maxLength: 400_000 });
  const env = new nunjucks.Environment(null, { autoescape: false });
  const lines = [`one render in process, µs per render (median of ${ROUNDS} rounds of ${RENDERS}, the three in turn)`];
  for (const c of CASES) {
    const library = new Template(c.template);
    const compiled = nunjucks.compile(c.template, env);
    if (ours.renderNow(c.template, c.vars) !== library.render(c.vars)) throw new Error(`${c.name}: Dovetail and @huggingface/jinja render differently`);
    const [a, b, n] = measure([() => ours.renderNow(c.template, c.vars), () => library.render(c.vars), () => compiled.render(c.vars)]);
    lines.push(`${c.name.padEnd(40)} Dovetail ${fmt(a!, 2)}  baseline @huggingface/jinja 0.5.11 ${fmt(b!, 2)} (${fmt(b! / a!, 1)}x)  nunjucks ${fmt(n!, 2)}`);
  }
  process.stdout.write(lines.join('\n') + '\n');
  await Promise.resolve();
}
