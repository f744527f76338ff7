import { display, isArray, isMapping, isNumber, isString, list, make, num, str, undef, type RuntimeValue } from './runtime-values.js';

/** What a filter may ask of the render it runs in. */
export interface FilterContext {
  /** Counts `n` steps against `TEMPLATE_MAX_STEPS`. */
  charge(n: number): void;
  /** Throws the output limit when a string of `n` characters would exceed `TEMPLATE_TRANSFORM_MAX_LENGTH`. */
  checkLength(n: number): void;
  /** Applies another filter by name (`map("upper")`). */
  applyNamed(name: string, operand: RuntimeValue, args: RuntimeValue[], kwargs: Map<string, RuntimeValue>): RuntimeValue;
  /** Runs a test by name (`select("odd")`). */
  test(name: string, operand: RuntimeValue, args: RuntimeValue[]): boolean;
}

/** A filter over interpreter values; `undefined`: not handled here, the library's filter applies. */
export type Filter = (v: RuntimeValue, args: RuntimeValue[], kwargs: Map<string, RuntimeValue>, ctx: FilterContext) => RuntimeValue | undefined;

const arg = (args: RuntimeValue[], kwargs: Map<string, RuntimeValue>, i: number, name: string): RuntimeValue | undefined => args[i] ?? kwargs.get(name);
const intArg = (v: RuntimeValue | undefined, dflt: number): number => (v && isNumber(v) ? Math.trunc(v.value) : dflt);
const strArg = (v: RuntimeValue | undefined, dflt: string): string => (v && isString(v) ? v.value : dflt);
const truthy = (v: RuntimeValue | undefined, dflt: boolean): boolean => (v ? v.__bool__().value : dflt);

function itemsOf(v: RuntimeValue, ctx: FilterContext): RuntimeValue[] | undefined {
  if (isArray(v)) return v.value;
  if (isString(v)) {
    ctx.charge(v.value.length);
    return Array.from(v.value, (c) => str(c));
  }
  if (isMapping(v)) return [...v.value.keys()].map((k) => str(k));
  return undefined;
}

function attribute(v: RuntimeValue, path: string): RuntimeValue {
  let cur = v;
  for (const part of path.split('.')) {
    if (isMapping(cur)) cur = cur.value.get(part) ?? undef();
    else if (isArray(cur) && /^\d+$/.test(part)) cur = cur.value[Number(part)] ?? undef();
    else return undef();
  }
  return cur;
}

function escapeHtml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&#34;').replace(/'/g, '&#39;');
}

/** Python's `%` formatting for `format`: `%s`, `%r`, `%d`/`%i`, `%f`/`%.Nf`, `%x`, `%%`. */
function percentFormat(fmt: string, values: RuntimeValue[]): string {
  let i = 0;
  return fmt.replace(/%(\.(\d+))?([sdifrx%])/g, (_m, _p: string | undefined, precision: string | undefined, kind: string) => {
    if (kind === '%') return '%';
    const v = values[i++];
    if (v === undefined) throw new Error('not enough arguments for format string');
    const n = isNumber(v) ? v.value : Number(v.value);
    switch (kind) {
      case 'd':
      case 'i':
        return String(Math.trunc(n));
      case 'f':
        return n.toFixed(precision === undefined ? 6 : Number(precision));
      case 'x':
        return Math.trunc(n).toString(16);
      case 'r':
        return isString(v) ? `'${v.value}'` : display(v);
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

function compare(a: RuntimeValue, b: RuntimeValue): number {
  const x = a.value as number | string;
  const y = b.value as number | string;
  return x < y ? -1 : x > y ? 1 : 0;
}

/**
 * Jinja2's filters that @huggingface/jinja lacks (it was written for chat templates), and the ones
 * whose output can grow past the input (`join`, `replace`, `indent`, `center`) with their result's
 * length checked before it is built. Everything else is the library's.
 */
export const FILTERS: Readonly<Record<string, Filter>> = {
  round(v, args, kwargs) {
    if (!isNumber(v)) return undefined;
    const precision = intArg(arg(args, kwargs, 0, 'precision'), 0);
    const method = strArg(arg(args, kwargs, 1, 'method'), 'common');
    const f = 10 ** precision;
    const x = v.value * f;
    const r = method === 'floor' ? Math.floor(x) : method === 'ceil' ? Math.ceil(x) : Math.sign(x) * Math.round(Math.abs(x));
    return new make.float(r / f);
  },
  int(v, args, kwargs) {
    if (isNumber(v)) return num(Math.trunc(v.value));
    if (isString(v)) {
      const n = Number.parseInt(v.value.trim(), intArg(arg(args, kwargs, 1, 'base'), 10));
      return Number.isNaN(n) ? (arg(args, kwargs, 0, 'default') ?? num(0)) : num(n);
    }
    return undefined;
  },
  sum(v, args, kwargs, ctx) {
    if (!isArray(v)) return undefined;
    const attr = arg(args, kwargs, 0, 'attribute');
    let total = intArg(arg(args, kwargs, 1, 'start'), 0);
    ctx.charge(v.value.length);
    for (const x of v.value) {
      const y = attr && isString(attr) ? attribute(x, attr.value) : x;
      if (!isNumber(y)) throw new Error(`sum: ${y.type} is not a number`);
      total += y.value;
    }
    return num(total);
  },
  min: (v, _a, _k, ctx) => extreme(v, ctx, -1),
  max: (v, _a, _k, ctx) => extreme(v, ctx, 1),
  count: (v) => (isArray(v) || isString(v) ? num(v.value.length) : isMapping(v) ? num(v.value.size) : undefined),
  first(v) {
    if (isString(v)) return v.value.length > 0 ? str(v.value[0]!) : undef();
    return undefined;
  },
  last(v) {
    if (isString(v)) return v.value.length > 0 ? str(v.value.at(-1)!) : undef();
    return undefined;
  },
  list(v, _a, _k, ctx) {
    const items = itemsOf(v, ctx);
    return items ? list(items.slice()) : undefined;
  },
  string: (v) => str(display(v)),
  map(v, args, kwargs, ctx) {
    if (!isArray(v) || kwargs.has('attribute')) return undefined;
    const name = args[0];
    if (!name || !isString(name)) throw new Error('map needs a filter name or attribute=');
    ctx.charge(v.value.length);
    return list(v.value.map((x) => ctx.applyNamed(name.value, x, args.slice(1), kwargs)));
  },
  select: (v, args, _k, ctx) => selectItems(v, args, ctx, true),
  reject: (v, args, _k, ctx) => selectItems(v, args, ctx, false),
  truncate(v, args, kwargs) {
    if (!isString(v)) return undefined;
    return str(truncate(v.value, intArg(arg(args, kwargs, 0, 'length'), 255), truthy(arg(args, kwargs, 1, 'killwords'), false), strArg(arg(args, kwargs, 2, 'end'), '...'), intArg(arg(args, kwargs, 3, 'leeway'), 5)));
  },
  wordcount: (v) => (isString(v) ? num(v.value.split(/\s+/).filter((w) => w !== '').length) : undefined),
  escape: (v) => str(escapeHtml(display(v))),
  e: (v) => str(escapeHtml(display(v))),
  forceescape: (v) => str(escapeHtml(display(v))),
  striptags: (v) => (isString(v) ? str(v.value.replace(/<!--[\s\S]*?-->|<[^>]*>/g, '').replace(/\s+/g, ' ').trim()) : undefined),
  urlencode: (v) => (isString(v) ? str(encodeURIComponent(v.value).replace(/%2F/g, '/')) : undefined),
  center(v, args, kwargs, ctx) {
    if (!isString(v)) return undefined;
    const width = intArg(arg(args, kwargs, 0, 'width'), 80);
    if (width <= v.value.length) return v;
    ctx.checkLength(width);
    const left = Math.floor((width - v.value.length) / 2);
    return str(' '.repeat(left) + v.value + ' '.repeat(width - v.value.length - left));
  },
  indent(v, args, kwargs, ctx) {
    if (!isString(v)) return undefined;
    const w = arg(args, kwargs, 0, 'width');
    const pad = w && isString(w) ? w.value : ' '.repeat(intArg(w, 4));
    const first = truthy(arg(args, kwargs, 1, 'first'), false);
    const blank = truthy(arg(args, kwargs, 2, 'blank'), false);
    const lines = v.value.split('\n');
    ctx.charge(lines.length);
    ctx.checkLength(v.value.length + pad.length * lines.length);
    return str(lines.map((l, i) => ((i === 0 && !first) || (!blank && l === '') ? l : pad + l)).join('\n'));
  },
  join(v, args, kwargs, ctx) {
    const items = itemsOf(v, ctx);
    if (!items) return undefined;
    const sep = strArg(arg(args, kwargs, 0, 'd'), '');
    const attr = arg(args, kwargs, 1, 'attribute');
    ctx.charge(items.length);
    const parts = items.map((x) => display(attr && isString(attr) ? attribute(x, attr.value) : x));
    ctx.checkLength(parts.reduce((n, p) => n + p.length, 0) + sep.length * Math.max(0, parts.length - 1));
    return str(parts.join(sep));
  },
  replace(v, args, kwargs, ctx) {
    if (!isString(v)) return undefined;
    return str(boundedReplace(v.value, args, kwargs, ctx));
  },
  batch(v, args, kwargs, ctx) {
    if (!isArray(v)) return undefined;
    const size = intArg(arg(args, kwargs, 0, 'linecount'), 1);
    if (size < 1) throw new Error('batch size must be at least 1');
    const fill = arg(args, kwargs, 1, 'fill_with');
    ctx.charge(v.value.length + size);
    const out: RuntimeValue[] = [];
    for (let i = 0; i < v.value.length; i += size) {
      const row = v.value.slice(i, i + size);
      if (fill) while (row.length < size) row.push(fill);
      out.push(list(row));
    }
    return list(out);
  },
  attr(v, args) {
    const name = args[0];
    return isMapping(v) && name && isString(name) ? (v.value.get(name.value) ?? undef()) : undef();
  },
  format(v, args) {
    if (!isString(v)) return undefined;
    return str(percentFormat(v.value, args));
  },
  d: (v, args, kwargs) => (v.type === 'UndefinedValue' || (truthy(arg(args, kwargs, 1, 'boolean'), false) && !v.__bool__().value) ? (args[0] ?? str('')) : v),
  tojson(_v, _args, kwargs) {
    const indent = kwargs.get('indent');
    if (indent && isNumber(indent) && indent.value > 32) throw new Error('tojson: indent must be at most 32');
    return undefined;
  },
};

function extreme(v: RuntimeValue, ctx: FilterContext, sign: 1 | -1): RuntimeValue | undefined {
  if (!isArray(v)) return undefined;
  ctx.charge(v.value.length);
  let best: RuntimeValue | undefined;
  for (const x of v.value) if (best === undefined || compare(x, best) * sign > 0) best = x;
  return best ?? undef();
}

function selectItems(v: RuntimeValue, args: RuntimeValue[], ctx: FilterContext, keep: boolean): RuntimeValue | undefined {
  if (!isArray(v)) return undefined;
  const name = args[0];
  ctx.charge(v.value.length);
  return list(v.value.filter((x) => (name && isString(name) ? ctx.test(name.value, x, args.slice(1)) : x.__bool__().value) === keep));
}

/** Python's `str.replace(old, new, count)` with the result's length checked before it is built. */
export function boundedReplace(s: string, args: RuntimeValue[], kwargs: Map<string, RuntimeValue>, ctx: FilterContext): string {
  const from = strArg(arg(args, kwargs, 0, 'old'), '');
  const to = strArg(arg(args, kwargs, 1, 'new'), '');
  const countArg = arg(args, kwargs, 2, 'count');
  const limit = countArg && isNumber(countArg) && countArg.value >= 0 ? countArg.value : Number.POSITIVE_INFINITY;
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

/** Jinja2's tests the library lacks, for `is` and `select`/`reject`. */
export const TESTS: Readonly<Record<string, (v: RuntimeValue, args: RuntimeValue[]) => boolean>> = {
  divisibleby: (v, [n]) => isNumber(v) && !!n && isNumber(n) && v.value % n.value === 0,
  in: (v, [xs]) => (xs ? (isArray(xs) ? xs.value.some((x) => x.value === v.value) : isString(xs) && isString(v) ? xs.value.includes(v.value) : isMapping(xs) && isString(v) ? xs.value.has(v.value) : false) : false),
  sameas: (v, [x]) => !!x && v.value === x.value,
  ne: (v, [x]) => !x || v.value !== x.value,
  gt: (v, [x]) => !!x && compare(v, x) > 0,
  ge: (v, [x]) => !!x && compare(v, x) >= 0,
  lt: (v, [x]) => !!x && compare(v, x) < 0,
  le: (v, [x]) => !!x && compare(v, x) <= 0,
  float: (v) => v.type === 'FloatValue',
  filter: (v) => isString(v) && Object.hasOwn(FILTERS, v.value),
};
