import type { CodeConfig } from '../../config.js';
import type { CodeRequest } from '../../engine/types.js';
import { CodeExecutionError } from '../code-execution-error.js';
import type { RealmLimits, RealmReply } from './quickjs-realm.js';
import type { QuickJsJob } from './quickjs-worker.js';
import { PoolError, WorkerPool } from './worker-pool.js';
import { workerModule } from '../../infra/worker-entry.js';

/** Grace past CODE_EXECUTION_TIMEOUT before the worker itself is terminated (the interrupt handler fires first). */
const HARD_TIMEOUT_GRACE_MS = 2000;

/** The limit messages both sandboxes and the process executor report. */
export function limitMessage(limit: 'timeout' | 'memory' | 'output', config: CodeConfig): string {
  switch (limit) {
    case 'timeout':
      return `Code execution timed out after ${config.timeoutSeconds}s (CODE_EXECUTION_TIMEOUT).`;
    case 'memory':
      return `Code execution ran out of memory: more than ${config.maxMemoryMb} MB (CODE_MAX_MEMORY_MB).`;
    case 'output':
      return `Code output exceeds ${config.maxOutputBytes} bytes (CODE_MAX_OUTPUT_BYTES).`;
  }
}

/** What a pool runs, in its queue-full message. */
export type SandboxWork = 'python3 code runs' | 'javascript code runs';

export function poolFailure(err: unknown, config: CodeConfig, work: SandboxWork): CodeExecutionError {
  if (err instanceof PoolError) {
    if (err.reason === 'timeout') return new CodeExecutionError(limitMessage('timeout', config));
    if (err.reason === 'aborted') return new CodeExecutionError('Code execution was stopped.');
    if (err.reason === 'full') {
      const n = config.maxQueuedPerApp;
      return new CodeExecutionError(`Code execution queue of this app is full: ${n} ${work} already wait for a sandbox worker (CODE_MAX_QUEUED_PER_APP=${n}).`);
    }
    return new CodeExecutionError(`Code execution failed: ${err.message}.`);
  }
  return new CodeExecutionError(`Code execution failed: ${(err as Error).message}`);
}

/**
 * A sandbox pool's per-app limits: CODE_MAX_QUEUED_PER_APP, and CODE_MAX_WORKERS_PER_APP (0: all
 * but one of the pool's `size` workers, at least one; unbounded for a pool that starts one per run).
 */
export function tenantLimits(config: CodeConfig, size: number): { maxQueuedPerTenant: number; maxWorkersPerTenant: number } {
  const auto = size > 0 ? Math.max(1, size - 1) : Number.POSITIVE_INFINITY;
  return { maxQueuedPerTenant: config.maxQueuedPerApp, maxWorkersPerTenant: config.maxWorkersPerApp > 0 ? config.maxWorkersPerApp : auto };
}

/**
 * JavaScript code nodes in QuickJS (WebAssembly), in a pool of worker threads
 * (`CODE_SANDBOX_JS_WORKERS`) so a long run never blocks the server's event loop. Each code run gets
 * a fresh QuickJS runtime (see quickjs-realm.ts). Templates are not rendered here (src/code/jinja).
 */
export class QuickJsSandbox {
  readonly #config: CodeConfig;
  readonly #pool: WorkerPool;
  readonly #limits: RealmLimits;

  constructor(config: CodeConfig) {
    this.#config = config;
    this.#limits = Object.freeze({ timeoutMs: config.timeoutSeconds * 1000, memoryBytes: config.maxMemoryMb * 1024 * 1024, maxOutputBytes: config.maxOutputBytes });
    this.#pool = new WorkerPool({
      script: workerModule('quickjs-worker', import.meta.url),
      workerData: { memoryBytes: this.#limits.memoryBytes },
      size: config.jsWorkers,
      recycleAfter: config.recycleAfterRuns,
      // QuickJS's heap lives in the WebAssembly memory, outside V8's; this bounds the worker's own.
      heapMb: 64,
      ...tenantLimits(config, config.jsWorkers),
    });
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

  async runJavaScript(req: CodeRequest, signal: AbortSignal): Promise<unknown> {
    const reply = await this.#run({ kind: 'javascript', code: req.code, inputsJson: JSON.stringify(req.inputs), limits: this.#limits }, signal, req.appId);
    return (JSON.parse(reply) as { result: unknown }).result;
  }

  close(): Promise<void> {
    return this.#pool.close();
  }

  async #run(job: QuickJsJob, signal: AbortSignal, appId: string | undefined): Promise<string> {
    let reply: RealmReply;
    try {
      reply = (await this.#pool.run({ message: job, hardTimeoutMs: this.#limits.timeoutMs + HARD_TIMEOUT_GRACE_MS, signal, ...(appId !== undefined ? { tenant: appId } : {}) })) as RealmReply;
    } catch (err) {
      throw poolFailure(err, this.#config, 'javascript code runs');
    }
    if (reply.ok) return reply.json;
    if (reply.limit) throw new CodeExecutionError(limitMessage(reply.limit, this.#config));
    throw new CodeExecutionError(`Code execution failed: ${reply.error}`);
  }
}
