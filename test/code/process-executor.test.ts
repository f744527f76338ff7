import { ProcessCodeExecutor } from '../../src/code/process-executor.js';
import { describeCodeExecutorContract } from './code-executor.contract.js';

describeCodeExecutorContract(
  'process',
  async (config) => new ProcessCodeExecutor(config),
  async () => undefined,
);
