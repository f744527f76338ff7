import { ProcessCodeExecutor } from '../../src/code/process-executor.js';
import { SandboxCodeExecutor } from '../../src/code/sandbox-executor.js';
import { QuickJsSandbox } from '../../src/code/sandbox/quickjs-sandbox.js';
import { describeCodeExecutorContract } from './code-executor.contract.js';

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
