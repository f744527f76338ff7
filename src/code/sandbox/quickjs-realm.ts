import type { QuickJSContext, QuickJSHandle, QuickJSRuntime, QuickJSWASMModule } from 'quickjs-emscripten-core';

/** Limits of one QuickJS run (the worker receives them from the server's config). */
export interface RealmLimits {
  /** Milliseconds of interpreter time before the interrupt handler stops it. */
  readonly timeoutMs: number;
  readonly memoryBytes: number;
  /** Largest result (its JSON, or the rendered text), bytes. */
  readonly maxOutputBytes: number;
}

/** What a run reports back: a value, or an error text and whether a limit ended it. */
export type RealmReply = { readonly ok: true; readonly json: string } | { readonly ok: false; readonly error: string; readonly limit?: 'timeout' | 'memory' | 'output' };

const STACK_BYTES = 512 * 1024;

/**
 * Makes everything reachable from the global object immutable (the SES `harden` idea): a template
 * can still compute, but cannot leave anything behind for the next render in the same realm.
 */
const HARDEN = `(function () {
  const seen = new Set();
  const protos = new Set([Object.prototype]);
  const todo = [globalThis];
  while (todo.length > 0) {
    const o = todo.pop();
    if (o === null || (typeof o !== 'object' && typeof o !== 'function') || seen.has(o)) continue;
    seen.add(o);
    if (typeof o === 'function' && o.prototype && typeof o.prototype === 'object') protos.add(o.prototype);
    for (const k of Reflect.ownKeys(o)) {
      const d = Object.getOwnPropertyDescriptor(o, k);
      if (!d) continue;
      if ('value' in d) todo.push(d.value);
      else todo.push(d.get, d.set);
    }
    todo.push(Object.getPrototypeOf(o));
  }
  // Frozen prototypes would make \`err.name = …\` on an instance fail (the "override mistake"):
  // their data properties become accessors whose setter defines the property on the instance.
  for (const p of protos) {
    for (const k of Reflect.ownKeys(p)) {
      const d = Object.getOwnPropertyDescriptor(p, k);
      if (!d || !('value' in d) || !d.writable || !d.configurable) continue;
      const value = d.value;
      Object.defineProperty(p, k, {
        get() { return value; },
        set(v) {
          if (this === p) throw new TypeError('Cannot assign to read only property ' + String(k));
          Object.defineProperty(this, k, { value: v, writable: true, enumerable: true, configurable: true });
        },
        enumerable: d.enumerable,
        configurable: false,
      });
    }
  }
  for (const o of seen) Object.freeze(o);
})();`;

/**
 * Jinja2's filters that nunjucks lacks (\`map\`), defined inside the realm: \`xs | map(attribute="a.b")\`
 * picks an attribute, \`xs | map("upper")\` applies another filter.
 */
const TEMPLATE_ENV = `
var __env = new nunjucks.Environment(null, { autoescape: false, throwOnUndefined: false });
__env.addFilter('map', function (xs) {
  var args = Array.prototype.slice.call(arguments, 1);
  if (!Array.isArray(xs)) return [];
  var last = args[args.length - 1];
  var kwargs = last && typeof last === 'object' && last.__keywords ? last : undefined;
  if (kwargs && typeof kwargs.attribute === 'string') {
    var path = kwargs.attribute.split('.');
    return xs.map(function (x) {
      var v = path.reduce(function (v, k) { return v && typeof v === 'object' ? v[k] : undefined; }, x);
      return v === undefined ? kwargs.default : v;
    });
  }
  var name = typeof args[0] === 'string' ? args[0] : undefined;
  if (!name) return xs;
  var filter = __env.getFilter(name);
  var self = this;
  var rest = args.slice(1).filter(function (a) { return a !== kwargs; });
  return xs.map(function (x) { return filter.apply(self, [x].concat(rest)); });
});
var __render = function (template, varsJson) { return __env.renderString(template, JSON.parse(varsJson)); };
`;

class Deadline {
  at = 0;
  hit = false;
  arm(ms: number): void {
    this.at = Date.now() + ms;
    this.hit = false;
  }
  check = (): boolean => {
    if (Date.now() > this.at) this.hit = true;
    return this.hit;
  };
}

function newRuntime(mod: QuickJSWASMModule, limits: RealmLimits, deadline: Deadline): QuickJSRuntime {
  const rt = mod.newRuntime();
  rt.setMemoryLimit(limits.memoryBytes);
  rt.setMaxStackSize(STACK_BYTES);
  rt.setInterruptHandler(deadline.check);
  return rt;
}

function errorText(ctx: QuickJSContext, handle: QuickJSHandle): string {
  const e = ctx.dump(handle) as unknown;
  if (e && typeof e === 'object') {
    const { name, message, stack } = e as { name?: unknown; message?: unknown; stack?: unknown };
    // QuickJS quotes the name (`'x' is not defined`); V8, which Dify's sandbox runs, does not.
    const text = typeof message === 'string' ? message.replace(/'([^'\s]*)' is not defined/g, '$1 is not defined') : String(e);
    const head = `${typeof name === 'string' ? name : 'Error'}: ${text}`;
    const frames = typeof stack === 'string' ? stack.split('\n').filter((l) => l.includes('code.js')).slice(0, 2) : [];
    return [head, ...frames].join('\n');
  }
  return String(e);
}

/** A limit breach is reported as such, whatever the program made of the exception it saw. */
function failure(ctx: QuickJSContext, handle: QuickJSHandle, deadline: Deadline): RealmReply {
  const error = errorText(ctx, handle);
  if (deadline.hit) return { ok: false, error, limit: 'timeout' };
  if (/out of memory/i.test(error)) return { ok: false, error, limit: 'memory' };
  return { ok: false, error };
}

function outputOf(text: string, limits: RealmLimits): RealmReply {
  if (Buffer.byteLength(text) > limits.maxOutputBytes) return { ok: false, error: 'output too large', limit: 'output' };
  return { ok: true, json: text };
}

/**
 * Runs a javascript code node in a fresh QuickJS runtime and context (nothing survives the run):
 * `main(inputs)` is called, awaited when it returns a promise, and its result comes back as JSON.
 * The realm has no host functions at all: no console to the host, no require, no timers.
 */
export function runJavaScript(mod: QuickJSWASMModule, code: string, inputsJson: string, limits: RealmLimits): RealmReply {
  const deadline = new Deadline();
  deadline.arm(limits.timeoutMs);
  const rt = newRuntime(mod, limits, deadline);
  const ctx = rt.newContext();
  try {
    const prelude = ctx.evalCode('globalThis.console = { log() {}, info() {}, warn() {}, error() {}, debug() {} };', 'prelude.js');
    (prelude.error ?? prelude.value).dispose();
    const loaded = ctx.evalCode(`${code}\n;globalThis.__main = typeof main === 'function' ? main : undefined;`, 'code.js');
    if (loaded.error) {
      const f = failure(ctx, loaded.error, deadline);
      loaded.error.dispose();
      return f;
    }
    loaded.value.dispose();
    const call = ctx.evalCode(
      `if (typeof __main !== 'function') throw new Error('the code must define a function main');
       Promise.resolve(__main(JSON.parse(${JSON.stringify(inputsJson)}))).then((r) => JSON.stringify({ result: r === undefined ? null : r }));`,
      'driver.js',
    );
    if (call.error) {
      const f = failure(ctx, call.error, deadline);
      call.error.dispose();
      return f;
    }
    const promise = call.value;
    try {
      for (;;) {
        const jobs = rt.executePendingJobs();
        if (jobs.error) {
          const f = failure(ctx, jobs.error, deadline);
          jobs.error.dispose();
          return f;
        }
        const state = ctx.getPromiseState(promise);
        if (state.type === 'fulfilled') {
          const text = ctx.getString(state.value);
          state.value.dispose();
          return outputOf(text, limits);
        }
        if (state.type === 'rejected') {
          const f = failure(ctx, state.error, deadline);
          state.error.dispose();
          return f;
        }
        if (!rt.hasPendingJob()) return { ok: false, error: 'Error: main returned a promise that never settles' };
      }
    } finally {
      promise.dispose();
    }
  } finally {
    ctx.dispose();
    rt.dispose();
  }
}

/**
 * Nunjucks (Jinja2 for JavaScript) loaded into a QuickJS realm whose objects are all frozen after
 * set-up, so a render cannot reach the host (there is none in the realm) nor leave state for the
 * next one. Loading nunjucks costs ~100 ms, so one realm serves many renders; a render that breaches
 * a limit retires it (the worker starts a fresh one).
 */
export class TemplateRealm {
  readonly #deadline = new Deadline();
  readonly #rt: QuickJSRuntime;
  readonly #ctx: QuickJSContext;

  constructor(mod: QuickJSWASMModule, nunjucksSource: string, limits: RealmLimits) {
    this.#deadline.arm(60_000);
    this.#rt = newRuntime(mod, { ...limits, memoryBytes: limits.memoryBytes + 32 * 1024 * 1024 }, this.#deadline);
    this.#ctx = this.#rt.newContext();
    const r = this.#ctx.evalCode(`${nunjucksSource}\n;${TEMPLATE_ENV}\n${HARDEN}`, 'nunjucks.js');
    if (r.error) {
      const text = errorText(this.#ctx, r.error);
      r.error.dispose();
      this.dispose();
      throw new Error(`cannot load nunjucks into the sandbox: ${text}`);
    }
    r.value.dispose();
  }

  render(template: string, varsJson: string, limits: RealmLimits): RealmReply {
    const ctx = this.#ctx;
    this.#deadline.arm(limits.timeoutMs);
    const r = ctx.evalCode(`__render(${JSON.stringify(template)}, ${JSON.stringify(varsJson)})`, 'template.js');
    if (r.error) {
      const f = failure(ctx, r.error, this.#deadline);
      r.error.dispose();
      return f;
    }
    const out = ctx.dump(r.value) as unknown;
    r.value.dispose();
    return outputOf(JSON.stringify(typeof out === 'string' ? out : String(out)), limits);
  }

  dispose(): void {
    this.#ctx.dispose();
    this.#rt.dispose();
  }
}
