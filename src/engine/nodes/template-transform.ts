import nunjucks from 'nunjucks';
import { NodeFailure, type GraphNode, type NodeHandler } from '../types.js';
import { variableList } from './shared.js';

/** Jinja2 rendering through nunjucks (no autoescape, like Dify's sandboxed Jinja2). */
const env = new nunjucks.Environment(null, { autoescape: false, throwOnUndefined: false });

/**
 * Jinja2's `map` filter, which nunjucks lacks: `xs | map(attribute="a.b")` picks an attribute,
 * `xs | map("upper")` applies another filter.
 */
env.addFilter('map', function map(this: unknown, xs: unknown, ...args: unknown[]) {
  if (!Array.isArray(xs)) return [];
  const last = args.at(-1) as Record<string, unknown> | undefined;
  const kwargs = last && typeof last === 'object' && (last as { __keywords?: boolean }).__keywords ? last : undefined;
  if (kwargs && typeof kwargs.attribute === 'string') {
    const path = kwargs.attribute.split('.');
    return xs.map((x) => path.reduce<unknown>((v, k) => (v && typeof v === 'object' ? (v as Record<string, unknown>)[k] : undefined), x) ?? kwargs.default);
  }
  const name = typeof args[0] === 'string' ? args[0] : undefined;
  if (!name) return xs;
  const filter = env.getFilter(name) as (...a: unknown[]) => unknown;
  return xs.map((x) => filter.call(this, x, ...args.slice(1).filter((a) => a !== kwargs)));
});
const compiled = new WeakMap<GraphNode, nunjucks.Template>();

function templateOf(node: GraphNode): nunjucks.Template {
  let t = compiled.get(node);
  if (!t) {
    t = nunjucks.compile(String(node.data.template ?? ''), env);
    compiled.set(node, t);
  }
  return t;
}

export const templateTransformNode: NodeHandler = {
  validate(node) {
    if (typeof node.data.template !== 'string') throw new Error('template must be a string');
    variableList(node.data.variables, 'variables');
    try {
      new nunjucks.Template(node.data.template, env, undefined, true);
    } catch (err) {
      throw new Error(`template is not valid Jinja: ${(err as Error).message.split('\n')[0]}`);
    }
  },
  async run(ctx) {
    const vars: Record<string, unknown> = {};
    for (const v of variableList(ctx.node.data.variables, 'variables')) vars[v.variable] = ctx.pool.get(v.selector) ?? null;
    let output: string;
    try {
      output = templateOf(ctx.node).render(vars);
    } catch (err) {
      throw new NodeFailure(`template rendering failed: ${(err as Error).message}`, 'TemplateError', false);
    }
    return { type: 'succeeded', inputs: vars, outputs: { output } };
  },
};
