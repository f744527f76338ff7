import { compare, parseConditions, type Condition } from '../conditions.js';
import type { NodeHandler, NodeContext } from '../types.js';
import { isObject } from './shared.js';

interface Case {
  readonly id: string;
  readonly logic: 'and' | 'or';
  readonly conditions: Condition[];
}

/** Cases from `cases[]`, or the legacy single case (`conditions` + `logical_operator`) named `true`. */
function casesOf(data: Readonly<Record<string, unknown>>): Case[] {
  const rawCases: unknown[] = Array.isArray(data.cases)
    ? data.cases
    : [{ case_id: 'true', logical_operator: data.logical_operator, conditions: data.conditions ?? [] }];
  return rawCases.map((c, i) => {
    if (!isObject(c)) throw new Error(`cases[${i}] must be a mapping`);
    const id = typeof c.case_id === 'string' ? c.case_id : typeof c.id === 'string' ? c.id : undefined;
    if (!id) throw new Error(`cases[${i}].case_id must be a string`);
    const logic = c.logical_operator === 'or' ? 'or' : 'and';
    const conditions = parseConditions(c.conditions, `cases[${i}].conditions`);
    return { id, logic, conditions };
  });
}

function holds(ctx: NodeContext, c: Condition): boolean {
  const expected = typeof c.value === 'string' ? ctx.pool.render(c.value) : c.value;
  return compare(c.op, ctx.pool.get(c.selector), expected);
}

/** Takes the handle of the first case that holds, else `false`. */
export const ifElseNode: NodeHandler = {
  branch: true,
  validate(node) {
    casesOf(node.data);
  },
  async run(ctx) {
    const results: { case_id: string; result: boolean }[] = [];
    let handle = 'false';
    for (const c of casesOf(ctx.node.data)) {
      const checks = c.conditions.map((k) => holds(ctx, k));
      const ok = c.conditions.length > 0 && (c.logic === 'and' ? checks.every(Boolean) : checks.some(Boolean));
      results.push({ case_id: c.id, result: ok });
      if (ok) {
        handle = c.id;
        break;
      }
    }
    return { type: 'succeeded', outputs: { result: handle !== 'false', selected_case_id: handle }, processData: { condition_results: results }, handle };
  },
};
