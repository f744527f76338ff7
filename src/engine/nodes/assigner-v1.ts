import { NodeFailure, type GraphNode, type NodeContext, type NodeOutcome } from '../types.js';
import { selectorOf } from './shared.js';

/** Dify's variable assigner version 1 write modes. */
const WRITE_MODES = ['over-write', 'append', 'clear'] as const;
type WriteMode = (typeof WRITE_MODES)[number];

interface V1Spec {
  readonly target: string[];
  readonly mode: WriteMode;
  /** Absent for `clear`. */
  readonly input: string[] | undefined;
}

/** The version 1 form (no `version`, or `"1"`): one variable, one write mode, one input selector. */
export function isAssignerV1(data: Readonly<Record<string, unknown>>): boolean {
  return data.version === undefined ? data.items === undefined : String(data.version) === '1';
}

export function v1SpecOf(node: GraphNode): V1Spec {
  const d = node.data;
  const target = selectorOf(d.assigned_variable_selector);
  if (!target) throw new Error('assigned_variable_selector must be a list of at least 2 names');
  if (target[0] === 'sys' || target[0] === 'env') throw new Error(`assigned_variable_selector: ${target[0]} variables are read-only`);
  const mode = d.write_mode ?? 'over-write';
  if (typeof mode !== 'string' || !(WRITE_MODES as readonly string[]).includes(mode)) {
    throw new Error(`write_mode "${String(mode)}" is not supported (supported: ${WRITE_MODES.join(', ')})`);
  }
  if (mode === 'clear') return { target, mode: 'clear', input: undefined };
  const input = selectorOf(d.input_variable_selector);
  if (!input) throw new Error('input_variable_selector must be a list of at least 2 names');
  return { target, mode: mode as WriteMode, input };
}

/** Dify's zero value of a variable's type (`clear`). */
function zeroLike(v: unknown): unknown {
  if (Array.isArray(v)) return [];
  if (typeof v === 'string') return '';
  if (typeof v === 'number') return 0;
  if (typeof v === 'boolean') return false;
  if (typeof v === 'object' && v !== null) return {};
  return null;
}

/**
 * Runs a version 1 assigner as Dify does: `over-write` sets the variable to the input's value,
 * `append` adds the input's value to an array variable, `clear` sets the type's zero value. The
 * updated variable is reported in `process_data.updated_variables`, as version 2 does.
 */
export function runAssignerV1(ctx: NodeContext): NodeOutcome {
  const spec = v1SpecOf(ctx.node);
  const name = spec.target.join('.');
  const fail = (msg: string) => new NodeFailure(msg, 'VariableOperatorNodeError', false);
  const current = ctx.pool.get(spec.target);
  if (current === undefined) throw fail(`Variable ${name} not found`);
  if (spec.target.length !== 2) throw fail(`Variable ${name}: only whole variables can be assigned`);
  let income: unknown;
  if (spec.input) {
    income = ctx.pool.get(spec.input);
    if (income === undefined) throw fail(`Variable ${spec.input.join('.')} not found`);
  }
  let next: unknown;
  switch (spec.mode) {
    case 'over-write':
      next = income;
      break;
    case 'append':
      if (!Array.isArray(current)) throw fail(`Operation append is not supported: variable ${name} is not an array`);
      next = [...current, income];
      break;
    case 'clear':
      next = zeroLike(current);
      break;
  }
  ctx.pool.setAll(spec.target[0]!, { [spec.target[1]!]: next });
  return {
    type: 'succeeded',
    inputs: spec.input ? { value: income ?? null } : {},
    processData: { updated_variables: [{ name: spec.target[1]!, selector: spec.target, new_value: next }] },
    outputs: {},
  };
}
