import { describe, expect, it } from 'vitest';
import { SandboxCodeExecutor } from '../../src/code/sandbox-executor.js';
import { PyodideSandbox } from '../../src/code/sandbox/pyodide-sandbox.js';
import { QuickJsSandbox } from '../../src/code/sandbox/quickjs-sandbox.js';
import { contractCodeConfig, describeCodeExecutorContract } from './code-executor.contract.js';

const sandboxes = new WeakMap<object, { close(): Promise<void> }[]>();

describeCodeExecutorContract(
  'sandbox',
  async (config) => {
    const js = new QuickJsSandbox(config);
    const python = new PyodideSandbox(config);
    await Promise.all([js.ready(), python.ready()]);
    const ex = new SandboxCodeExecutor(js, python);
    sandboxes.set(ex, [js, python]);
    return ex;
  },
  async (ex) => {
    await Promise.all((sandboxes.get(ex) ?? []).map((s) => s.close()));
  },
  // Pyodide boots in seconds (tens on a loaded machine); the pool is shared by the whole file.
  180_000,
);

describe('QuickJsSandbox with CODE_SANDBOX_JS_WORKERS=0', () => {
  it('starts a worker for each run and still answers parallel runs', async () => {
    const js = new QuickJsSandbox(contractCodeConfig({ CODE_SANDBOX_JS_WORKERS: '0' }));
    try {
      const never = new AbortController().signal;
      const [a, b] = await Promise.all([js.runJavaScript({ language: 'javascript', code: 'function main({x}) { return { r: x + 1 }; }', inputs: { x: 1 } }, never), js.runJavaScript({ language: 'javascript', code: 'function main({x}) { return { r: x + "!" }; }', inputs: { x: 'hi' } }, never)]);
      expect(a).toEqual({ r: 2 });
      expect(b).toEqual({ r: 'hi!' });
    } finally {
      await js.close();
    }
  });
});

describe('QuickJsSandbox queues per app (CODE_MAX_QUEUED_PER_APP, CODE_MAX_WORKERS_PER_APP)', () => {
  it("serves apps in turn, refuses a run past the app's queue bound, and drops a stopped run from the queue", async () => {
    const js = new QuickJsSandbox(contractCodeConfig({ CODE_SANDBOX_JS_WORKERS: '1', CODE_MAX_QUEUED_PER_APP: '2' }));
    try {
      await js.ready();
      const never = new AbortController().signal;
      const order: string[] = [];
      const run = (appId: string, code: string, signal = never) =>
        js.runJavaScript({ language: 'javascript', code, inputs: {}, appId }, signal).then(
          (r) => (order.push(appId), r),
          (e: unknown) => (order.push(`${appId}!`), Promise.reject(e as Error)),
        );
      const busy = 'function main() { const end = Date.now() + 300; while (Date.now() < end) {} return { r: 1 }; }';
      const a1 = run('a', busy);
      const a2 = run('a', busy);
      const stop = new AbortController();
      const a3 = run('a', busy, stop.signal);
      // Two of app a's runs wait: a fourth is refused at once, naming the setting and its value.
      await expect(run('a', busy)).rejects.toThrow('Code execution queue of this app is full: 2 javascript code runs already wait for a sandbox worker (CODE_MAX_QUEUED_PER_APP=2).');
      stop.abort();
      await expect(a3).rejects.toThrow(/^Code execution was stopped\.$/);
      const b = run('b', 'function main() { return { r: 2 }; }');
      await Promise.all([a1, a2, b]);
      // b queued after a's second run but is served before it: the apps take the worker in turn.
      expect(order.filter((x) => !x.endsWith('!'))).toEqual(['a', 'b', 'a']);
    } finally {
      await js.close();
    }
  });
});
