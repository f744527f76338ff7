import { Environment, Interpreter, parse, tokenize } from '@huggingface/jinja';
import { boundedReplace, FILTERS, TESTS, type FilterContext } from './filters.js';
import { TemplateLimitError, type RenderLimits } from './render-limits.js';
import { bool, display, fn, fromPlain, isArray, isKwargs, isNumber, isString, list, mapping, none, num, str, type RuntimeValue } from './runtime-values.js';

/** A parsed template (the syntax tree the interpreter walks). */
export type Program = ReturnType<typeof parse>;
interface Node {
  readonly type: string;
}

/** Parses Jinja2 source as Jinja2's defaults do (no `trim_blocks` / `lstrip_blocks`); throws its syntax error. */
export function parseTemplate(source: string): Program {
  return parse(tokenize(source, {}));
}

/**
 * The interpreter's internal methods this file wraps. They are `private` in the library's types
 * but are ordinary methods the interpreter calls through `this`, so own properties on the instance
 * take their place (no fork, no patched prototype).
 */
interface Internals {
  evaluate(node: Node | undefined, env: Environment): RuntimeValue;
  evaluateBlock(nodes: Node[], env: Environment): RuntimeValue;
  evaluateBinaryExpression(node: Node & { operator: { value: string }; left: Node; right: Node }, env: Environment): RuntimeValue;
  evaluateCallExpression(node: Node & { callee: Node; args: Node[] }, env: Environment): RuntimeValue;
  evaluateTestExpression(node: Node & { operand: Node; test: { value: string }; negate: boolean }, env: Environment): RuntimeValue;
  applyFilter(operand: RuntimeValue, filter: Node, env: Environment): RuntimeValue;
  evaluateArguments(args: Node[], env: Environment): [RuntimeValue[], Map<string, RuntimeValue>];
}

/** An already evaluated value standing in for a syntax node, so a wrapped method can hand evaluated operands to the library's. */
const VALUE = '__DovetailValue';
/** Nesting of evaluations (a macro calling itself adds a few per call); far below the JavaScript stack's. */
const MAX_DEPTH = 400;
const valueNode = (v: RuntimeValue): Node => ({ type: VALUE, value: v }) as unknown as Node;

/**
 * Renders a parsed template over plain data with @huggingface/jinja's interpreter, which walks the
 * syntax tree over its own value types: a template reaches the data it was given (own data
 * properties of plain objects) and the interpreter's built-in filters, never a JavaScript object,
 * function, constructor or prototype. Every evaluation counts a step; lists and strings are
 * bounded before they are built; the clock is read every 256 steps.
 */
export function renderBounded(program: Program, vars: Readonly<Record<string, unknown>>, limits: RenderLimits, now: () => number): string {
  const deadline = now() + limits.timeoutMs;
  let steps = 0;
  const charge = (n: number): void => {
    steps += n;
    if (steps > limits.maxSteps) throw new TemplateLimitError('steps', limits);
  };
  const checkLength = (n: number): void => {
    if (n > limits.maxLength) throw new TemplateLimitError('output', limits);
  };

  const env = new Environment();
  const globals: Record<string, RuntimeValue> = {
    true: bool(true),
    false: bool(false),
    none: none(),
    True: bool(true),
    False: bool(false),
    None: none(),
    range: fn((args) => range(args, charge)),
    dict: fn((args) => mapping(new Map(isKwargs(args.at(-1)) ? (args.at(-1)!.value as Map<string, RuntimeValue>) : []))),
    cycler: fn((args) => cycler(args.filter((a) => !isKwargs(a)))),
    joiner: fn((args) => joiner(args[0] && isString(args[0]) ? args[0].value : ', ')),
  };
  for (const [k, v] of Object.entries(globals)) env.setVariable(k, v);
  for (const [k, v] of Object.entries(vars)) env.setVariable(k, fromPlain(v));

  const interpreter = new Interpreter(env);
  const self = interpreter as unknown as Internals;
  const base = {
    evaluate: self.evaluate.bind(interpreter),
    evaluateBinaryExpression: self.evaluateBinaryExpression.bind(interpreter),
    evaluateCallExpression: self.evaluateCallExpression.bind(interpreter),
    evaluateTestExpression: self.evaluateTestExpression.bind(interpreter),
    applyFilter: self.applyFilter.bind(interpreter),
  };

  const ctx: FilterContext = {
    charge,
    checkLength,
    applyNamed: (name, operand, args, kwargs) => {
      const plain = args.length === 0 && kwargs.size === 0;
      const node = plain
        ? ({ type: 'Identifier', value: name } as unknown as Node)
        : ({ type: 'CallExpression', callee: { type: 'Identifier', value: name }, args: [...args.map(valueNode), ...[...kwargs].map(([k, v]) => ({ type: 'KeywordArgumentExpression', key: { type: 'Identifier', value: k }, value: valueNode(v) }))] } as unknown as Node);
      return self.applyFilter(operand, node, env);
    },
    test: (name, operand, args) => {
      const extra = TESTS[name];
      if (extra) return extra(operand, args);
      const t = env.tests.get(name);
      if (!t) throw new Error(`Unknown test: ${name}`);
      return t(...([operand, ...args] as unknown as Parameters<typeof t>));
    },
  };

  const step = (): void => {
    steps++;
    if (steps > limits.maxSteps) throw new TemplateLimitError('steps', limits);
    if ((steps & 255) === 0 && now() > deadline) throw new TemplateLimitError('time', limits);
  };

  let depth = 0;
  self.evaluate = (node, scope) => {
    if (node?.type === VALUE) return (node as unknown as { value: RuntimeValue }).value;
    step();
    // The library looks variables up under a catch-all, so a stack overflow in a recursive macro
    // would read as an undefined name: recursion ends here first, saying so.
    if (++depth > MAX_DEPTH) throw new Error(`recursion deeper than ${MAX_DEPTH} levels`);
    let v: RuntimeValue;
    try {
      v = base.evaluate(node, scope);
    } finally {
      depth--;
    }
    if (isString(v)) checkLength(v.value.length);
    else if (isArray(v) && v.value.length > limits.maxSteps) throw new TemplateLimitError('steps', limits);
    return v;
  };

  // How `{{ value }}` prints (Jinja2's str(): dicts and lists as Python literals), with the
  // output's length checked as it grows.
  // A block is also each round of a loop: an empty loop body still counts.
  self.evaluateBlock = (nodes, scope) => {
    step();
    let out = '';
    for (const node of nodes) {
      const v = self.evaluate(node, scope);
      if (v.type === 'NullValue' || v.type === 'UndefinedValue') continue;
      out += isString(v) ? v.value : display(v);
      checkLength(out.length);
    }
    return str(out);
  };

  self.evaluateBinaryExpression = (node, scope) => {
    const op = node.operator.value;
    if (op !== '*' && op !== '+') return base.evaluateBinaryExpression(node, scope);
    const left = self.evaluate(node.left, scope);
    const right = self.evaluate(node.right, scope);
    // Jinja2's `'ab' * 3` (and `3 * 'ab'`), bounded before the string is built.
    if (op === '*' && ((isString(left) && isNumber(right)) || (isNumber(left) && isString(right)))) {
      const [s, n] = isString(left) ? [left.value, (right as { value: number }).value] : [(right as { value: string }).value, (left as { value: number }).value];
      const times = Math.max(0, Math.trunc(n));
      checkLength(s.length * times);
      return str(s.repeat(times));
    }
    if (op === '+' && isArray(left) && isArray(right)) charge(left.value.length + right.value.length);
    return base.evaluateBinaryExpression({ ...node, left: valueNode(left), right: valueNode(right) }, scope);
  };

  // `s.replace(old, new)`: its result is bounded before it is built, as the `replace` filter's.
  self.evaluateCallExpression = (node, scope) => {
    const callee = node.callee as Node & { object: Node; property?: { value?: unknown }; computed?: boolean };
    if (callee.type === 'MemberExpression' && !callee.computed && callee.property?.value === 'replace') {
      const object = self.evaluate(callee.object, scope);
      if (isString(object)) {
        const [args, kwargs] = self.evaluateArguments(node.args, scope);
        return str(boundedReplace(object.value, args, kwargs, ctx));
      }
      return base.evaluateCallExpression({ ...node, callee: { ...callee, object: valueNode(object) } as Node }, scope);
    }
    return base.evaluateCallExpression(node, scope);
  };

  self.evaluateTestExpression = (node, scope) => {
    const extra = TESTS[node.test.value];
    if (!extra) return base.evaluateTestExpression(node, scope);
    const result = extra(self.evaluate(node.operand, scope), []);
    return bool(node.negate ? !result : result);
  };

  self.applyFilter = (operand, filter, scope) => {
    const f = filter as Node & { value?: string; callee?: { type: string; value?: string }; args?: Node[] };
    const name = f.type === 'Identifier' ? f.value : f.type === 'CallExpression' && f.callee?.type === 'Identifier' ? f.callee.value : undefined;
    const extra = name !== undefined && Object.hasOwn(FILTERS, name) ? FILTERS[name] : undefined;
    if (extra) {
      const [args, kwargs] = f.type === 'CallExpression' ? self.evaluateArguments(f.args ?? [], scope) : [[], new Map<string, RuntimeValue>()];
      const out = extra(operand, args, kwargs, ctx);
      if (out !== undefined) return out;
      if (f.type === 'CallExpression') return base.applyFilter(operand, { ...f, args: [...args.map(valueNode), ...[...kwargs].map(([k, v]) => ({ type: 'KeywordArgumentExpression', key: { type: 'Identifier', value: k }, value: valueNode(v) }))] } as Node, scope);
    }
    return base.applyFilter(operand, filter, scope);
  };

  const result = self.evaluate(program as unknown as Node, env);
  return isString(result) ? result.value : display(result);
}

/** `range(stop)`, `range(start, stop[, step])`: its length is counted against the step budget before the list is built. */
function range(args: RuntimeValue[], charge: (n: number) => void): RuntimeValue {
  const ns = args.map((a) => {
    if (!isNumber(a) || !Number.isInteger(a.value)) throw new Error('range() integer argument expected');
    return a.value;
  });
  const [start, stop, step] = ns.length === 1 ? [0, ns[0]!, 1] : [ns[0] ?? 0, ns[1] ?? 0, ns[2] ?? 1];
  if (step === 0) throw new Error('range() arg 3 must not be zero');
  const count = Math.max(0, Math.ceil((stop - start) / step));
  charge(count);
  const out: RuntimeValue[] = new Array<RuntimeValue>(count);
  for (let i = 0; i < count; i++) out[i] = num(start + i * step);
  return list(out);
}

/** Jinja2's `cycler(*items)`: `next()`, `current`, `reset()`. */
function cycler(items: RuntimeValue[]): RuntimeValue {
  const state = new Map<string, RuntimeValue>();
  let i = 0;
  const current = () => (items.length > 0 ? items[i % items.length]! : none());
  const sync = () => state.set('current', current());
  state.set(
    'next',
    fn(() => {
      const v = current();
      i++;
      sync();
      return v;
    }),
  );
  state.set(
    'reset',
    fn(() => {
      i = 0;
      sync();
      return none();
    }),
  );
  sync();
  return mapping(state);
}

/** Jinja2's `joiner(sep)`: '' the first time it is called, `sep` afterwards. */
function joiner(sep: string): RuntimeValue {
  let used = false;
  return fn(() => {
    if (used) return str(sep);
    used = true;
    return str('');
  });
}
