import { NodeFailure, type GraphNode, type NodeHandler } from '../types.js';
import { isObject, selectorOf } from './shared.js';
import { isAssignerV1, runAssignerV1, v1SpecOf } from './assigner-v1.js';

/** Dify's variable-assigner v2 operations. */
const OPERATIONS = ['over-write', 'clear', 'append', 'extend', 'set', '+=', '-=', '*=', '/=', 'remove-first', 'remove-last'] as const;
type Operation = (typeof OPERATIONS)[number];

interface Item {
  readonly target: string[];
  readonly operation: Operation;
  /** A selector (`input_type: variable`) or a constant. */
  readonly value: { readonly selector: string[] } | { readonly constant: unknown } | undefined;
}

/** Operations that need no value. */
const NO_VALUE = new Set<Operation>(['clear', 'remove-first', 'remove-last']);

function itemsOf(node: GraphNode): Item[] {
  const d = node.data;
  if (d.version !== undefined && String(d.version) !== '2') throw new Error(`version "${String(d.version)}" is not supported (supported: 1, 2)`);
  if (!Array.isArray(d.items)) throw new Error('items must be a list');
  return d.items.map((it: unknown, i: number): Item => {
    if (!isObject(it)) throw new Error(`items[${i}] must be a mapping`);
    const target = selectorOf(it.variable_selector);
    if (!target) throw new Error(`items[${i}].variable_selector must be a list of at least 2 names`);
    if (target[0] === 'sys' || target[0] === 'env') throw new Error(`items[${i}].variable_selector: ${target[0]} variables are read-only`);
    const op = it.operation;
    if (typeof op !== 'string' || !(OPERATIONS as readonly string[]).includes(op)) {
      throw new Error(`items[${i}].operation "${String(op)}" is not supported (supported: ${OPERATIONS.join(', ')})`);
    }
    const operation = op as Operation;
    if (NO_VALUE.has(operation)) return { target, operation, value: undefined };
    if (it.input_type === 'variable') {
      const selector = selectorOf(it.value);
      if (!selector) throw new Error(`items[${i}].value must be a selector when input_type is "variable"`);
      return { target, operation, value: { selector } };
    }
    return { target, operation, value: { constant: it.value } };
  });
}

function emptyLike(v: unknown): unknown {
  if (Array.isArray(v)) return [];
  if (typeof v === 'string') return '';
  if (typeof v === 'number') return 0;
  if (typeof v === 'boolean') return false;
  if (isObject(v)) return {};
  return null;
}

/** Applies one operation; throws a message Dify-like when the types do not fit. */
export function applyOperation(op: Operation, current: unknown, value: unknown, name: string): unknown {
  switch (op) {
    case 'over-write':
    case 'set':
      return value;
    case 'clear':
      return emptyLike(current);
    case 'append':
      if (!Array.isArray(current)) throw new Error(`Operation append is not supported: variable ${name} is not an array`);
      return [...current, value];
    case 'extend':
      if (!Array.isArray(current) || !Array.isArray(value)) throw new Error(`Operation extend is not supported: variable ${name} and the value must be arrays`);
      return [...current, ...value];
    case 'remove-first':
      if (!Array.isArray(current)) throw new Error(`Operation remove-first is not supported: variable ${name} is not an array`);
      return current.slice(1);
    case 'remove-last':
      if (!Array.isArray(current)) throw new Error(`Operation remove-last is not supported: variable ${name} is not an array`);
      return current.slice(0, -1);
    case '+=':
    case '-=':
    case '*=':
    case '/=': {
      const a = current;
      const b = typeof value === 'string' && value.trim() !== '' && !Number.isNaN(Number(value)) ? Number(value) : value;
      if (typeof a !== 'number' || typeof b !== 'number') throw new Error(`Operation ${op} is not supported: variable ${name} and the value must be numbers`);
      if (op === '+=') return a + b;
      if (op === '-=') return a - b;
      if (op === '*=') return a * b;
      if (b === 0) throw new Error(`Operation /= on variable ${name}: division by zero`);
      return a / b;
    }
  }
}

/**
 * Variable assigner. Version 1 (no `version`, or `"1"`, see assigner-v1.ts) assigns one variable.
 * Version 2: each item updates a variable in place — a conversation variable
 * or a loop variable (`[loop id, label]`) — with Dify's operations. Outputs nothing; the updated
 * variables are reported in `process_data.updated_variables`.
 */
export const assignerNode: NodeHandler = {
  validate(node) {
    if (isAssignerV1(node.data)) v1SpecOf(node);
    else itemsOf(node);
  },
  async run(ctx) {
    if (isAssignerV1(ctx.node.data)) return runAssignerV1(ctx);
    const updated: { name: string; selector: string[]; new_value: unknown }[] = [];
    for (const it of itemsOf(ctx.node)) {
      const name = it.target.join('.');
      const current = ctx.pool.get(it.target);
      if (current === undefined) throw new NodeFailure(`Variable ${name} not found`, 'VariableOperatorNodeError', false);
      let value: unknown;
      if (it.value && 'selector' in it.value) {
        value = ctx.pool.get(it.value.selector);
        if (value === undefined) throw new NodeFailure(`Variable ${it.value.selector.join('.')} not found`, 'VariableOperatorNodeError', false);
      } else value = it.value?.constant;
      let next: unknown;
      try {
        next = applyOperation(it.operation, current, value, name);
      } catch (err) {
        throw new NodeFailure((err as Error).message, 'VariableOperatorNodeError', false);
      }
      if (it.target.length !== 2) throw new NodeFailure(`Variable ${name}: only whole variables can be assigned`, 'VariableOperatorNodeError', false);
      ctx.pool.setAll(it.target[0]!, { [it.target[1]!]: next });
      updated.push({ name: it.target[1]!, selector: it.target, new_value: next });
    }
    return { type: 'succeeded', inputs: {}, processData: { updated_variables: updated }, outputs: {} };
  },
};
