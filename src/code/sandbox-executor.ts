import type { CodeExecutor, CodeRequest } from '../engine/types.js';
import { missingPythonModules, sandboxModuleAdvice } from './python-modules.js';
import type { QuickJsSandbox } from './sandbox/quickjs-sandbox.js';

/**
 * `CODE_EXECUTION_MODE=sandbox`: javascript runs in QuickJS, python3 in `python` (Pyodide, see
 * sandbox/pyodide-sandbox.ts). Both in worker threads, so the server keeps serving during a run.
 */
export class SandboxCodeExecutor implements CodeExecutor {
  constructor(
    private readonly js: QuickJsSandbox,
    private readonly python: CodeExecutor,
  ) {}

  missingModuleAdvice(module: string): string {
    return sandboxModuleAdvice(module);
  }

  missingModules(names: readonly string[]): Promise<string[]> {
    return this.python.missingModules ? this.python.missingModules(names) : missingPythonModules(this.python, names);
  }

  run(req: CodeRequest, signal: AbortSignal): Promise<unknown> {
    return req.language === 'javascript' ? this.js.runJavaScript(req, signal) : this.python.run(req, signal);
  }
}
