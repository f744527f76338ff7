import nunjucks from 'nunjucks';
import { NodeFailure, type GraphNode, type NodeHandler } from '../types.js';
import { variableList } from './shared.js';

/** Jinja2 rendering through nunjucks (no autoescape, like Dify's sandboxed Jinja2). */
const env = new nunjucks.Environment(null, { autoescape: false, throwOnUndefined: false });
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
