import { describe, expect, it } from 'vitest';
import { ProcessCodeExecutor } from '../../src/code/process-executor.js';
import { SandboxCodeExecutor } from '../../src/code/sandbox-executor.js';
import { QuickJsSandbox } from '../../src/code/sandbox/quickjs-sandbox.js';
import { contractCodeConfig, describeCodeExecutorContract } from './code-executor.contract.js';

const sandboxes = new WeakMap<object, QuickJsSandbox>();

describeCodeExecutorContract(
  'sandbox',
  async (config) => {
    const js = new QuickJsSandbox(config);
    await js.ready();
    const ex = new SandboxCodeExecutor(js, new ProcessCodeExecutor(config));
    sandboxes.set(ex, js);
    return ex;
  },
  async (ex) => sandboxes.get(ex)?.close(),
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
