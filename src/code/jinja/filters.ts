import { attributeOf, type CallContext, compare, display, float, isFloat, isInt, isMap, isNum, Namespace, numOf, PyFloat, raw, toJson, truthy, typeName, type Value } from './values.js';

/** What a filter may ask of the render it runs in. */
export type FilterContext = CallContext;

/** A filter: the value it is applied to, its positional and keyword arguments. */
export type Filter = (v: Value, args: Value[], kwargs: Map<string, Value>, ctx: FilterContext) => Value;

const arg = (args: Value[], kwargs: Map<string, Value>, i: number, name: string): Value => (i < args.length ? args[i] : kwargs.get(name));
const intArg = (v: Value, dflt: number): number => (isNum(v) ? Math.trunc(numOf(v)) : dflt);
const strArg = (v: Value, dflt: string): string => (typeof v === 'string' ? v : dflt);
const boolArg = (v: Value, dflt: boolean): boolean => (v === undefined ? dflt : truthy(v));
const cannot = (name: string, v: Value): Error => new Error(`Cannot apply filter "${name}" to type: ${typeName(v)}`);
const fail = (name: string, v: Value): never => {
  throw cannot(name, v);
};

/** The items a filter iterates: a list's, a string's characters (each a step), a dict's keys. */
function itemsOf(v: Value, ctx: FilterContext): Value[] | undefined {
  if (Array.isArray(v)) return v;
  if (typeof v === 'string') {
    ctx.charge(v.length);
    return Array.from(v);
  }
  if (isMap(v)) return [...v.keys()];
  return undefined;
}

function escapeHtml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&#34;').replace(/'/g, '&#39;');
}

/** Python's `%` formatting for `format`: `%s`, `%r`, `%d`/`%i`, `%f`/`%.Nf`, `%x`, `%%`. */
function percentFormat(fmt: string, values: Value[]): string {
  let i = 0;
  return fmt.replace(/%(\.(\d+))?([sdifrx%])/g, (_m, _p: string | undefined, precision: string | undefined, kind: string) => {
    if (kind === '%') return '%';
    if (i >= values.length) throw new Error('not enough arguments for format string');
    const v = values[i++];
    const n = isNum(v) ? numOf(v) : Number(raw(v));
    switch (kind) {
      case 'd':
      case 'i':
        return String(Math.trunc(n));
      case 'f':
        return n.toFixed(precision === undefined ? 6 : Number(precision));
      case 'x':
        return Math.trunc(n).toString(16);
      case 'r':
        return typeof v === 'string' ? `'${v}'` : display(v);
      default:
        return display(v);
    }
  });
}

function truncate(s: string, length: number, killwords: boolean, end: string, leeway: number): string {
  if (s.length <= length + leeway) return s;
  if (killwords) return s.slice(0, Math.max(0, length - end.length)) + end;
  const cut = s.slice(0, Math.max(0, length - end.length));
  const space = cut.lastIndexOf(' ');
  return (space > 0 ? cut.slice(0, space) : cut) + end;
}

function extreme(name: string, v: Value, ctx: FilterContext, sign: 1 | -1): Value {
  if (!Array.isArray(v)) throw cannot(name, v);
  ctx.charge(v.length);
  let best: Value;
  let first = true;
  for (const x of v) {
    if (first || compare(x, best) * sign > 0) best = x;
    first = false;
  }
  return best;
}

function selectItems(name: string, v: Value, args: Value[], ctx: FilterContext, keep: boolean): Value {
  if (!Array.isArray(v)) throw cannot(name, v);
  const test = args[0];
  ctx.charge(v.length);
  return v.filter((x) => (typeof test === 'string' ? runTest(test, x, args.slice(1)) : truthy(x)) === keep);
}

function selectAttr(name: string, v: Value, args: Value[], ctx: FilterContext, keep: boolean): Value {
  if (!Array.isArray(v)) throw cannot(name, v);
  const attr = args[0];
  if (typeof attr !== 'string') throw new Error(`arguments of \`${name}\` must be strings`);
  const test = args[1];
  if (test !== undefined && typeof test !== 'string') throw new Error(`arguments of \`${name}\` must be strings`);
  ctx.charge(v.length);
  return v.filter((item) => {
    if (!isMap(item) && !(item instanceof Namespace)) throw new Error(`\`${name}\` can only be applied to array of objects`);
    const m = isMap(item) ? item : item.m;
    const result = m.has(attr) ? (test === undefined ? truthy(m.get(attr)) : runTest(test, m.get(attr), args.slice(2))) : false;
    return result === keep;
  });
}

/** Python's `str.replace(old, new, count)` with the result's length checked before it is built. */
export function boundedReplace(s: string, args: Value[], kwargs: Map<string, Value>, ctx: FilterContext): string {
  const from = strArg(arg(args, kwargs, 0, 'old'), '');
  const to = strArg(arg(args, kwargs, 1, 'new'), '');
  const countArg = arg(args, kwargs, 2, 'count');
  const limit = isNum(countArg) && numOf(countArg) >= 0 ? numOf(countArg) : Number.POSITIVE_INFINITY;
  const pieces = from === '' ? ['', ...Array.from(s), ''] : s.split(from);
  const n = Math.min(pieces.length - 1, limit);
  ctx.charge(n);
  ctx.checkLength(s.length + n * (to.length - from.length));
  if (from === '') {
    const chars = pieces.slice(1, -1);
    let out = '';
    for (let i = 0; i < chars.length; i++) out += (i < n ? to : '') + chars[i];
    return out + (chars.length < n ? to : '');
  }
  if (n === pieces.length - 1) return pieces.join(to);
  return pieces.slice(0, n + 1).join(to) + from + pieces.slice(n + 1).join(from);
}

/** Jinja2's `sort(reverse, case_sensitive, attribute)`. */
function sortList(v: Value[], args: Value[], kwargs: Map<string, Value>, ctx: FilterContext): Value[] {
  const reverse = boolArg(arg(args, kwargs, 0, 'reverse'), false);
  const caseSensitive = boolArg(arg(args, kwargs, 1, 'case_sensitive'), false);
  const attribute = arg(args, kwargs, 2, 'attribute');
  const key = (x: Value): Value => (attribute === undefined || attribute === null ? x : attributeOf(x, isNum(attribute) ? String(numOf(attribute)) : String(attribute)));
  ctx.charge(v.length);
  return v.slice().sort((a, b) => {
    const r = compare(key(a), key(b), caseSensitive);
    return reverse ? -r : r;
  });
}

function dictsort(m: Map<string, Value>, args: Value[], kwargs: Map<string, Value>): Value[] {
  const caseSensitive = boolArg(arg(args, kwargs, 0, 'case_sensitive'), false);
  const by = strArg(arg(args, kwargs, 1, 'by'), 'key');
  if (by !== 'key' && by !== 'value') throw new Error("by must be either 'key' or 'value'");
  const reverse = boolArg(arg(args, kwargs, 2, 'reverse'), false);
  const i = by === 'key' ? 0 : 1;
  return [...m]
    .map(([k, x]): Value[] => [k, x])
    .sort((a, b) => {
      const r = compare(a[i], b[i], caseSensitive);
      return reverse ? -r : r;
    });
}

export const itemsOfMap = (m: Map<string, Value>): Value[] => [...m].map(([k, x]): Value[] => [k, x]);

function toInt(name: string, v: Value, args: Value[], kwargs: Map<string, Value>): Value {
  if (isNum(v)) return Math.trunc(numOf(v));
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'string') {
    const n = Number.parseInt(v.trim(), intArg(arg(args, kwargs, 1, 'base'), 10));
    const dflt = arg(args, kwargs, 0, 'default');
    return Number.isNaN(n) ? (dflt ?? 0) : n;
  }
  throw cannot(name, v);
}

function toFloat(name: string, v: Value, args: Value[], kwargs: Map<string, Value>): Value {
  if (isNum(v)) return float(numOf(v));
  if (typeof v === 'boolean') return float(v ? 1 : 0);
  if (typeof v === 'string') {
    const n = Number.parseFloat(v);
    return Number.isNaN(n) ? (arg(args, kwargs, 0, 'default') ?? new PyFloat(0)) : float(n);
  }
  throw cannot(name, v);
}

function lengthOf(name: string, v: Value): number {
  if (Array.isArray(v) || typeof v === 'string') return v.length;
  if (isMap(v)) return v.size;
  throw cannot(name, v);
}

const dflt: Filter = (v, args, kwargs) => (v === undefined || (boolArg(arg(args, kwargs, 1, 'boolean'), false) && !truthy(v)) ? (args.length > 0 ? args[0] : '') : v);
const escape: Filter = (v) => escapeHtml(display(v));

/**
 * Jinja2's filters as @huggingface/jinja 0.5.11 applies them, plus the ones it lacks (`round`,
 * `sum`, `map("filter")`, `select`, `truncate`, `format`, …). Those whose output can grow past
 * their input (`join`, `replace`, `indent`, `center`, `batch`) check the result's length or count
 * its items against the step budget before it is built.
 */
export const FILTERS: Readonly<Record<string, Filter>> = {
  safe: (v) => v,
  tojson(v, _args, kwargs) {
    const indent = kwargs.get('indent');
    if (indent !== undefined && indent !== null && !isInt(indent)) throw new Error('If set, indent must be a number');
    if (isInt(indent) && indent > 32) throw new Error('tojson: indent must be at most 32');
    const seps = kwargs.get('separators');
    let separators: [string, string] | null = null;
    if (Array.isArray(seps)) {
      if (seps.length !== 2 || typeof seps[0] !== 'string' || typeof seps[1] !== 'string') throw new Error('separators must be a tuple of two strings');
      separators = [seps[0], seps[1]];
    }
    return toJson(v, { indent: isInt(indent) ? indent : null, ensureAscii: boolArg(kwargs.get('ensure_ascii'), false), sortKeys: boolArg(kwargs.get('sort_keys'), false), separators });
  },
  length: (v) => lengthOf('length', v),
  count: (v) => lengthOf('count', v),
  list(v, _a, _k, ctx) {
    const items = itemsOf(v, ctx);
    if (!items) throw cannot('list', v);
    return items.slice();
  },
  first(v, _a, _k, ctx) {
    if (typeof v === 'string') return v.length > 0 ? v[0] : undefined;
    const items = itemsOf(v, ctx);
    if (!items) throw cannot('first', v);
    return items[0];
  },
  last(v, _a, _k, ctx) {
    if (typeof v === 'string') return v.length > 0 ? v.at(-1) : undefined;
    const items = itemsOf(v, ctx);
    if (!items) throw cannot('last', v);
    return items.at(-1);
  },
  reverse(v, _a, _k, ctx) {
    if (typeof v === 'string') return Array.from(v).reverse().join('');
    if (!Array.isArray(v)) throw cannot('reverse', v);
    ctx.charge(v.length);
    return v.slice().reverse();
  },
  sort(v, args, kwargs, ctx) {
    if (!Array.isArray(v)) throw cannot('sort', v);
    return sortList(v, args, kwargs, ctx);
  },
  unique(v, _a, _k, ctx) {
    if (!Array.isArray(v)) throw cannot('unique', v);
    ctx.charge(v.length);
    const seen = new Set<unknown>();
    return v.filter((x) => {
      const k = raw(x);
      if (seen.has(k)) return false;
      seen.add(k);
      return true;
    });
  },
  join(v, args, kwargs, ctx) {
    const items = itemsOf(v, ctx);
    if (!items) throw cannot('join', v);
    const sep = strArg(arg(args, kwargs, 0, 'd'), strArg(kwargs.get('separator'), ''));
    const attr = arg(args, kwargs, 1, 'attribute');
    ctx.charge(items.length);
    const parts = items.map((x) => display(typeof attr === 'string' ? attributeOf(x, attr) : x));
    ctx.checkLength(parts.reduce((n, p) => n + p.length, 0) + sep.length * Math.max(0, parts.length - 1));
    return parts.join(sep);
  },
  string: (v) => display(v),
  upper: (v) => (typeof v === 'string' ? v.toUpperCase() : fail('upper', v)),
  lower: (v) => (typeof v === 'string' ? v.toLowerCase() : fail('lower', v)),
  title: (v) => (typeof v === 'string' ? v.replace(/\b\w/g, (c) => c.toUpperCase()) : fail('title', v)),
  capitalize: (v) => (typeof v === 'string' ? v.charAt(0).toUpperCase() + v.slice(1) : fail('capitalize', v)),
  trim: (v) => (typeof v === 'string' ? v.trim() : fail('trim', v)),
  abs: (v) => (isNum(v) ? (isFloat(v) ? float(Math.abs(numOf(v))) : Math.abs(numOf(v))) : fail('abs', v)),
  int: (v, args, kwargs) => toInt('int', v, args, kwargs),
  float: (v, args, kwargs) => toFloat('float', v, args, kwargs),
  bool: (v) => truthy(v),
  items: (v) => (isMap(v) ? itemsOfMap(v) : fail('items', v)),
  keys: (v) => (isMap(v) ? [...v.keys()] : fail('keys', v)),
  values: (v) => (isMap(v) ? [...v.values()] : fail('values', v)),
  dictsort: (v, args, kwargs) => (isMap(v) ? dictsort(v, args, kwargs) : fail('dictsort', v)),
  default: dflt,
  d: dflt,
  round(v, args, kwargs) {
    if (!isNum(v)) throw cannot('round', v);
    const precision = intArg(arg(args, kwargs, 0, 'precision'), 0);
    const method = strArg(arg(args, kwargs, 1, 'method'), 'common');
    const f = 10 ** precision;
    const x = numOf(v) * f;
    const r = method === 'floor' ? Math.floor(x) : method === 'ceil' ? Math.ceil(x) : Math.sign(x) * Math.round(Math.abs(x));
    return float(r / f);
  },
  sum(v, args, kwargs, ctx) {
    if (!Array.isArray(v)) throw cannot('sum', v);
    const attr = arg(args, kwargs, 0, 'attribute');
    const start = arg(args, kwargs, 1, 'start');
    let total = isNum(start) ? numOf(start) : 0;
    let anyFloat = start !== undefined && isFloat(start);
    ctx.charge(v.length);
    for (const x of v) {
      const y = typeof attr === 'string' ? attributeOf(x, attr) : x;
      if (!isNum(y)) throw new Error(`sum: ${typeName(y)} is not a number`);
      anyFloat ||= isFloat(y);
      total += numOf(y);
    }
    return anyFloat ? float(total) : total;
  },
  min: (v, _a, _k, ctx) => extreme('min', v, ctx, -1),
  max: (v, _a, _k, ctx) => extreme('max', v, ctx, 1),
  map(v, args, kwargs, ctx) {
    if (!Array.isArray(v)) throw cannot('map', v);
    ctx.charge(v.length);
    if (kwargs.has('attribute')) {
      const attr = kwargs.get('attribute');
      if (typeof attr !== 'string') throw new Error('attribute must be a string');
      const fallback = kwargs.get('default');
      return v.map((item) => {
        const x = attributeOf(item, attr);
        return x === undefined ? fallback : x;
      });
    }
    const name = args[0];
    if (typeof name !== 'string') throw new Error('map needs a filter name or attribute=');
    return v.map((x) => applyFilter(name, x, args.slice(1), kwargs, ctx));
  },
  select: (v, args, _k, ctx) => selectItems('select', v, args, ctx, true),
  reject: (v, args, _k, ctx) => selectItems('reject', v, args, ctx, false),
  selectattr: (v, args, _k, ctx) => selectAttr('selectattr', v, args, ctx, true),
  rejectattr: (v, args, _k, ctx) => selectAttr('rejectattr', v, args, ctx, false),
  truncate(v, args, kwargs) {
    if (typeof v !== 'string') throw cannot('truncate', v);
    return truncate(v, intArg(arg(args, kwargs, 0, 'length'), 255), boolArg(arg(args, kwargs, 1, 'killwords'), false), strArg(arg(args, kwargs, 2, 'end'), '...'), intArg(arg(args, kwargs, 3, 'leeway'), 5));
  },
  wordcount: (v) => (typeof v === 'string' ? v.split(/\s+/).filter((w) => w !== '').length : fail('wordcount', v)),
  escape,
  e: escape,
  forceescape: escape,
  striptags: (v) => (typeof v === 'string' ? v.replace(/<!--[\s\S]*?-->|<[^>]*>/g, '').replace(/\s+/g, ' ').trim() : fail('striptags', v)),
  urlencode: (v) => (typeof v === 'string' ? encodeURIComponent(v).replace(/%2F/g, '/') : fail('urlencode', v)),
  center(v, args, kwargs, ctx) {
    if (typeof v !== 'string') throw cannot('center', v);
    const width = intArg(arg(args, kwargs, 0, 'width'), 80);
    if (width <= v.length) return v;
    ctx.checkLength(width);
    const left = Math.floor((width - v.length) / 2);
    return ' '.repeat(left) + v + ' '.repeat(width - v.length - left);
  },
  indent(v, args, kwargs, ctx) {
    if (typeof v !== 'string') throw cannot('indent', v);
    const w = arg(args, kwargs, 0, 'width');
    const pad = typeof w === 'string' ? w : ' '.repeat(Math.max(0, intArg(w, 4)));
    const first = boolArg(arg(args, kwargs, 1, 'first'), false);
    const blank = boolArg(arg(args, kwargs, 2, 'blank'), false);
    const lines = v.split('\n');
    ctx.charge(lines.length);
    ctx.checkLength(v.length + pad.length * lines.length);
    return lines.map((l, i) => ((i === 0 && !first) || (!blank && l === '') ? l : pad + l)).join('\n');
  },
  replace(v, args, kwargs, ctx) {
    if (typeof v !== 'string') throw cannot('replace', v);
    return boundedReplace(v, args, kwargs, ctx);
  },
  batch(v, args, kwargs, ctx) {
    if (!Array.isArray(v)) throw cannot('batch', v);
    const size = intArg(arg(args, kwargs, 0, 'linecount'), 1);
    if (size < 1) throw new Error('batch size must be at least 1');
    const fill = arg(args, kwargs, 1, 'fill_with');
    ctx.charge(v.length + size);
    const out: Value[] = [];
    for (let i = 0; i < v.length; i += size) {
      const row = v.slice(i, i + size);
      if (fill !== undefined) while (row.length < size) row.push(fill);
      out.push(row);
    }
    return out;
  },
  attr(v, args) {
    const name = args[0];
    return isMap(v) && typeof name === 'string' && v.has(name) ? v.get(name) : undefined;
  },
  format(v, args) {
    if (typeof v !== 'string') throw cannot('format', v);
    return percentFormat(v, args);
  },
};

/** Applies the filter `name`; an unknown name fails naming it. */
export function applyFilter(name: string, v: Value, args: Value[], kwargs: Map<string, Value>, ctx: FilterContext): Value {
  const f = Object.hasOwn(FILTERS, name) ? FILTERS[name] : undefined;
  if (!f) throw new Error(`Unknown filter: ${name}`);
  return f(v, args, kwargs, ctx);
}

const eqRaw = (a: Value, b: Value): boolean => raw(a) === raw(b);

/** Jinja2's tests (`is defined`, `select("odd")`), the library's and the ones it lacks. */
export const TESTS: Readonly<Record<string, (v: Value, args: Value[]) => boolean>> = {
  boolean: (v) => typeof v === 'boolean',
  callable: (v) => typeName(v) === 'FunctionValue',
  odd(v) {
    if (!isInt(v)) throw new Error(`cannot odd on ${typeName(v)}`);
    return v % 2 !== 0;
  },
  even(v) {
    if (!isInt(v)) throw new Error(`cannot even on ${typeName(v)}`);
    return v % 2 === 0;
  },
  false: (v) => v === false,
  true: (v) => v === true,
  none: (v) => v === null,
  string: (v) => typeof v === 'string',
  number: (v) => isNum(v),
  integer: (v) => isInt(v),
  float: (v) => isNum(v) && isFloat(v),
  iterable: (v) => (Array.isArray(v) && typeName(v) === 'ArrayValue') || typeof v === 'string',
  mapping: (v) => isMap(v),
  sequence: (v) => Array.isArray(v) || isMap(v) || typeof v === 'string',
  lower: (v) => typeof v === 'string' && v === v.toLowerCase(),
  upper: (v) => typeof v === 'string' && v === v.toUpperCase(),
  defined: (v) => v !== undefined,
  undefined: (v) => v === undefined,
  equalto: (v, [x]) => eqRaw(v, x),
  eq: (v, [x]) => eqRaw(v, x),
  divisibleby: (v, [n]) => isNum(v) && isNum(n) && numOf(v) % numOf(n) === 0,
  in: (v, [xs]) => (Array.isArray(xs) ? xs.some((x) => eqRaw(x, v)) : typeof xs === 'string' && typeof v === 'string' ? xs.includes(v) : isMap(xs) && typeof v === 'string' ? xs.has(v) : false),
  sameas: (v, [x]) => x !== undefined && eqRaw(v, x),
  ne: (v, [x]) => x === undefined || !eqRaw(v, x),
  gt: (v, [x]) => x !== undefined && compare(v, x) > 0,
  ge: (v, [x]) => x !== undefined && compare(v, x) >= 0,
  lt: (v, [x]) => x !== undefined && compare(v, x) < 0,
  le: (v, [x]) => x !== undefined && compare(v, x) <= 0,
  filter: (v) => typeof v === 'string' && Object.hasOwn(FILTERS, v),
};

/** Runs the test `name`; an unknown name fails naming it. */
export function runTest(name: string, v: Value, args: Value[]): boolean {
  const t = Object.hasOwn(TESTS, name) ? TESTS[name] : undefined;
  if (!t) throw new Error(`Unknown test: ${name}`);
  return t(v, args);
}
