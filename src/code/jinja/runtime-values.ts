import { Environment } from '@huggingface/jinja';

/** A value of @huggingface/jinja's interpreter, as this code sees it (its classes are not exported; see `make`). */
export interface RuntimeValue {
  readonly type: string;
  readonly value: unknown;
  __bool__(): { readonly value: boolean };
  toString(): string;
}

/**
 * The interpreter's value classes, taken from values it builds itself: the package exports only
 * `Environment`, `Interpreter`, `parse` and `tokenize`, and its own code tests values with
 * `instanceof`, so new values must come from these very classes.
 */
function classOf<T>(value: unknown): new (v: T) => RuntimeValue {
  const probe = new Environment();
  return probe.set('probe', value).constructor as unknown as new (v: T) => RuntimeValue;
}

export const make = {
  string: classOf<string>(''),
  integer: classOf<number>(1),
  float: classOf<number>(1.5),
  boolean: classOf<boolean>(true),
  null: classOf<null>(null),
  undefined: classOf<undefined>(undefined),
  array: classOf<RuntimeValue[]>([]),
  object: classOf<Map<string, RuntimeValue>>({}),
  function: classOf<(args: RuntimeValue[]) => RuntimeValue>(() => undefined),
};

export const str = (s: string): RuntimeValue => new make.string(s);
export const num = (n: number): RuntimeValue => (Number.isInteger(n) ? new make.integer(n) : new make.float(n));
export const bool = (b: boolean): RuntimeValue => new make.boolean(b);
export const list = (xs: RuntimeValue[]): RuntimeValue => new make.array(xs);
export const none = (): RuntimeValue => new make.null(null);
export const undef = (): RuntimeValue => new make.undefined(undefined);
export const fn = (f: (args: RuntimeValue[]) => RuntimeValue): RuntimeValue => new make.function(f);
export const mapping = (m: Map<string, RuntimeValue>): RuntimeValue => new make.object(m);

export const isString = (v: RuntimeValue): v is RuntimeValue & { value: string } => v.type === 'StringValue';
export const isNumber = (v: RuntimeValue): v is RuntimeValue & { value: number } => v.type === 'IntegerValue' || v.type === 'FloatValue';
export const isArray = (v: RuntimeValue): v is RuntimeValue & { value: RuntimeValue[] } => v.type === 'ArrayValue' || v.type === 'TupleValue';
export const isMapping = (v: RuntimeValue): v is RuntimeValue & { value: Map<string, RuntimeValue> } => v.type === 'ObjectValue' || v.type === 'KeywordArgumentsValue' || v.type === 'NamespaceValue';
export const isKwargs = (v: RuntimeValue | undefined): v is RuntimeValue & { value: Map<string, RuntimeValue> } => v?.type === 'KeywordArgumentsValue';

/**
 * A run's variables as interpreter values: plain data only. Objects contribute their own
 * enumerable data properties (never accessors, never the prototype chain); functions, symbols,
 * bigints and class instances other than arrays and plain objects become None. Cycles become None.
 */
export function fromPlain(input: unknown, seen: Set<object> = new Set()): RuntimeValue {
  switch (typeof input) {
    case 'string':
      return str(input);
    case 'number':
      return num(input);
    case 'boolean':
      return bool(input);
    case 'undefined':
      return undef();
    case 'object': {
      if (input === null || seen.has(input)) return none();
      seen.add(input);
      try {
        if (Array.isArray(input)) {
          const out: RuntimeValue[] = [];
          for (let i = 0; i < input.length; i++) out.push(fromPlain(Object.getOwnPropertyDescriptor(input, i)?.value, seen));
          return list(out);
        }
        const proto = Object.getPrototypeOf(input) as unknown;
        if (proto !== Object.prototype && proto !== null) return none();
        const m = new Map<string, RuntimeValue>();
        for (const key of Object.keys(input)) {
          const d = Object.getOwnPropertyDescriptor(input, key);
          if (d && 'value' in d) m.set(key, fromPlain(d.value, seen));
        }
        return mapping(m);
      } finally {
        seen.delete(input);
      }
    }
    default:
      return none();
  }
}

function reprString(s: string): string {
  const quote = s.includes("'") && !s.includes('"') ? '"' : "'";
  const body = s.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/\r/g, '\\r').replace(/\t/g, '\\t');
  return quote + (quote === "'" ? body.replace(/'/g, "\\'") : body) + quote;
}

/** Python's `repr` of a value inside a list or dict, as Jinja2 prints containers. */
function repr(v: RuntimeValue): string {
  switch (v.type) {
    case 'StringValue':
      return reprString(v.value as string);
    case 'NullValue':
    case 'UndefinedValue':
      return 'None';
    default:
      return display(v);
  }
}

/**
 * How `{{ value }}` prints, as Jinja2 (Python's `str`): containers as Python literals
 * (`{'a': 1}`, `[1, 'x']`), booleans `True` / `False`; None and undefined print nothing (as
 * Dovetail's renderer always did).
 */
export function display(v: RuntimeValue): string {
  switch (v.type) {
    case 'NullValue':
    case 'UndefinedValue':
      return '';
    case 'BooleanValue':
      return v.value ? 'True' : 'False';
    case 'ArrayValue':
      return `[${(v.value as RuntimeValue[]).map(repr).join(', ')}]`;
    case 'TupleValue': {
      const xs = v.value as RuntimeValue[];
      return xs.length === 1 ? `(${repr(xs[0]!)},)` : `(${xs.map(repr).join(', ')})`;
    }
    case 'ObjectValue':
    case 'KeywordArgumentsValue':
      return `{${[...(v.value as Map<string, RuntimeValue>)].map(([k, x]) => `${reprString(k)}: ${repr(x)}`).join(', ')}}`;
    case 'NamespaceValue':
      return '<Namespace>';
    case 'FunctionValue':
      return '<function>';
    default:
      return v.toString();
  }
}
