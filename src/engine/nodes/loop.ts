import { conditionsHold, parseConditions, type Condition } from '../conditions.js';
import { containerEvents, runRound } from '../subgraph.js';
import { plusUsage } from '../../lib/usage.js';
import { mergeResources, type RetrieverResource } from '../retriever-resources.js';
import { NodeFailure, type GraphNode, type NodeHandler, type NodeUsage } from '../types.js';
import { isObject, selectorOf } from './shared.js';
import { constantOf } from './value-types.js';

interface LoopVariable {
  readonly label: string;
  readonly varType: string | undefined;
  readonly source: { readonly constant: unknown } | { readonly selector: string[] };
}

interface LoopSpec {
  readonly count: number;
  readonly logic: 'and' | 'or';
  readonly breaks: Condition[];
  readonly variables: LoopVariable[];
}

function specOf(node: GraphNode): LoopSpec {
  const d = node.data;
  const count = d.loop_count ?? 1;
  if (typeof count !== 'number' || !Number.isInteger(count) || count < 0) throw new Error('loop_count must be a non-negative integer');
  const breaks = parseConditions(d.break_conditions ?? [], 'break_conditions');
  const raw = d.loop_variables ?? [];
  if (!Array.isArray(raw)) throw new Error('loop_variables must be a list');
  const variables = raw.map((v: unknown, i: number): LoopVariable => {
    if (!isObject(v) || typeof v.label !== 'string' || v.label === '') throw new Error(`loop_variables[${i}].label must be a non-empty string`);
    const varType = typeof v.var_type === 'string' ? v.var_type : undefined;
    if (v.value_type === 'variable') {
      const selector = selectorOf(v.value);
      if (!selector) throw new Error(`loop_variables[${i}].value must be a selector when value_type is "variable"`);
      return { label: v.label, varType, source: { selector } };
    }
    return { label: v.label, varType, source: { constant: constantOf(varType, v.value ?? null) } };
  });
  return { count, logic: d.logical_operator === 'or' ? 'or' : 'and', breaks, variables };
}

/**
 * Dify's loop: loop variables live at `[loop id, label]`; each round runs the child graph once;
 * the loop ends after `loop_count` rounds, when the break conditions hold (checked before the first
 * round and after each), or when a `loop-end` node runs. Outputs: the loop variables and `loop_round`.
 */
export const loopNode: NodeHandler = {
  validate(node) {
    specOf(node);
  },
  async run(ctx) {
    const spec = specOf(ctx.node);
    const max = ctx.ports.limits.loopMaxCount;
    if (spec.count > max) throw new NodeFailure(`Loop count ${spec.count} exceeds the limit of ${max} (LOOP_NODE_MAX_COUNT).`, 'LoopNodeError', false);
    const sub = ctx.graph.children.get(ctx.node.id);
    if (!sub) throw new NodeFailure('the loop has no child graph', 'LoopNodeError', false);
    const inputs: Record<string, unknown> = {};
    for (const v of spec.variables) inputs[v.label] = 'selector' in v.source ? (ctx.pool.get(v.source.selector) ?? null) : v.source.constant;
    ctx.pool.setAll(ctx.node.id, inputs);
    const events = containerEvents(ctx, 'loop', inputs, { loop_length: spec.count });
    const holds = () => conditionsHold(spec.breaks, spec.logic, (s) => ctx.pool.get(s), (t) => ctx.pool.render(t));
    const current = (): Record<string, unknown> => {
      const out: Record<string, unknown> = {};
      for (const v of spec.variables) out[v.label] = ctx.pool.get([ctx.node.id, v.label]) ?? null;
      return out;
    };
    let rounds = 0;
    let tokens = 0;
    let usage: NodeUsage | undefined;
    let resources: RetrieverResource[] = [];
    let reason = 'loop_completed';
    const variableMap: Record<string, Record<string, unknown>> = {};
    const durations: Record<string, number> = {};
    const totals = () => ({ tokens, usage, resources, steps: rounds, metadata: { completed_reason: reason, loop_duration_map: durations, loop_variable_map: variableMap } });
    try {
      if (holds()) reason = 'loop_break';
      else {
        for (let i = 0; i < spec.count; i++) {
          const roundStart = ctx.ports.now();
          const r = await runRound(ctx, sub, { type: 'loop', index: i });
          rounds = i + 1;
          tokens += r.tokens;
          usage = plusUsage(usage, r.usage);
          if (r.resources.length > 0) resources = mergeResources(resources, r.resources);
          variableMap[String(i)] = current();
          durations[String(i)] = (ctx.ports.now() - roundStart) / 1000;
          if (r.broke || holds()) {
            reason = 'loop_break';
            break;
          }
          if (i + 1 < spec.count) {
            events.next(i + 1, { pre_loop_output: { ...current(), loop_round: rounds } });
          }
        }
      }
    } catch (err) {
      if (!ctx.signal.aborted) events.completed('failed', (err as Error).message, null, totals());
      throw err;
    }
    return events.succeeded({ ...current(), loop_round: rounds }, totals());
  },
};
