import { NodeFailure, type GraphNode, type NodeContext, type NodeHandler } from '../types.js';
import { isObject, selectorOf } from './shared.js';

/** Operators by the kind of value they compare (Dify's list operator). */
const STRING_OPS = ['contains', 'start with', 'end with', 'is', 'in', 'empty', 'not contains', 'is not', 'not in', 'not empty'] as const;
const NUMBER_OPS = ['=', '≠', '<', '≤', '>', '≥'] as const;
const SEQUENCE_OPS = ['in', 'not in'] as const;
/** File attributes by kind: strings, a member of a set (`type`, `transfer_method`), or the size. */
const FILE_STRING_KEYS = ['name', 'extension', 'mime_type', 'url'] as const;
const FILE_SET_KEYS = ['type', 'transfer_method'] as const;
const ORDER_KEYS = ['name', 'type', 'extension', 'mime_type', 'transfer_method', 'url', 'size'] as const;

interface Condition {
  readonly key: string;
  readonly operator: string;
  readonly value: unknown;
}

interface ListSpec {
  readonly variable: string[];
  readonly filter: readonly Condition[] | undefined;
  /** `extract_by.serial`: a template giving a 1-based index. */
  readonly serial: string | undefined;
  readonly order: { readonly key: string; readonly desc: boolean } | undefined;
  readonly limit: number | undefined;
}

const enabled = (v: unknown): v is Record<string, unknown> => isObject(v) && v.enabled === true;

function specOf(node: GraphNode): ListSpec {
  const d = node.data;
  const variable = selectorOf(d.variable);
  if (!variable) throw new Error('variable must be a list of at least 2 names');
  let filter: Condition[] | undefined;
  if (enabled(d.filter_by)) {
    const cs = d.filter_by.conditions ?? [];
    if (!Array.isArray(cs)) throw new Error('filter_by.conditions must be a list');
    filter = cs.map((c: unknown, i: number) => {
      if (!isObject(c) || typeof c.comparison_operator !== 'string') throw new Error(`filter_by.conditions[${i}].comparison_operator must be a string`);
      const all = [...STRING_OPS, ...NUMBER_OPS] as readonly string[];
      if (!all.includes(c.comparison_operator)) throw new Error(`filter_by.conditions[${i}].comparison_operator "${c.comparison_operator}" is not supported (supported: ${all.join(', ')})`);
      return { key: typeof c.key === 'string' ? c.key : '', operator: c.comparison_operator, value: c.value ?? '' };
    });
  }
  let serial: string | undefined;
  if (enabled(d.extract_by)) {
    const s = d.extract_by.serial;
    if (typeof s !== 'string' && typeof s !== 'number') throw new Error('extract_by.serial must be a string (a number or a template)');
    serial = String(s);
  }
  let order: ListSpec['order'];
  if (enabled(d.order_by)) {
    const v = d.order_by.value ?? 'asc';
    if (v !== 'asc' && v !== 'desc') throw new Error('order_by.value must be "asc" or "desc"');
    order = { key: typeof d.order_by.key === 'string' ? d.order_by.key : '', desc: v === 'desc' };
  }
  let limit: number | undefined;
  if (enabled(d.limit)) {
    const n = d.limit.size ?? -1;
    if (typeof n !== 'number' || !Number.isInteger(n)) throw new Error('limit.size must be an integer');
    limit = n;
  }
  return { variable, filter, serial, order, limit };
}

type Kind = 'string' | 'number' | 'file';

const isFileValue = (v: unknown) => isObject(v) && typeof v.transfer_method === 'string';

function kindOf(list: readonly unknown[]): Kind | undefined {
  if (list.every((x) => typeof x === 'string')) return 'string';
  if (list.every((x) => typeof x === 'number')) return 'number';
  if (list.every(isFileValue)) return 'file';
  return undefined;
}

const fail = (msg: string, type = 'ListOperatorError') => new NodeFailure(msg, type, false);

function stringTest(op: string, value: string): (x: string) => boolean {
  switch (op) {
    case 'contains':
      return (x) => x.includes(value);
    case 'start with':
      return (x) => x.startsWith(value);
    case 'end with':
      return (x) => x.endsWith(value);
    case 'is':
      return (x) => x === value;
    case 'in':
      return (x) => value.includes(x);
    case 'empty':
      return (x) => x === '';
    case 'not contains':
      return (x) => !x.includes(value);
    case 'is not':
      return (x) => x !== value;
    case 'not in':
      return (x) => !value.includes(x);
    case 'not empty':
      return (x) => x !== '';
    default:
      throw fail(`Invalid condition: ${op}`, 'InvalidConditionError');
  }
}

function numberTest(op: string, value: number): (x: number) => boolean {
  switch (op) {
    case '=':
      return (x) => x === value;
    case '≠':
      return (x) => x !== value;
    case '<':
      return (x) => x < value;
    case '≤':
      return (x) => x <= value;
    case '>':
      return (x) => x > value;
    case '≥':
      return (x) => x >= value;
    default:
      throw fail(`Invalid condition: ${op}`, 'InvalidConditionError');
  }
}

/** Python's float() of a filter value: a number or fail naming it. */
function toNumber(v: string): number {
  const n = Number(v.trim());
  if (v.trim() === '' || Number.isNaN(n)) throw fail(`Invalid filter value: ${v}`, 'InvalidFilterValueError');
  return n;
}

/** Dify's file attribute for filters and ordering. */
function fileAttribute(f: Record<string, unknown>, key: string): string | number {
  const str = (v: unknown) => (typeof v === 'string' ? v : '');
  switch (key) {
    case 'name':
      return str(f.filename);
    case 'type':
      return str(f.type);
    case 'extension':
      return str(f.extension);
    case 'mime_type':
      return str(f.mime_type);
    case 'transfer_method':
      return str(f.transfer_method);
    case 'url':
      return str(f.remote_url);
    case 'size':
      return typeof f.size === 'number' ? f.size : -1;
    default:
      throw fail(`Invalid key: ${key}`, 'InvalidKeyError');
  }
}

function fileTest(c: Condition, value: unknown): (f: Record<string, unknown>) => boolean {
  if ((FILE_STRING_KEYS as readonly string[]).includes(c.key) && typeof value === 'string') {
    const t = stringTest(c.operator, value);
    return (f) => t(fileAttribute(f, c.key) as string);
  }
  if ((FILE_SET_KEYS as readonly string[]).includes(c.key) && (typeof value === 'string' || Array.isArray(value))) {
    if (!(SEQUENCE_OPS as readonly string[]).includes(c.operator)) throw fail(`Invalid condition: ${c.operator}`, 'InvalidConditionError');
    const set = typeof value === 'string' ? value : value.map(String);
    const has = (x: string) => set.includes(x);
    return c.operator === 'in' ? (f) => has(fileAttribute(f, c.key) as string) : (f) => !has(fileAttribute(f, c.key) as string);
  }
  if (c.key === 'size' && typeof value === 'string') {
    const t = numberTest(c.operator, toNumber(value));
    return (f) => t(fileAttribute(f, 'size') as number);
  }
  throw fail(`Invalid key: ${c.key}`, 'InvalidKeyError');
}

/** Compares by Unicode code point, as Python sorts strings. */
function compareCodePoints(a: string, b: string): number {
  const ia = a[Symbol.iterator]();
  const ib = b[Symbol.iterator]();
  for (;;) {
    const x = ia.next();
    const y = ib.next();
    if (x.done || y.done) return x.done && y.done ? 0 : x.done ? -1 : 1;
    const d = x.value.codePointAt(0)! - y.value.codePointAt(0)!;
    if (d !== 0) return d;
  }
}

function compare(a: string | number, b: string | number): number {
  return typeof a === 'number' && typeof b === 'number' ? a - b : compareCodePoints(String(a), String(b));
}

/**
 * Dify's list operator on an array of strings, numbers or files: filter (every condition in turn),
 * extract the `serial`-th item (1-based, a template), order (files by an attribute), then keep the
 * first `limit.size` items (Python slice semantics). Outputs `result`, `first_record`,
 * `last_record`. File lists are described through the files port (name, extension, size, …) and
 * come out as Dify File mappings.
 */
export const listOperatorNode: NodeHandler = {
  validate(node) {
    specOf(node);
  },
  async run(ctx: NodeContext) {
    const spec = specOf(ctx.node);
    const raw = ctx.pool.get(spec.variable);
    if (raw === undefined) throw fail(`Variable not found for selector: ${JSON.stringify(spec.variable)}`);
    if (raw === null || raw === '' || (Array.isArray(raw) && raw.length === 0)) {
      return { type: 'succeeded', inputs: { variable: [] }, processData: { variable: [] }, outputs: { result: [], first_record: null, last_record: null } };
    }
    const kind = Array.isArray(raw) ? kindOf(raw) : undefined;
    if (!kind) throw fail(`Variable ${spec.variable.join('.')} is not an ArrayFileSegment, ArrayNumberSegment or ArrayStringSegment`);
    let list: unknown[] = raw as unknown[];
    if (kind === 'file') {
      const files = ctx.ports.files;
      if (!files) throw fail(`node ${ctx.node.id}: this server has no file access for list-operator nodes`);
      list = [];
      for (const [i, f] of (raw as unknown[]).entries()) {
        try {
          list.push(await files.describe(f, ctx.appId));
        } catch (err) {
          throw fail(`${spec.variable.join('.')}[${i}]: ${(err as Error).message}`);
        }
      }
    }
    const inputs = { variable: list };
    for (const c of spec.filter ?? []) {
      const value = typeof c.value === 'string' ? ctx.pool.render(c.value) : c.value;
      if (kind === 'string') {
        if (typeof value !== 'string') throw fail(`Invalid filter value: ${JSON.stringify(c.value)}`, 'InvalidFilterValueError');
        list = (list as string[]).filter(stringTest(c.operator, value));
      } else if (kind === 'number') {
        if (typeof value !== 'string') throw fail(`Invalid filter value: ${JSON.stringify(c.value)}`, 'InvalidFilterValueError');
        list = (list as number[]).filter(numberTest(c.operator, toNumber(value)));
      } else list = (list as Record<string, unknown>[]).filter(fileTest(c, value));
    }
    if (spec.serial !== undefined) {
      const text = ctx.pool.render(spec.serial).trim();
      if (!/^[+-]?\d+$/.test(text)) throw fail(`Invalid serial index: ${text} is not an integer`, 'InvalidKeyError');
      const n = Number(text);
      if (n < 1) throw fail(`Invalid serial index: must be >= 1, got ${n}`, 'InvalidKeyError');
      if (n > list.length) throw fail(`Invalid serial index: must be <= ${list.length}, got ${n}`, 'InvalidKeyError');
      list = [list[n - 1]];
    }
    if (spec.order) {
      const { key, desc } = spec.order;
      let keyOf: (x: unknown) => string | number = (x) => x as string | number;
      if (kind === 'file') {
        if (!(ORDER_KEYS as readonly string[]).includes(key)) throw fail(`Invalid order key: ${key}`, 'InvalidKeyError');
        keyOf = (x) => fileAttribute(x as Record<string, unknown>, key);
      }
      // stable, and equal items keep their order in both directions (Python's sorted with reverse)
      list = [...list].sort((a, b) => (desc ? compare(keyOf(b), keyOf(a)) : compare(keyOf(a), keyOf(b))));
    }
    if (spec.limit !== undefined) list = list.slice(0, spec.limit);
    return {
      type: 'succeeded',
      inputs,
      processData: { variable: inputs.variable },
      outputs: { result: list, first_record: list.length > 0 ? list[0] : null, last_record: list.length > 0 ? list[list.length - 1] : null },
    };
  },
};
