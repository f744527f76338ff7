import type { NodeHandler, NodeContext } from '../types.js';
import { isObject, selectorOf } from './shared.js';

function selectors(v: unknown, field: string): string[][] {
  if (!Array.isArray(v)) throw new Error(`${field} must be a list of selectors`);
  return v.map((s, i) => {
    const sel = selectorOf(s);
    if (!sel) throw new Error(`${field}[${i}] must be a list of at least 2 names`);
    return sel;
  });
}

function groupsOf(data: Readonly<Record<string, unknown>>): { name: string; vars: string[][] }[] | undefined {
  const adv = data.advanced_settings;
  if (!isObject(adv) || adv.group_enabled !== true) return undefined;
  if (!Array.isArray(adv.groups)) throw new Error('advanced_settings.groups must be a list');
  return adv.groups.map((g, i) => {
    if (!isObject(g) || typeof g.group_name !== 'string') throw new Error(`advanced_settings.groups[${i}].group_name must be a string`);
    return { name: g.group_name, vars: selectors(g.variables, `advanced_settings.groups[${i}].variables`) };
  });
}

/** The first of its variables that has a value (the branch that ran). */
function first(ctx: NodeContext, vars: string[][]): unknown {
  for (const s of vars) {
    const v = ctx.pool.get(s);
    if (v !== undefined) return v;
  }
  return null;
}

export const variableAggregatorNode: NodeHandler = {
  validate(node) {
    const groups = groupsOf(node.data);
    if (!groups) selectors(node.data.variables ?? [], 'variables');
  },
  async run(ctx) {
    const groups = groupsOf(ctx.node.data);
    if (groups) {
      const outputs: Record<string, unknown> = {};
      for (const g of groups) outputs[g.name] = { output: first(ctx, g.vars) };
      return { type: 'succeeded', outputs };
    }
    return { type: 'succeeded', outputs: { output: first(ctx, selectors(ctx.node.data.variables ?? [], 'variables')) } };
  },
};
