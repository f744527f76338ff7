import { readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { ConfigError, type CodeConfig } from '../../config.js';
import type { CodeExecutor, CodeRequest } from '../../engine/types.js';
import { CodeExecutionError } from '../code-execution-error.js';
import type { PyodideJob, PyodideWorkerData } from './pyodide-worker.js';
import type { RealmReply } from './quickjs-realm.js';
import { limitMessage, poolFailure, tenantLimits } from './quickjs-sandbox.js';
import { PyodideModules } from './pyodide-modules.js';
import { WorkerPool } from './worker-pool.js';
import { workerModule } from '../../infra/worker-entry.js';

/**
 * Grace past CODE_EXECUTION_TIMEOUT before the worker is terminated (the interrupt fires first).
 * Longer than QuickJS's: a terminated interpreter takes seconds to replace, and on a loaded machine
 * an interrupted run may need a moment to answer.
 */
const HARD_TIMEOUT_GRACE_MS = 5000;
/** How long a stopped run may take to notice the interrupt before its worker is terminated. */
const STOP_GRACE_MS = 1000;

/** Bumped when the interpreter's boot options change (an old snapshot is then left unused). */
const SNAPSHOT_FORMAT = 1;

/** The snapshot file of this Pyodide build in `dir`. */
export function snapshotFile(dir: string): string {
  const { version } = createRequire(import.meta.url)('pyodide/package.json') as { version: string };
  return path.join(dir, `pyodide-${version}-${SNAPSHOT_FORMAT}.snapshot`);
}

/**
 * The wheels in CODE_PYTHON_PACKAGES_DIR, in name order. Only pure-Python wheels
 * (`…-none-any.whl`): the sandbox loads no native code. A missing folder or another wheel is a
 * boot error naming the setting.
 */
export function pythonWheels(dir: string | undefined): string[] {
  if (dir === undefined) return [];
  let names: string[];
  try {
    names = readdirSync(dir).filter((n) => n.endsWith('.whl')).sort();
  } catch (err) {
    throw new ConfigError(`CODE_PYTHON_PACKAGES_DIR: cannot read "${dir}" (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  const native = names.find((n) => !n.endsWith('-none-any.whl'));
  if (native) throw new ConfigError(`CODE_PYTHON_PACKAGES_DIR: "${native}" is not a pure-Python wheel (…-none-any.whl); the Python sandbox loads no native code`);
  return names.map((n) => path.join(dir, n));
}

/**
 * python3 code nodes in Pyodide (CPython compiled to WebAssembly), one interpreter per worker
 * thread in a warm pool (`CODE_SANDBOX_PYTHON_WORKERS`). Each run gets a fresh namespace and the
 * interpreter is restored after it (pyodide-harness.ts); CODE_EXECUTION_TIMEOUT interrupts the
 * run through Pyodide's interrupt buffer, and a worker that does not stop is terminated.
 */
export class PyodideSandbox implements CodeExecutor {
  readonly #config: CodeConfig;
  readonly #pool: WorkerPool;
  readonly #modules: PyodideModules;

  constructor(config: CodeConfig) {
    this.#config = config;
    const wheels = pythonWheels(config.pythonPackagesDir);
    this.#modules = new PyodideModules(wheels);
    const workerData: Omit<PyodideWorkerData, 'interrupt'> = { memoryBytes: config.maxMemoryMb * 1024 * 1024, wheels, ...(config.pythonSnapshotDir ? { snapshotFile: snapshotFile(config.pythonSnapshotDir) } : {}) };
    this.#pool = new WorkerPool({
      script: workerModule('pyodide-worker', import.meta.url),
      workerData,
      size: config.pythonWorkers,
      recycleAfter: config.recycleAfterRuns,
      // Pyodide's JavaScript side; Python's own heap is WebAssembly memory, bounded in the worker.
      heapMb: 256,
      interruptible: { stopGraceMs: STOP_GRACE_MS },
      ...tenantLimits(config, config.pythonWorkers),
      // What a run leaves in an interpreter can outlive the reset (deeper than the state it puts
      // back, or a finalizer the garbage collector runs later): no other app's run shares it.
      isolateTenants: true,
    });
  }

  /** Which of `names` the sandbox cannot import, from its module index (no interpreter is started). */
  missingModules(names: readonly string[]): Promise<string[]> {
    return this.#modules.missing(names);
  }

  /** Workers started so far (`dovetail_code_sandbox_workers`). */
  get workers(): number {
    return this.#pool.workers;
  }

  /** Starts the warm workers (otherwise the first run starts them). */
  warm(): void {
    this.#pool.start();
  }

  /** Starts the workers and resolves when they are up (benchmarks, tests). */
  ready(): Promise<void> {
    this.#pool.start();
    return this.#pool.ready();
  }

  async run(req: CodeRequest, signal: AbortSignal): Promise<unknown> {
    const timeoutMs = this.#config.timeoutSeconds * 1000;
    const job: PyodideJob = { code: req.code, inputsJson: JSON.stringify(req.inputs), maxOutputBytes: this.#config.maxOutputBytes };
    let reply: RealmReply;
    try {
      reply = (await this.#pool.run({ message: { ...job }, hardTimeoutMs: timeoutMs + HARD_TIMEOUT_GRACE_MS, softTimeoutMs: timeoutMs, signal, ...(req.appId !== undefined ? { tenant: req.appId } : {}) })) as RealmReply;
    } catch (err) {
      throw poolFailure(err, this.#config, 'python3 code runs');
    }
    if (!reply.ok) {
      if (reply.limit) throw new CodeExecutionError(limitMessage(reply.limit, this.#config));
      throw new CodeExecutionError(`Code execution failed: ${reply.error}`);
    }
    let parsed: { result?: unknown; error?: unknown };
    try {
      parsed = JSON.parse(reply.json) as typeof parsed;
    } catch {
      throw new CodeExecutionError('Code execution failed: the result of main is not JSON');
    }
    if (typeof parsed.error === 'string') throw new CodeExecutionError(`Code execution failed: ${parsed.error}`);
    return parsed.result;
  }

  close(): Promise<void> {
    return this.#pool.close();
  }
}
