import { parse, tokenize } from '@huggingface/jinja';
import { applyFilter, boundedReplace, itemsOfMap, runTest } from './filters.js';
import { GLOBALS } from './globals.js';
import { TemplateLimitError, type RenderLimits } from './render-limits.js';
import { compare, display, float, Fn, Loop, PyFloat, fromPlain, isFloat, isMap, isNum, Namespace, numOf, plainText, raw, truthy, tuple, typeName, type CallContext, type Value } from './values.js';

/** A parsed template (the syntax tree @huggingface/jinja's parser builds). */
export type Program = ReturnType<typeof parse>;

/** Parses Jinja2 source as Jinja2's defaults do (no `trim_blocks` / `lstrip_blocks`); throws its syntax error. */
export function parseTemplate(source: string): Program {
  return parse(tokenize(source, {}));
}

/** A node of the library's syntax tree, with the fields this evaluator reads (see its `ast.ts`). */
interface Node {
  readonly type: string;
  readonly value?: unknown;
  readonly body?: Node[];
  readonly test?: Node;
  readonly alternate?: Node[];
  readonly loopvar?: Node;
  readonly iterable?: Node;
  readonly defaultBlock?: Node[];
  readonly assignee?: Node;
  readonly name?: Node;
  readonly args?: Node[];
  readonly object?: Node;
  readonly property?: Node;
  readonly computed?: boolean;
  readonly callee?: Node;
  readonly operator?: { readonly value: string };
  readonly left?: Node;
  readonly right?: Node;
  readonly operand?: Node;
  readonly filter?: Node;
  readonly lhs?: Node;
  readonly negate?: boolean;
  readonly argument?: Node;
  readonly start?: Node;
  readonly stop?: Node;
  readonly step?: Node;
  readonly key?: Node;
  readonly call?: Node;
  readonly callerArgs?: Node[];
  readonly condition?: Node;
  readonly trueExpr?: Node;
  readonly falseExpr?: Node;
}

/** Nesting of evaluations (a macro calling itself adds a few per call); far below the JavaScript stack's. */
const MAX_DEPTH = 400;

/** Variables of one block level; a name not found here is looked up in the parent. */
class Scope {
  readonly vars = new Map<string, Value>();
  constructor(readonly parent: Scope | undefined) {}
  lookup(name: string): Value {
    if (this.vars.has(name)) return this.vars.get(name);
    for (let s = this.parent; s; s = s.parent) if (s.vars.has(name)) return s.vars.get(name);
    return undefined;
  }
}

const GLOBAL_SCOPE = new Scope(undefined);
for (const [k, v] of Object.entries(GLOBALS)) GLOBAL_SCOPE.vars.set(k, v);

const enum Ctrl {
  None,
  Break,
  Continue,
}

/** No keyword arguments (shared: nothing writes to a call's keyword arguments). */
const NO_KWARGS: Map<string, Value> = new Map();

/** Not a method: the member is read as undefined. */
const NO_METHOD = Symbol('no method');

/**
 * Renders a parsed template over plain data by walking its syntax tree: a template reaches the data
 * it was given (own data properties of plain objects, converted by `fromPlain`), built-in methods
 * of strings and dicts, filters, tests and globals, never a JavaScript object, function,
 * constructor or prototype. Every evaluation counts a step; lists and strings are bounded before
 * they are built; the clock is read every 256 steps.
 */
export function renderBounded(program: Program, vars: Readonly<Record<string, unknown>>, limits: RenderLimits, now: () => number): string {
  const root = new Scope(GLOBAL_SCOPE);
  for (const k of Object.keys(vars)) root.vars.set(k, fromPlain(vars[k]));
  return new Render(limits, now).block((program as unknown as Node).body!, root);
}

class Render implements CallContext {
  #steps = 0;
  #depth = 0;
  #ctrl = Ctrl.None;
  readonly #deadline: number;

  constructor(
    readonly limits: RenderLimits,
    readonly now: () => number,
  ) {
    this.#deadline = now() + limits.timeoutMs;
  }

  charge(n: number): void {
    this.#steps += n;
    if (this.#steps > this.limits.maxSteps) throw new TemplateLimitError('steps', this.limits);
  }

  checkLength(n: number): void {
    if (n > this.limits.maxLength) throw new TemplateLimitError('output', this.limits);
  }

  #step(): void {
    const steps = ++this.#steps;
    if (steps > this.limits.maxSteps) throw new TemplateLimitError('steps', this.limits);
    if ((steps & 255) === 0 && this.now() > this.#deadline) throw new TemplateLimitError('time', this.limits);
  }

  /** A list of statements (a template, a loop round, a branch): their output joined, None and undefined printing nothing. */
  block(nodes: readonly Node[] | undefined, scope: Scope): string {
    this.#step();
    let out = '';
    if (!nodes) return out;
    for (const node of nodes) {
      const v = this.ev(node, scope);
      if (v !== null && v !== undefined) {
        out += typeof v === 'string' ? v : display(v);
        if (out.length > this.limits.maxLength) throw new TemplateLimitError('output', this.limits);
      }
      // `{% break %}` / `{% continue %}`: the output so far stays, the rest of the round is skipped.
      if (this.#ctrl !== Ctrl.None) break;
    }
    return out;
  }

  ev(node: Node | undefined, scope: Scope): Value {
    if (!node) return undefined;
    this.#step();
    // The JavaScript stack is far deeper; a recursive macro ends here first, saying so.
    if (this.#depth >= MAX_DEPTH) throw new Error(`recursion deeper than ${MAX_DEPTH} levels`);
    this.#depth++;
    try {
      const v = this.#eval(node, scope);
      if (typeof v === 'string') {
        if (v.length > this.limits.maxLength) throw new TemplateLimitError('output', this.limits);
      } else if (Array.isArray(v) && v.length > this.limits.maxSteps) throw new TemplateLimitError('steps', this.limits);
      return v;
    } finally {
      this.#depth--;
    }
  }

  #eval(node: Node, scope: Scope): Value {
    switch (node.type) {
      case 'StringLiteral':
        return node.value as string;
      case 'Identifier':
        return scope.lookup(node.value as string);
      case 'IntegerLiteral':
        return node.value as number;
      case 'FloatLiteral':
        return float(node.value as number);
      case 'MemberExpression':
        return this.#member(node, scope);
      case 'FilterExpression':
        return this.#filter(this.ev(node.operand, scope), node.filter!, scope);
      case 'CallExpression':
        return this.#call(node, scope);
      case 'BinaryExpression':
        return this.#binary(node, scope);
      case 'If':
        return this.block(truthy(this.ev(node.test, scope)) ? node.body : node.alternate, scope);
      case 'For':
        return this.#for(node, scope);
      case 'Set':
        return this.#set(node, scope);
      case 'Ternary':
        return truthy(this.ev(node.condition, scope)) ? this.ev(node.trueExpr, scope) : this.ev(node.falseExpr, scope);
      case 'SelectExpression':
        return truthy(this.ev(node.test, scope)) ? this.ev(node.lhs, scope) : undefined;
      case 'TestExpression': {
        const r = runTest((node.test!.value as string) ?? '', this.ev(node.operand, scope), []);
        return node.negate ? !r : r;
      }
      case 'UnaryExpression':
        return this.#unary(node, scope);
      case 'ArrayLiteral':
        return (node.value as Node[]).map((x) => this.ev(x, scope));
      case 'TupleLiteral':
        return tuple((node.value as Node[]).map((x) => this.ev(x, scope)));
      case 'ObjectLiteral': {
        const m = new Map<string, Value>();
        for (const [k, v] of node.value as Map<Node, Node>) {
          const key = this.ev(k, scope);
          if (typeof key !== 'string') throw new Error(`Object keys must be strings: got ${typeName(key)}`);
          m.set(key, this.ev(v, scope));
        }
        return m;
      }
      case 'Macro':
        return this.#macro(node, scope);
      case 'CallStatement':
        return this.#callStatement(node, scope);
      case 'FilterStatement':
        return this.#filter(this.block(node.body, scope), node.filter!, scope);
      case 'Break':
        this.#ctrl = Ctrl.Break;
        return null;
      case 'Continue':
        this.#ctrl = Ctrl.Continue;
        return null;
      case 'Comment':
        return null;
      case 'Program':
        return this.block(node.body, scope);
      default:
        throw new SyntaxError(`Unknown node type: ${node.type}`);
    }
  }

  #args(nodes: readonly Node[] | undefined, scope: Scope): [Value[], Map<string, Value>] {
    const args: Value[] = [];
    let kwargs = NO_KWARGS;
    if (!nodes) return [args, kwargs];
    const addKw = (k: string, v: Value) => {
      if (kwargs === NO_KWARGS) kwargs = new Map();
      if (kwargs.has(k)) throw new Error(`Got multiple values for keyword argument '${k}'`);
      kwargs.set(k, v);
    };
    for (const a of nodes) {
      if (a.type === 'KeywordArgumentExpression') addKw(a.key!.value as string, this.ev(a.value as Node, scope));
      else if (a.type === 'SpreadExpression') {
        const v = this.ev(a.argument, scope);
        if (!Array.isArray(v)) throw new Error(`Cannot unpack non-iterable type: ${typeName(v)}`);
        this.charge(v.length);
        args.push(...v);
      } else if (a.type === 'KeywordSpreadExpression') {
        const v = this.ev(a.argument, scope);
        if (!isMap(v)) throw new Error(`Argument after ** must be a mapping, not ${typeName(v)}`);
        for (const [k, x] of v) addKw(k, x);
      } else args.push(this.ev(a, scope));
    }
    return [args, kwargs];
  }

  #filter(operand: Value, filter: Node, scope: Scope): Value {
    if (filter.type === 'Identifier') return applyFilter(filter.value as string, operand, [], NO_KWARGS, this);
    if (filter.type === 'CallExpression' && filter.callee!.type === 'Identifier') {
      const [args, kwargs] = this.#args(filter.args, scope);
      return applyFilter(filter.callee!.value as string, operand, args, kwargs, this);
    }
    throw new Error(`Unknown filter: ${filter.type}`);
  }

  #call(node: Node, scope: Scope): Value {
    const callee = node.callee!;
    // `s.upper()`, `d.items()`: the method runs on the value without a bound function being made.
    if (callee.type === 'MemberExpression' && !callee.computed && callee.property!.type === 'Identifier') {
      const object = this.ev(callee.object, scope);
      const [args, kwargs] = this.#args(node.args, scope);
      const r = this.#method(object, callee.property!.value as string, args, kwargs);
      if (r !== NO_METHOD) return r;
      return this.#invoke(this.#memberOf(object, callee.property!.value as string), args, kwargs, scope);
    }
    const [args, kwargs] = this.#args(node.args, scope);
    return this.#invoke(this.ev(callee, scope), args, kwargs, scope);
  }

  #invoke(fn: Value, args: Value[], kwargs: Map<string, Value>, scope: Scope): Value {
    if (!(fn instanceof Fn)) throw new Error(`Cannot call something that is not a function: got ${typeName(fn)}`);
    return fn.call(args, kwargs, scope, this);
  }

  /** Built-in methods of strings and dicts (the library's); `NO_METHOD` for any other name. */
  #method(object: Value, name: string, args: Value[], kwargs: Map<string, Value>): Value | typeof NO_METHOD {
    if (typeof object === 'string') return stringMethod(object, name, args, kwargs, this);
    if (isMap(object)) {
      if (object.has(name)) return NO_METHOD;
      switch (name) {
        case 'get': {
          const key = args[0];
          if (typeof key !== 'string') throw new Error(`Object key must be a string: got ${typeName(key)}`);
          return object.has(key) ? object.get(key) : args.length > 1 ? args[1] : null;
        }
        case 'items':
          return itemsOfMap(object);
        case 'keys':
          return [...object.keys()];
        case 'values':
          return [...object.values()];
        case 'dictsort':
          return applyFilter('dictsort', object, args, kwargs, this);
      }
    }
    return NO_METHOD;
  }

  #memberOf(object: Value, name: string): Value {
    if (isMap(object)) {
      if (object.has(name)) return object.get(name);
    } else if (object instanceof Namespace) return object.m.has(name) ? object.m.get(name) : undefined;
    else if (object instanceof Loop) return object.get(name);
    else if (Array.isArray(object)) return name === 'length' ? object.length : undefined;
    if (typeof object === 'string' && name === 'length') return object.length;
    if ((typeof object === 'string' && STRING_METHODS.has(name)) || (isMap(object) && MAP_METHODS.has(name))) {
      return new Fn((args, kwargs) => {
        const r = this.#method(object, name, args, kwargs);
        return r === NO_METHOD ? undefined : r;
      });
    }
    return undefined;
  }

  #member(node: Node, scope: Scope): Value {
    const object = this.ev(node.object, scope);
    const prop = node.property!;
    let key: Value;
    if (!node.computed) key = prop.value as string | number;
    else if (prop.type === 'SliceExpression') return this.#slice(object, prop, scope);
    else key = this.ev(prop, scope);
    if (isMap(object) || object instanceof Namespace || object instanceof Loop) {
      if (typeof key !== 'string') throw new Error(`Cannot access property with non-string: got ${typeName(key)}`);
      return this.#memberOf(object, key);
    }
    if (Array.isArray(object) || typeof object === 'string') {
      if (typeof key === 'number' && Number.isInteger(key)) return object.at(key);
      if (typeof key === 'string') return this.#memberOf(object, key);
      throw new Error(`Cannot access property with non-string/non-number: got ${typeName(key)}`);
    }
    if (typeof key !== 'string') throw new Error(`Cannot access property with non-string: got ${typeName(key)}`);
    return undefined;
  }

  #slice(object: Value, node: Node, scope: Scope): Value {
    if (!Array.isArray(object) && typeof object !== 'string') throw new Error('Slice object must be an array or string');
    const part = (n: Node | undefined, what: string): number | undefined => {
      const v = this.ev(n, scope);
      if (v === undefined) return undefined;
      if (typeof v !== 'number' || !Number.isInteger(v)) throw new Error(`Slice ${what} must be numeric or undefined`);
      return v;
    };
    const start = part(node.start, 'start');
    const stop = part(node.stop, 'stop');
    const step = part(node.step, 'step') ?? 1;
    if (step === 0) throw new Error('slice step cannot be zero');
    const items = typeof object === 'string' ? Array.from(object) : object;
    const out = slice(items, start, stop, step);
    return typeof object === 'string' ? out.join('') : out;
  }

  #binary(node: Node, scope: Scope): Value {
    const op = node.operator!.value;
    const left = this.ev(node.left, scope);
    if (op === 'and') return truthy(left) ? this.ev(node.right, scope) : left;
    if (op === 'or') return truthy(left) ? left : this.ev(node.right, scope);
    const right = this.ev(node.right, scope);
    // The library's loose equality (1 == 1.0, None == undefined).
    if (op === '==') return raw(left) == raw(right);
    if (op === '!=') return raw(left) != raw(right);
    if (left === undefined || right === undefined) {
      if (right === undefined && (op === 'in' || op === 'not in')) return op === 'not in';
      throw new Error(`Cannot perform operation ${op} on undefined values`);
    }
    if (left === null || right === null) throw new Error('Cannot perform operation on null values');
    if (op === '~') {
      const s = plainText(left) + plainText(right);
      this.checkLength(s.length);
      return s;
    }
    if (isNum(left) && isNum(right)) return arithmetic(op, left, right);
    if (op === '**' && (typeof left === 'boolean' || typeof right === 'boolean') && (isNum(left) || typeof left === 'boolean') && (isNum(right) || typeof right === 'boolean')) {
      return arithmetic(op, typeof left === 'boolean' ? Number(left) : left, typeof right === 'boolean' ? Number(right) : right);
    }
    // Jinja2's `'ab' * 3` (and `3 * 'ab'`), bounded before the string is built.
    if (op === '*' && ((typeof left === 'string' && isNum(right)) || (isNum(left) && typeof right === 'string'))) {
      const [s, n] = typeof left === 'string' ? [left, numOf(right as number)] : [right as string, numOf(left as number)];
      const times = Math.max(0, Math.trunc(n));
      this.checkLength(s.length * times);
      return s.repeat(times);
    }
    if (Array.isArray(left) && Array.isArray(right) && op === '+') {
      this.charge(left.length + right.length);
      return left.concat(right);
    }
    if (Array.isArray(right) && (op === 'in' || op === 'not in')) {
      const l = raw(left);
      const found = right.some((x) => raw(x) === l);
      return op === 'in' ? found : !found;
    }
    if ((typeof left === 'string' || typeof right === 'string') && op === '+') {
      const s = plainText(left) + plainText(right);
      this.checkLength(s.length);
      return s;
    }
    if (typeof left === 'string' && typeof right === 'string') {
      switch (op) {
        case 'in':
          return right.includes(left);
        case 'not in':
          return !right.includes(left);
        case '<':
        case '>':
        case '<=':
        case '>=':
          return compareWith(op, compare(left, right, true));
      }
    }
    if (typeof left === 'string' && isMap(right) && (op === 'in' || op === 'not in')) return op === 'in' ? right.has(left) : !right.has(left);
    throw new SyntaxError(`Unknown operator "${op}" between ${typeName(left)} and ${typeName(right)}`);
  }

  #unary(node: Node, scope: Scope): Value {
    const v = this.ev(node.argument, scope);
    const op = node.operator!.value;
    if (op === 'not') return !truthy(v);
    if (op === '+' || op === '-') {
      if (isNum(v) || typeof v === 'boolean') {
        const n = (op === '-' ? -1 : 1) * (typeof v === 'boolean' ? Number(v) : numOf(v));
        return isFloat(v) ? float(n) : n;
      }
      throw new SyntaxError(`Unknown operator "${op}" for ${typeName(v)}`);
    }
    throw new SyntaxError(`Unknown operator: ${op}`);
  }

  #set(node: Node, scope: Scope): Value {
    const rhs = node.value ? this.ev(node.value as Node, scope) : this.block(node.body, scope);
    const target = node.assignee!;
    if (target.type === 'Identifier') scope.vars.set(target.value as string, rhs);
    else if (target.type === 'TupleLiteral') {
      const names = target.value as Node[];
      if (!Array.isArray(rhs)) throw new Error(`Cannot unpack non-iterable type in set: ${typeName(rhs)}`);
      if (rhs.length !== names.length) throw new Error(`Too ${names.length > rhs.length ? 'few' : 'many'} items to unpack in set`);
      names.forEach((n, i) => {
        if (n.type !== 'Identifier') throw new Error(`Cannot unpack to non-identifier in set: ${n.type}`);
        scope.vars.set(n.value as string, rhs[i]);
      });
    } else if (target.type === 'MemberExpression') {
      const object = this.ev(target.object, scope);
      if (!(object instanceof Namespace)) throw new Error('cannot assign attribute on non-namespace object');
      if (target.property!.type !== 'Identifier') throw new Error('Cannot assign to member with non-identifier property');
      object.m.set(target.property!.value as string, rhs);
    } else throw new Error(`Invalid LHS inside assignment expression: ${target.type}`);
    return null;
  }

  #for(node: Node, outer: Scope): Value {
    const scope = new Scope(outer);
    let iterableNode = node.iterable!;
    let test: Node | undefined;
    if (iterableNode.type === 'SelectExpression') {
      test = iterableNode.test;
      iterableNode = iterableNode.lhs!;
    }
    let iterable = this.ev(iterableNode, scope);
    if (isMap(iterable)) iterable = [...iterable.keys()];
    else if (typeof iterable === 'string') {
      this.charge(iterable.length);
      iterable = Array.from(iterable);
    }
    if (!Array.isArray(iterable)) throw new Error(`Expected iterable or object type in for loop: got ${typeName(iterable)}`);
    const loopvar = node.loopvar!;
    const bind = (target: Scope, item: Value): void => {
      if (loopvar.type === 'Identifier') {
        target.vars.set(loopvar.value as string, item);
        return;
      }
      if (loopvar.type !== 'TupleLiteral') throw new Error(`Invalid loop variable(s): ${loopvar.type}`);
      const names = loopvar.value as Node[];
      if (!Array.isArray(item)) throw new Error(`Cannot unpack non-iterable type: ${typeName(item)}`);
      if (names.length !== item.length) throw new Error(`Too ${names.length > item.length ? 'few' : 'many'} items to unpack`);
      for (let j = 0; j < names.length; j++) {
        if (names[j]!.type !== 'Identifier') throw new Error(`Cannot unpack non-identifier type: ${names[j]!.type}`);
        target.vars.set(names[j]!.value as string, item[j]);
      }
    };
    let items = iterable;
    if (test) {
      items = [];
      for (const item of iterable) {
        const s = new Scope(scope);
        bind(s, item);
        if (truthy(this.ev(test, s))) items.push(item);
      }
    }
    let out = '';
    let ran = false;
    for (let i = 0; i < items.length; i++) {
      scope.vars.set('loop', new Loop(i, items));
      bind(scope, items[i]);
      // The loop's output is checked when it ends (by `ev`): the step budget and the clock bound the
      // rounds, and V8 joins strings without copying them.
      out += this.block(node.body, scope);
      ran = true;
      const ctrl = this.#ctrl;
      this.#ctrl = Ctrl.None;
      if (ctrl === Ctrl.Break) break;
    }
    if (!ran) out += this.block(node.defaultBlock, scope);
    return out;
  }

  #macro(node: Node, scope: Scope): Value {
    const name = node.name!.value as string;
    const params = node.args ?? [];
    const special = specialArguments(node);
    scope.vars.set(
      name,
      new Fn((args, kwargs, caller) => {
        const s = new Scope(caller as Scope);
        this.#bind(`'${name}'`, params, special, args, kwargs, s);
        return this.#body(node.body, s);
      }),
    );
    return null;
  }

  #callStatement(node: Node, scope: Scope): Value {
    const params = node.callerArgs ?? [];
    const special = specialArguments(node);
    const caller = new Fn((args, kwargs) => {
      const s = new Scope(scope);
      this.#bind('None', params, special, args, kwargs, s);
      return this.#body(node.body, s);
    });
    const call = node.call!;
    const [args, kwargs] = this.#args(call.args, scope);
    const fn = this.ev(call.callee, scope);
    const inner = new Scope(scope);
    inner.vars.set('caller', caller);
    return this.#invoke(fn, args, kwargs, inner);
  }

  /** A macro's body: a `{% break %}` in it ends it without reaching the caller's loop. */
  #body(nodes: readonly Node[] | undefined, scope: Scope): string {
    const saved = this.#ctrl;
    try {
      return this.block(nodes, scope);
    } finally {
      this.#ctrl = saved;
    }
  }

  /** Binds a macro's parameters (every name first, then the defaults, so none resolves outside). */
  #bind(display: string, params: readonly Node[], special: ReadonlySet<string>, args: Value[], kwargsIn: Map<string, Value>, scope: Scope): void {
    const kwargs = new Map(kwargsIn);
    const pending: [string, Node][] = [];
    for (let i = 0; i < params.length; i++) {
      const p = params[i]!;
      const name = (p.type === 'Identifier' ? p.value : p.key!.value) as string;
      const fallback = p.type === 'Identifier' ? undefined : (p.value as Node);
      let v = args[i];
      if (i >= args.length && kwargs.has(name)) {
        v = kwargs.get(name);
        kwargs.delete(name);
      }
      if (i >= args.length && v === undefined && fallback !== undefined) pending.push([name, fallback]);
      scope.vars.set(name, v);
    }
    if (special.has('kwargs')) scope.vars.set('kwargs', kwargs);
    else if (kwargs.size > 0) throw new Error(`macro ${display} takes no keyword argument '${kwargs.keys().next().value}'`);
    if (special.has('varargs')) scope.vars.set('varargs', args.slice(params.length));
    else if (args.length > params.length) throw new Error(`macro ${display} takes not more than ${params.length} argument(s)`);
    for (const [name, fallback] of pending) scope.vars.set(name, this.ev(fallback, scope));
  }
}

const specialCache = new WeakMap<Node, ReadonlySet<string>>();

/** Whether a macro's body reads `varargs` / `kwargs` (then it accepts extra arguments), found once per macro. */
function specialArguments(node: Node): ReadonlySet<string> {
  let found = specialCache.get(node);
  if (found) return found;
  const names = new Set<string>();
  const declared = new Set(
    [...(node.args ?? []), ...(node.callerArgs ?? [])].map((p) => (p.type === 'Identifier' ? p.value : p.key?.value) as string),
  );
  const visit = (x: unknown): void => {
    if (Array.isArray(x)) {
      for (const y of x) visit(y);
      return;
    }
    if (x instanceof Map) {
      for (const [k, v] of x) {
        visit(k);
        visit(v);
      }
      return;
    }
    if (typeof x !== 'object' || x === null || typeof (x as Node).type !== 'string') return;
    const n = x as Node;
    if (n.type === 'Identifier') {
      const v = n.value as string;
      if ((v === 'varargs' || v === 'kwargs') && !declared.has(v)) names.add(v);
      return;
    }
    for (const k of Object.keys(n)) if (k !== 'type') visit((n as unknown as Record<string, unknown>)[k]);
  };
  visit(node.body);
  found = names;
  specialCache.set(node, found);
  return found;
}

const STRING_METHODS = new Set(['upper', 'lower', 'strip', 'title', 'capitalize', 'rstrip', 'lstrip', 'startswith', 'endswith', 'split', 'replace']);
const MAP_METHODS = new Set(['get', 'items', 'keys', 'values', 'dictsort']);

function affix(s: string, name: 'startswith' | 'endswith', args: Value[]): boolean {
  const p = args[0];
  if (args.length === 0) throw new Error(`${name}() requires at least one argument`);
  const has = (x: string) => (name === 'startswith' ? s.startsWith(x) : s.endsWith(x));
  if (typeof p === 'string') return has(p);
  if (Array.isArray(p)) {
    return p.some((x) => {
      if (typeof x !== 'string') throw new Error(`${name}() tuple elements must be strings`);
      return has(x);
    });
  }
  throw new Error(`${name}() argument must be a string or tuple of strings`);
}

/** The library's string methods (Python's `str` ones Dify templates use). */
function stringMethod(s: string, name: string, args: Value[], kwargs: Map<string, Value>, ctx: CallContext): Value | typeof NO_METHOD {
  switch (name) {
    case 'upper':
      return s.toUpperCase();
    case 'lower':
      return s.toLowerCase();
    case 'strip':
      return s.trim();
    case 'rstrip':
      return s.trimEnd();
    case 'lstrip':
      return s.trimStart();
    case 'title':
      return applyFilter('title', s, [], kwargs, ctx);
    case 'capitalize':
      return applyFilter('capitalize', s, [], kwargs, ctx);
    case 'startswith':
    case 'endswith':
      return affix(s, name, args);
    case 'split': {
      const sep = args.length > 0 ? args[0] : kwargs.has('sep') ? kwargs.get('sep') : null;
      const maxArg = args.length > 1 ? args[1] : kwargs.has('maxsplit') ? kwargs.get('maxsplit') : -1;
      if (typeof sep !== 'string' && sep !== null) throw new Error('sep argument must be a string or null');
      if (typeof maxArg !== 'number' || !Number.isInteger(maxArg)) throw new Error('maxsplit argument must be a number');
      ctx.charge(s.length);
      if (sep === null) {
        const text = s.trimStart();
        const out: Value[] = [];
        for (const m of text.matchAll(/\S+/g)) {
          if (maxArg !== -1 && out.length >= maxArg) {
            out.push(m[0] + text.slice(m.index + m[0].length));
            break;
          }
          out.push(m[0]);
        }
        return out;
      }
      if (sep === '') throw new Error('empty separator');
      const parts: Value[] = s.split(sep);
      if (maxArg !== -1 && parts.length > maxArg) parts.push((parts.splice(maxArg) as string[]).join(sep));
      return parts;
    }
    case 'replace':
      return boundedReplace(s, args, kwargs, ctx);
    default:
      return NO_METHOD;
  }
}

function arithmetic(op: string, left: number | PyFloat, right: number | PyFloat): Value {
  const a = numOf(left);
  const b = numOf(right);
  const anyFloat = isFloat(left) || isFloat(right);
  switch (op) {
    case '+':
      return anyFloat ? float(a + b) : a + b;
    case '-':
      return anyFloat ? float(a - b) : a - b;
    case '*':
      return anyFloat ? float(a * b) : a * b;
    case '/':
      return float(a / b);
    case '//':
      return anyFloat ? float(Math.floor(a / b)) : Math.floor(a / b);
    case '%':
      return anyFloat ? float(a % b) : a % b;
    case '**': {
      if (a === 0 && b < 0) throw new Error('0.0 cannot be raised to a negative power');
      const r = a ** b;
      if (!Number.isFinite(r)) throw new Error('Exponentiation result is not a finite real number');
      return anyFloat || b < 0 ? float(r) : r;
    }
    case '<':
    case '>':
    case '<=':
    case '>=':
      return compareWith(op, a < b ? -1 : a > b ? 1 : 0);
    default:
      throw new SyntaxError(`Unknown operator "${op}" between ${typeName(left)} and ${typeName(right)}`);
  }
}

function compareWith(op: string, c: number): boolean {
  return op === '<' ? c < 0 : op === '>' ? c > 0 : op === '<=' ? c <= 0 : c >= 0;
}

/** Python's slice `items[start:stop:step]`. */
function slice(items: readonly Value[], start: number | undefined, stop: number | undefined, step: number): Value[] {
  const len = items.length;
  let from: number;
  let to: number;
  if (step > 0) {
    from = start === undefined ? 0 : start < 0 ? Math.max(len + start, 0) : Math.min(start, len);
    to = stop === undefined ? len : stop < 0 ? Math.max(len + stop, 0) : Math.min(stop, len);
  } else {
    from = start === undefined ? len - 1 : start < 0 ? Math.max(len + start, -1) : Math.min(start, len - 1);
    to = stop === undefined ? -1 : stop < -1 ? Math.max(len + stop, -1) : Math.min(stop, len - 1);
  }
  const out: Value[] = [];
  for (let i = from; step > 0 ? i < to : i > to; i += step) out.push(items[i]);
  return out;
}
