import { Fn, isInt, isMap, Namespace, type CallContext, type Value } from './values.js';

/** `range(stop)`, `range(start, stop[, step])`: its length is counted against the step budget before the list is built. */
export function range(args: Value[], ctx: CallContext): Value[] {
  const ns = args.map((a) => {
    if (!isInt(a)) throw new Error('range() integer argument expected');
    return a;
  });
  const [start, stop, step] = ns.length === 1 ? [0, ns[0]!, 1] : [ns[0] ?? 0, ns[1] ?? 0, ns[2] ?? 1];
  if (step === 0) throw new Error('range() arg 3 must not be zero');
  const count = Math.max(0, Math.ceil((stop - start) / step));
  ctx.charge(count);
  const out: Value[] = new Array<Value>(count);
  for (let i = 0; i < count; i++) out[i] = start + i * step;
  return out;
}

/** Jinja2's `cycler(*items)`: `next()`, `current`, `reset()`. */
function cycler(items: Value[]): Value {
  const state = new Map<string, Value>();
  let i = 0;
  const current = (): Value => (items.length > 0 ? items[i % items.length] : null);
  const sync = () => state.set('current', current());
  state.set(
    'next',
    new Fn(() => {
      const v = current();
      i++;
      sync();
      return v;
    }),
  );
  state.set(
    'reset',
    new Fn(() => {
      i = 0;
      sync();
      return null;
    }),
  );
  sync();
  return state;
}

/** Jinja2's `joiner(sep)`: '' the first time it is called, `sep` afterwards. */
function joiner(sep: string): Value {
  let used = false;
  return new Fn(() => {
    if (used) return sep;
    used = true;
    return '';
  });
}

/** Jinja2's `namespace(mapping_or_pairs, **kwargs)`. */
function namespace(args: Value[], kwargs: Map<string, Value>): Value {
  if (args.length > 1) throw new Error(`namespace expected at most 1 argument, got ${args.length}`);
  const m = new Map<string, Value>();
  const source = args[0];
  if (isMap(source)) for (const [k, v] of source) m.set(k, v);
  else if (Array.isArray(source)) {
    for (const pair of source) {
      if (!Array.isArray(pair) || pair.length !== 2) throw new Error('namespace expected an object or an iterable of [key, value] pairs');
      if (typeof pair[0] !== 'string') throw new Error('namespace keys must be strings');
      m.set(pair[0], pair[1]);
    }
  } else if (args.length === 1) throw new Error(`'${String(source)}' object is not iterable`);
  for (const [k, v] of kwargs) m.set(k, v);
  return new Namespace(m);
}

/**
 * The names every template sees (a template's own `{% set %}` shadows them for that render only;
 * these values are shared and immutable: the factories make fresh state per call).
 */
export const GLOBALS: Readonly<Record<string, Value>> = {
  true: true,
  false: false,
  none: null,
  True: true,
  False: false,
  None: null,
  range: new Fn((args, _kwargs, _scope, ctx) => range(args, ctx)),
  dict: new Fn((_args, kwargs) => new Map(kwargs)),
  cycler: new Fn((args) => cycler(args)),
  joiner: new Fn((args) => joiner(typeof args[0] === 'string' ? args[0] : ', ')),
  namespace: new Fn(namespace),
};
