import type { Config } from '../config.js';
import type { AppService } from '../apps/app-service.js';
import { codeNodes } from '../apps/import-check.js';
import type { CodeExecutor, TemplateRenderer } from '../engine/types.js';
import { JinjaTemplates } from '../code/jinja-templates.js';
import type { Logger } from '../infra/logger.js';
import { ProcessCodeExecutor } from '../code/process-executor.js';
import { QuickJsSandbox } from '../code/sandbox/quickjs-sandbox.js';
import { PyodideSandbox } from '../code/sandbox/pyodide-sandbox.js';
import { SandboxCodeExecutor } from '../code/sandbox-executor.js';

/** The code side of the composition root: the executor code nodes run on and its warm workers. */
export interface CodeSandbox {
  /** Runs code nodes: the sandboxes (`CODE_EXECUTION_MODE=sandbox`) or child processes. */
  readonly executor: CodeExecutor;
  /** QuickJS (javascript code nodes). */
  readonly quickjs: QuickJsSandbox;
  /** Jinja2 templates (template-transform), rendered in process (src/code/jinja). */
  readonly templates: TemplateRenderer;
  /** Live workers per language (the `dovetail_code_sandbox_workers` gauge). */
  workers(): { javascript: number; python3: number };
  /** Reads the apps in the background (starting the sandboxes their code nodes need) and warns about unsafe code execution. */
  warm(): void;
  /** Resolves once the sandboxes' workers are up. */
  ready(): Promise<void>;
  close(): Promise<void>;
}

export function createCodeSandbox(config: Config, apps: AppService, logger: Logger): CodeSandbox {
  const quickjs = new QuickJsSandbox(config.code);
  const pyodide = config.code.mode === 'sandbox' ? new PyodideSandbox(config.code) : undefined;
  const executor: CodeExecutor = pyodide ? new SandboxCodeExecutor(quickjs, pyodide) : new ProcessCodeExecutor(config.code);
  // The sandboxes' workers (QuickJS: tens of MB; Pyodide: seconds of CPU and ~150 MB) start once an
  // app that has code in their language is read or imported, after the server answers; until then
  // the first run starts them. Templates need neither (src/code/jinja).
  apps.addLoadListener((app) => {
    if (codeNodes(app.dsl, 'javascript').length > 0) quickjs.warm();
    if (pyodide && codeNodes(app.dsl, 'python3').length > 0) pyodide.warm();
  });
  return {
    executor,
    quickjs,
    templates: new JinjaTemplates({ maxSteps: config.code.templateMaxSteps, timeoutMs: config.code.templateTimeoutMs, maxLength: config.code.templateMaxLength }),
    workers: () => ({ javascript: quickjs.workers, python3: pyodide?.workers ?? 0 }),
    warm() {
      void apps.list().catch((err: unknown) => logger.warn({ err }, 'apps could not be read to warm the code sandboxes'));
      if (config.code.mode === 'process') logger.warn('CODE_EXECUTION_MODE=process: code nodes run as child processes with this server\'s rights, files, network and environment (unsafe; use only for trusted apps)');
    },
    async ready() {
      await Promise.all([quickjs.ready(), pyodide?.ready()]);
    },
    async close() {
      await pyodide?.close();
      await quickjs.close();
    },
  };
}
