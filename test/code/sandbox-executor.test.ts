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
  it('starts a worker for each run and still answers runs and renders', async () => {
    const js = new QuickJsSandbox(contractCodeConfig({ CODE_SANDBOX_JS_WORKERS: '0' }));
    try {
      const never = new AbortController().signal;
      const [a, b] = await Promise.all([js.runJavaScript({ language: 'javascript', code: 'function main({x}) { return { r: x + 1 }; }', inputs: { x: 1 } }, never), js.render('{{ x }}!', { x: 'hi' }, never)]);
      expect(a).toEqual({ r: 2 });
      expect(b).toBe('hi!');
    } finally {
      await js.close();
    }
  });
});
