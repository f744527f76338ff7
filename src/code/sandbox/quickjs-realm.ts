import type { QuickJSContext, QuickJSHandle, QuickJSRuntime, QuickJSWASMModule } from 'quickjs-emscripten-core';

/** Limits of one QuickJS run (the worker receives them from the server's config). */
export interface RealmLimits {
  /** Milliseconds of interpreter time before the interrupt handler stops it. */
  readonly timeoutMs: number;
  readonly memoryBytes: number;
  /** Largest result (its JSON), bytes. */
  readonly maxOutputBytes: number;
}

/** What a run reports back: a value, or an error text and whether a limit ended it. */
export type RealmReply = { readonly ok: true; readonly json: string } | { readonly ok: false; readonly error: string; readonly limit?: 'timeout' | 'memory' | 'output' };

const STACK_BYTES = 512 * 1024;

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
