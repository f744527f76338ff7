import { failedWith, NodeFailure, type NodeHandler } from '../types.js';
import { variableList } from './shared.js';

/**
 * Dify's template-transform node: renders its Jinja2 `template` with its variables through the
 * `templates` port, which runs the template inside the sandbox (src/code), never in this realm.
 */
export const templateTransformNode: NodeHandler = {
  validate(node, checks) {
    if (typeof node.data.template !== 'string') throw new Error('template must be a string');
    variableList(node.data.variables, 'variables');
    const error = checks.templateSyntax?.(node.data.template);
    if (error !== undefined) throw new Error(`template is not valid Jinja: ${error}`);
  },
  async run(ctx) {
    const vars: Record<string, unknown> = {};
    for (const v of variableList(ctx.node.data.variables, 'variables')) vars[v.variable] = ctx.pool.get(v.selector) ?? null;
    const templates = ctx.ports.templates;
    if (!templates) throw new NodeFailure('no template renderer is configured on this server', 'TemplateError', false);
    let output: string;
    try {
      output = await templates.render(String(ctx.node.data.template ?? ''), vars, ctx.signal, ctx.appId);
    } catch (err) {
      if (ctx.signal.aborted) throw err;
      throw failedWith(new NodeFailure((err as Error).message, 'TemplateError', false, { cause: err }), { inputs: vars });
    }
    return { type: 'succeeded', inputs: vars, outputs: { output } };
  },
};
