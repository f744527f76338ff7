import { Worker } from 'node:worker_threads';
import { workerEntry } from '../../infra/worker-entry.js';

/** A job for a sandbox worker: what it runs and the reply it sends. */
export interface WorkerJob {
  readonly message: Record<string, unknown>;
  /** Wall-time backstop: past it the worker is terminated (its own limit should fire first). */
  readonly hardTimeoutMs: number;
  readonly signal: AbortSignal;
  /** Interruptible pools only: past this the worker's interrupt buffer asks it to stop the run. */
  readonly softTimeoutMs?: number;
}

/** The failures a pool reports instead of a worker's reply. */
export type PoolFailure = 'timeout' | 'aborted' | 'crashed' | 'closed';

export class PoolError extends Error {
  override name = 'PoolError';
  constructor(readonly reason: PoolFailure, message: string) {
    super(message);
  }
}

interface Slot {
  worker: Worker;
  ready: Promise<void>;
  busy: boolean;
  runs: number;
  /** `[0]`: set to 2 to interrupt the run (Pyodide's SIGINT); `[1]`: why (1 time limit, 2 stop). */
  interrupt?: Int32Array;
}

/** Why an interruptible worker was interrupted (`interrupt[1]`). */
export const INTERRUPT_TIMEOUT = 1;
export const INTERRUPT_STOP = 2;

interface Waiter {
  job: WorkerJob;
  resolve(v: unknown): void;
  reject(e: unknown): void;
}

export interface WorkerPoolOptions {
  /** The worker module (a `.ts` file is run through tsx, for tests and `npm run dev`). */
  readonly script: URL;
  readonly workerData: unknown;
  /** Workers kept started; 0 starts one on demand for each job and ends it after. */
  readonly size: number;
  /** A worker is replaced after this many jobs. */
  readonly recycleAfter: number;
  /** V8 heap of one worker, MB (its own limits should fire first; this is the backstop). */
  readonly heapMb: number;
  /**
   * The worker gets `workerData.interrupt` (a SharedArrayBuffer of two Int32s, see Slot), answers
   * each job with `{type: 'reply'}` and then `{type: 'idle', retire}` once it is ready for the next
   * one (it cleans up in between, off the caller's path). A stop interrupts the run instead of
   * terminating the worker; a worker that is not idle `stopGraceMs` later is terminated.
   */
  readonly interruptible?: { readonly stopGraceMs: number };
}

/**
 * A fixed set of worker threads that run one job at a time each. Workers start in the background
 * at `start()` (or the first job), so no job waits for an interpreter to boot unless the pool is busy or empty. A job
 * that overruns its hard timeout, is aborted, or crashes its worker ends that worker (terminate),
 * and a fresh one takes its place; so does a worker that served `recycleAfter` jobs.
 */
export class WorkerPool {
  readonly #opts: WorkerPoolOptions;
  readonly #slots: Slot[] = [];
  readonly #queue: Waiter[] = [];
  #closed = false;
  #started = false;

  /** Starts no worker yet: `start()` or the first job does. */
  constructor(opts: WorkerPoolOptions) {
    this.#opts = Object.freeze({ ...opts });
  }

  /** Starts the `size` workers in the background (idempotent). */
  start(): void {
    if (this.#started || this.#closed) return;
    this.#started = true;
    for (let i = 0; i < this.#opts.size; i++) this.#slots.push(this.#spawn());
  }

  /** Workers started (running, starting or idle); 0 until `start()` or the first job. */
  get workers(): number {
    return this.#slots.length;
  }

  /** Resolves when every worker has started (benchmarks, tests). */
  async ready(): Promise<void> {
    await Promise.all(this.#slots.map((s) => s.ready));
  }

  /** Posts `job.message` to a free worker and resolves with its reply. */
  run(job: WorkerJob): Promise<unknown> {
    if (this.#closed) return Promise.reject(new PoolError('closed', 'the code sandbox is shut down'));
    if (job.signal.aborted) return Promise.reject(new PoolError('aborted', 'Code execution was stopped.'));
    this.start();
    return new Promise((resolve, reject) => {
      this.#queue.push({ job, resolve, reject });
      this.#pump();
    });
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const w of this.#queue.splice(0)) w.reject(new PoolError('closed', 'the code sandbox is shut down'));
    await Promise.all(this.#slots.splice(0).map((s) => s.worker.terminate()));
  }

  #spawn(): Slot {
    const script = this.#opts.script;
    const shared = this.#opts.interruptible ? new SharedArrayBuffer(8) : undefined;
    const entry = workerEntry(script);
    const worker = new Worker(entry.filename, {
      eval: entry.eval,
      workerData: shared ? { ...(this.#opts.workerData as object), interrupt: shared } : this.#opts.workerData,
      env: {},
      resourceLimits: { maxOldGenerationSizeMb: this.#opts.heapMb },
      stdout: true,
      stderr: true,
    });
    worker.stdout.resume();
    worker.stderr.resume();
    worker.unref();
    const ready = new Promise<void>((resolve, reject) => {
      const onMsg = (m: { type?: string }) => {
        if (m?.type !== 'ready') return;
        worker.off('message', onMsg);
        resolve();
      };
      worker.on('message', onMsg);
      worker.once('error', reject);
      worker.once('exit', () => reject(new PoolError('crashed', 'the code sandbox worker exited while starting')));
    });
    ready.catch(() => undefined);
    const slot: Slot = { worker, ready, busy: false, runs: 0, ...(shared ? { interrupt: new Int32Array(shared) } : {}) };
    // A worker that dies while idle is replaced at once, not found dead by the next job.
    worker.once('exit', () => {
      if (!slot.busy && this.#slots.includes(slot)) this.#replace(slot);
    });
    return slot;
  }

  #replace(slot: Slot): void {
    const i = this.#slots.indexOf(slot);
    void slot.worker.terminate();
    if (i < 0) return;
    if (this.#closed) this.#slots.splice(i, 1);
    else this.#slots[i] = this.#spawn();
  }

  #pump(): void {
    while (this.#queue.length > 0) {
      let slot = this.#slots.find((s) => !s.busy);
      if (!slot && this.#opts.size === 0) {
        slot = this.#spawn();
        this.#slots.push(slot);
      }
      if (!slot) return;
      const waiter = this.#queue.shift()!;
      slot.busy = true;
      void this.#dispatch(slot, waiter);
    }
  }

  async #dispatch(slot: Slot, { job, resolve, reject }: Waiter): Promise<void> {
    const finish = (retire: boolean) => {
      slot.busy = false;
      slot.runs++;
      if (this.#opts.size === 0) {
        const i = this.#slots.indexOf(slot);
        if (i >= 0) this.#slots.splice(i, 1);
        void slot.worker.terminate();
      } else if (retire || slot.runs >= this.#opts.recycleAfter) this.#replace(slot);
      this.#pump();
    };
    try {
      await slot.ready;
    } catch (err) {
      finish(true);
      reject(err instanceof PoolError ? err : new PoolError('crashed', `the code sandbox failed to start: ${(err as Error).message}`));
      return;
    }
    if (job.signal.aborted) {
      finish(false);
      reject(new PoolError('aborted', 'Code execution was stopped.'));
      return;
    }
    const { worker, interrupt } = slot;
    const interruptBy = (why: number) => {
      if (!interrupt) return;
      Atomics.store(interrupt, 1, why);
      Atomics.store(interrupt, 0, 2);
    };
    let answered = false;
    let freed = false;
    let retireWhenIdle = false;
    // The caller's answer and the worker's return to the pool are separate: an interruptible
    // worker cleans up (or winds down after a stop) between the two.
    const answer = (fn: () => void) => {
      if (answered) return;
      answered = true;
      clearTimeout(softTimer);
      job.signal.removeEventListener('abort', onAbort);
      fn();
    };
    const free = (retire: boolean) => {
      if (freed) return;
      freed = true;
      clearTimeout(hardTimer);
      clearTimeout(softTimer);
      worker.off('message', onMessage);
      worker.off('exit', onExit);
      worker.off('error', onError);
      finish(retire);
    };
    const onMessage = (m: { type?: string; reply?: unknown; retire?: boolean }) => {
      if (m?.type === 'reply') {
        answer(() => resolve(m.reply));
        if (interrupt) retireWhenIdle ||= m.retire === true;
        else free(m.retire === true);
      } else if (m?.type === 'idle' && interrupt) free(retireWhenIdle || m.retire === true);
    };
    const onExit = () => {
      answer(() => reject(new PoolError('crashed', 'the code sandbox worker ended unexpectedly')));
      free(true);
    };
    const onError = (e: Error) => {
      answer(() => reject(new PoolError('crashed', `the code sandbox worker failed: ${e.message}`)));
      free(true);
    };
    const onAbort = () => {
      answer(() => reject(new PoolError('aborted', 'Code execution was stopped.')));
      if (!interrupt) return free(true);
      interruptBy(INTERRUPT_STOP);
      retireWhenIdle = false;
      clearTimeout(hardTimer);
      hardTimer = setTimeout(() => free(true), this.#opts.interruptible!.stopGraceMs);
    };
    let hardTimer = setTimeout(() => {
      answer(() => reject(new PoolError('timeout', 'timeout')));
      free(true);
    }, job.hardTimeoutMs);
    const softTimer = interrupt && job.softTimeoutMs !== undefined ? setTimeout(() => interruptBy(INTERRUPT_TIMEOUT), job.softTimeoutMs) : undefined;
    worker.on('message', onMessage);
    worker.once('exit', onExit);
    worker.once('error', onError);
    job.signal.addEventListener('abort', onAbort, { once: true });
    worker.postMessage(job.message);
  }
}
