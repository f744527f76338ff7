/**
 * The values a template works on: plain JavaScript values, no wrapper per value.
 *
 * - strings, booleans, `null` (None) and `undefined` (an undefined name) as themselves;
 * - numbers: an integral JS number is a Jinja int, any other a float; a float whose value is
 *   integral (`4 / 2`, `2.5 | round`) is a `PyFloat` so it prints `2.0` as Jinja2 does;
 * - lists as JS arrays (a tuple is an array marked in `TUPLES`);
 * - dicts as `Map`s (insertion order, any key, no prototype to reach);
 * - `Namespace`, `Fn` (a macro, a global or a bound method), `Loop` (`loop` in a for loop, its
 *   fields computed when read) and nothing else.
 *
 * A run's variables enter through `fromPlain`, which keeps plain data only; nothing a template
 * touches is a host object, so member access can only reach a map entry or a built-in method.
 */
export type Value = string | number | boolean | null | undefined | PyFloat | Value[] | Map<string, Value> | Namespace | Fn | Loop;

/** A float whose value is integral (Python's `2.0`). */
export class PyFloat {
  constructor(readonly n: number) {}
}

/** Jinja2's `namespace(...)`: a mapping that `{% set ns.x = … %}` may assign to. */
export class Namespace {
  constructor(readonly m: Map<string, Value>) {}
}

/** What a callable may ask of the render it runs in. */
export interface CallContext {
  /** Counts `n` steps against `TEMPLATE_MAX_STEPS`. */
  charge(n: number): void;
  /** Throws the output limit when a string of `n` characters would exceed `TEMPLATE_TRANSFORM_MAX_LENGTH`. */
  checkLength(n: number): void;
}

/** A callable: positional and keyword arguments, the caller's scope (a macro's parent, as in the library), the render. */
export class Fn {
  constructor(readonly call: (args: Value[], kwargs: Map<string, Value>, scope: unknown, ctx: CallContext) => Value) {}
}

/** `loop` in round `i` of a for loop over `items`: one small object per round, its fields read as a dict's. */
export class Loop {
  constructor(
    readonly i: number,
    readonly items: readonly Value[],
  ) {}

  get(name: string): Value {
    const { i, items } = this;
    const n = items.length;
    switch (name) {
      case 'index':
        return i + 1;
      case 'index0':
        return i;
      case 'revindex':
        return n - i;
      case 'revindex0':
        return n - i - 1;
      case 'first':
        return i === 0;
      case 'last':
        return i === n - 1;
      case 'length':
        return n;
      case 'previtem':
        return i > 0 ? items[i - 1] : undefined;
      case 'nextitem':
        return i < n - 1 ? items[i + 1] : undefined;
      case 'cycle':
        return new Fn((args) => (args.length > 0 ? args[i % args.length] : undefined));
      default:
        return undefined;
    }
  }

  /** As a dict (printing it, `tojson`). */
  toMap(): Map<string, Value> {
    return new Map(LOOP_FIELDS.map((k) => [k, this.get(k)]));
  }
}
const LOOP_FIELDS = ['index', 'index0', 'revindex', 'revindex0', 'first', 'last', 'length', 'previtem', 'nextitem'];

/** Arrays that are tuples (`(1, 2)`): they print as tuples. */
export const TUPLES = new WeakSet<Value[]>();
export function tuple(xs: Value[]): Value[] {
  TUPLES.add(xs);
  return xs;
}

export const isFloat = (v: Value): boolean => v instanceof PyFloat || (typeof v === 'number' && !Number.isInteger(v));
export const isInt = (v: Value): v is number => typeof v === 'number' && Number.isInteger(v);
export const isNum = (v: Value): v is number | PyFloat => typeof v === 'number' || v instanceof PyFloat;
/** A number's JS value (a PyFloat's included). */
export const numOf = (v: number | PyFloat): number => (typeof v === 'number' ? v : v.n);
/** A float result: integral values are boxed so they print as floats. */
export const float = (n: number): number | PyFloat => (Number.isInteger(n) ? new PyFloat(n) : n);
export const isMap = (v: Value): v is Map<string, Value> => v instanceof Map;

/** The raw value the library compared with `==` / `in` (a number for a PyFloat, the map of a namespace). */
export function raw(v: Value): unknown {
  return v instanceof PyFloat ? v.n : v instanceof Namespace ? v.m : v;
}

/** The library's value type names, as its error messages name them. */
export function typeName(v: Value): string {
  switch (typeof v) {
    case 'string':
      return 'StringValue';
    case 'number':
      return Number.isInteger(v) ? 'IntegerValue' : 'FloatValue';
    case 'boolean':
      return 'BooleanValue';
    case 'undefined':
      return 'UndefinedValue';
    default:
      if (v === null) return 'NullValue';
      if (v instanceof PyFloat) return 'FloatValue';
      if (Array.isArray(v)) return TUPLES.has(v) ? 'TupleValue' : 'ArrayValue';
      if (v instanceof Map) return 'ObjectValue';
      if (v instanceof Namespace) return 'NamespaceValue';
      if (v instanceof Loop) return 'ObjectValue';
      return 'FunctionValue';
  }
}

/** Python truthiness (empty lists and dicts are false). */
export function truthy(v: Value): boolean {
  if (typeof v === 'object' && v !== null) {
    if (Array.isArray(v)) return v.length > 0;
    if (v instanceof Map) return v.size > 0;
    if (v instanceof PyFloat) return v.n !== 0;
    return true;
  }
  return !!v;
}

/**
 * A run's variables as template values: plain data only. Objects contribute their own enumerable
 * data properties (never accessors, never the prototype chain); functions, symbols, bigints and
 * class instances other than arrays and plain objects become None. Cycles become None.
 */
export function fromPlain(input: unknown, seen?: Set<object>): Value {
  switch (typeof input) {
    case 'string':
    case 'number':
    case 'boolean':
    case 'undefined':
      return input;
    case 'object': {
      if (input === null) return null;
      seen ??= new Set();
      if (seen.has(input)) return null;
      seen.add(input);
      try {
        if (Array.isArray(input)) {
          const out: Value[] = new Array<Value>(input.length);
          for (let i = 0; i < input.length; i++) {
            const d = Object.getOwnPropertyDescriptor(input, i);
            out[i] = d && 'value' in d ? fromPlain(d.value, seen) : undefined;
          }
          return out;
        }
        const proto = Object.getPrototypeOf(input) as unknown;
        if (proto !== Object.prototype && proto !== null) return null;
        const m = new Map<string, Value>();
        for (const key of Object.keys(input)) {
          const d = Object.getOwnPropertyDescriptor(input, key);
          if (d && 'value' in d) m.set(key, fromPlain(d.value, seen));
        }
        return m;
      } finally {
        seen.delete(input);
      }
    }
    default:
      return null;
  }
}

function reprString(s: string): string {
  const quote = s.includes("'") && !s.includes('"') ? '"' : "'";
  const body = s.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/\r/g, '\\r').replace(/\t/g, '\\t');
  return quote + (quote === "'" ? body.replace(/'/g, "\\'") : body) + quote;
}

/** Python's `repr` of a value inside a list or dict, as Jinja2 prints containers. */
function repr(v: Value): string {
  if (typeof v === 'string') return reprString(v);
  if (v === null || v === undefined) return 'None';
  return display(v);
}

function numberText(v: number | PyFloat): string {
  if (typeof v === 'number') return String(v);
  return Object.is(v.n, -0) ? '-0.0' : v.n.toFixed(1);
}

/**
 * How `{{ value }}` prints, as Jinja2 (Python's `str`): containers as Python literals
 * (`{'a': 1}`, `[1, 'x']`), booleans `True` / `False`; None and undefined print nothing (as
 * Dovetail's renderer always did).
 */
export function display(v: Value): string {
  switch (typeof v) {
    case 'string':
      return v;
    case 'number':
      return String(v);
    case 'boolean':
      return v ? 'True' : 'False';
    case 'undefined':
      return '';
    default:
      if (v === null) return '';
      if (v instanceof PyFloat) return numberText(v);
      if (Array.isArray(v)) {
        if (TUPLES.has(v)) return v.length === 1 ? `(${repr(v[0])},)` : `(${v.map(repr).join(', ')})`;
        return `[${v.map(repr).join(', ')}]`;
      }
      if (v instanceof Map) {
        let out = '';
        for (const [k, x] of v) out += `${out ? ', ' : ''}${reprString(k)}: ${repr(x)}`;
        return `{${out}}`;
      }
      if (v instanceof Namespace) return '<Namespace>';
      if (v instanceof Loop) return display(v.toMap());
      return '<function>';
  }
}

/** The library's `String(value)` for `~`, `+` of strings and `join` without our filter (floats as Python prints them). */
export function plainText(v: Value): string {
  if (v instanceof PyFloat) return numberText(v);
  if (Array.isArray(v) || v instanceof Map || v instanceof Namespace || v instanceof Loop) return toJson(v, {}, 0, false);
  return String(v);
}

export interface JsonOptions {
  readonly indent?: number | null;
  readonly ensureAscii?: boolean;
  readonly separators?: readonly [string, string] | null;
  readonly sortKeys?: boolean;
}

const NON_ASCII = /[\x7f-\uffff]/g;
const asciiSafe = (s: string): string => s.replace(NON_ASCII, (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'));

/** Jinja2's `tojson` (Python's `json.dumps` spacing), as the library writes it. */
export function toJson(v: Value, options: JsonOptions, depth = 0, undefinedToNull = true): string {
  const { indent = null, ensureAscii = false, separators = null, sortKeys = false } = options;
  const [itemSep, keySep] = separators ?? (indent ? [',', ': '] : [', ', ': ']);
  if (v === null) return 'null';
  if (v === undefined) return undefinedToNull ? 'null' : 'undefined';
  if (typeof v === 'number' || typeof v === 'boolean') return JSON.stringify(v);
  if (v instanceof PyFloat) return JSON.stringify(v.n);
  if (typeof v === 'string') return ensureAscii ? asciiSafe(JSON.stringify(v)) : JSON.stringify(v);
  if (v instanceof Loop) return toJson(v.toMap(), options, depth, undefinedToNull);
  const pad = indent ? ' '.repeat(indent) : '';
  const base = '\n' + pad.repeat(depth);
  const child = base + pad;
  if (Array.isArray(v)) {
    const core = v.map((x) => toJson(x, options, depth + 1, undefinedToNull));
    return indent && core.length > 0 ? `[${child}${core.join(`${itemSep}${child}`)}${base}]` : `[${core.join(itemSep)}]`;
  }
  if (v instanceof Map || v instanceof Namespace) {
    let entries = [...(v instanceof Map ? v : v.m)];
    if (sortKeys) entries = entries.sort(([a], [b]) => a.localeCompare(b));
    const core = entries.map(([k, x]) => {
      const key = ensureAscii ? asciiSafe(JSON.stringify(k)) : JSON.stringify(k);
      const s = `${key}${keySep}${toJson(x, options, depth + 1, undefinedToNull)}`;
      return indent ? `${child}${s}` : s;
    });
    return indent && core.length > 0 ? `{${core.join(itemSep)}${base}}` : `{${core.join(itemSep)}}`;
  }
  throw new Error(`Cannot convert to JSON: ${typeName(v)}`);
}

/** Ordering for sort, min, max and dictsort: numbers (booleans as 0/1) with numbers, strings with strings. */
export function compare(a: Value, b: Value, caseSensitive = false): number {
  if (a === null && b === null) return 0;
  if (a === undefined && b === undefined) return 0;
  if (a === null || b === null || a === undefined || b === undefined) throw new Error(`Cannot compare ${typeName(a)} with ${typeName(b)}`);
  const numeric = (x: Value): x is number | PyFloat | boolean => isNum(x) || typeof x === 'boolean';
  if (numeric(a) && numeric(b)) {
    const x = typeof a === 'boolean' ? Number(a) : numOf(a);
    const y = typeof b === 'boolean' ? Number(b) : numOf(b);
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (typeName(a) !== typeName(b)) throw new Error(`Cannot compare different types: ${typeName(a)} and ${typeName(b)}`);
  if (typeof a === 'string' && typeof b === 'string') {
    const x = caseSensitive ? a : a.toLowerCase();
    const y = caseSensitive ? b : b.toLowerCase();
    return x < y ? -1 : x > y ? 1 : 0;
  }
  throw new Error(`Cannot compare type: ${typeName(a)}`);
}

/** `item.a.b` / `item.0` for filters' `attribute=` arguments. */
export function attributeOf(item: Value, path: string): Value {
  let cur = item;
  for (const part of path.split('.')) {
    if (cur instanceof Map) cur = cur.has(part) ? cur.get(part) : undefined;
    else if (cur instanceof Namespace) cur = cur.m.has(part) ? cur.m.get(part) : undefined;
    else if (cur instanceof Loop) cur = cur.get(part);
    else if (Array.isArray(cur)) {
      const i = Number.parseInt(part, 10);
      if (Number.isNaN(i) || i < 0 || i >= cur.length) return undefined;
      cur = cur[i];
    } else return undefined;
  }
  return cur;
}
