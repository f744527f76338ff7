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
  /**
   * Whom the job runs for (an app's id): each tenant has its own queue, served in turn, and may
   * hold at most `maxWorkersPerTenant` workers; with `isolateTenants` a worker serves one tenant.
   */
  readonly tenant?: string;
}

/** The failures a pool reports instead of a worker's reply (`full`: the tenant's queue is full). */
export type PoolFailure = 'timeout' | 'aborted' | 'crashed' | 'closed' | 'full';

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
  /** With `isolateTenants`: the tenant whose jobs this worker ran (undefined: none yet). */
  tenant?: string;
  /** When it last became free (which idle worker another tenant's job replaces first). */
  freedAt: number;
  /** `[0]`: set to 2 to interrupt the run (Pyodide's SIGINT); `[1]`: why (1 time limit, 2 stop). */
  interrupt?: Int32Array;
}

/** Why an interruptible worker was interrupted (`interrupt[1]`). */
export const INTERRUPT_TIMEOUT = 1;
export const INTERRUPT_STOP = 2;

interface Waiter {
  job: WorkerJob;
  tenant: string;
  resolve(v: unknown): void;
  reject(e: unknown): void;
  /** Removes the waiter from its queue when its job is stopped before a worker took it. */
  onAbort(): void;
  /** A worker gave the job back unrun (see `refused` in WorkerPoolOptions.interruptible). */
  refused?: boolean;
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
   * terminating the worker; a worker that is not idle `stopGraceMs` later is terminated. A worker
   * that finds its state changed since it was last idle answers `{type: 'refused'}` without running
   * the job: it is replaced and the job waits first in line for another.
   */
  readonly interruptible?: { readonly stopGraceMs: number };
  /** Jobs of one tenant that may wait for a worker; one more is refused at once (`PoolError('full')`). */
  readonly maxQueuedPerTenant: number;
  /** Workers one tenant's jobs may hold at once (the others stay free for other tenants). */
  readonly maxWorkersPerTenant: number;
  /**
   * A worker serves one tenant: it is bound to the tenant of its first job, and an idle worker of
   * another tenant is replaced by a fresh one before it can take a job (nothing a job leaves in
   * the worker can reach another tenant's job).
   */
  readonly isolateTenants?: boolean;
}

/** The tenant of a job that names none. */
const NO_TENANT = '';

/**
 * A fixed set of worker threads that run one job at a time each. Workers start in the background
 * at `start()` (or the first job), so no job waits for an interpreter to boot unless the pool is busy or empty. A job
 * that overruns its hard timeout, is aborted, or crashes its worker ends that worker (terminate),
 * and a fresh one takes its place; so does a worker that served `recycleAfter` jobs.
 *
 * Jobs wait in one queue per tenant (app); a free worker goes to the tenant served least recently
 * among those with a waiting job and fewer than `maxWorkersPerTenant` workers, so one app's long
 * runs delay another app's by at most the runs already started, and a tenant's queue is bounded.
 */
export class WorkerPool {
  readonly #opts: WorkerPoolOptions;
  readonly #slots: Slot[] = [];
  /** Waiting jobs per tenant (in the order their queues were made: who goes first on a tie). */
  readonly #queues = new Map<string, Waiter[]>();
  /** Workers each tenant's jobs hold now. */
  readonly #held = new Map<string, number>();
  /** When each tenant with a job waiting or running was last given a worker (`#turn` then). */
  readonly #servedAt = new Map<string, number>();
  #turn = 0;
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

  /**
   * Posts `job.message` to a free worker and resolves with its reply. Rejects with
   * `PoolError('full')` at once when `maxQueuedPerTenant` of the tenant's jobs already wait.
   */
  run(job: WorkerJob): Promise<unknown> {
    if (this.#closed) return Promise.reject(new PoolError('closed', 'the code sandbox is shut down'));
    if (job.signal.aborted) return Promise.reject(new PoolError('aborted', 'Code execution was stopped.'));
    this.start();
    const tenant = job.tenant ?? NO_TENANT;
    const waiting = this.#queues.get(tenant)?.length ?? 0;
    if (waiting >= this.#opts.maxQueuedPerTenant) return Promise.reject(new PoolError('full', `${waiting} jobs of this tenant already wait`));
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        job,
        tenant,
        resolve,
        reject,
        onAbort: () => {
          const q = this.#queues.get(tenant);
          const i = q?.indexOf(waiter) ?? -1;
          if (!q || i < 0) return;
          q.splice(i, 1);
          if (q.length === 0) this.#queues.delete(tenant);
          this.#forgetIfIdle(tenant);
          reject(new PoolError('aborted', 'Code execution was stopped.'));
        },
      };
      job.signal.addEventListener('abort', waiter.onAbort, { once: true });
      this.#enqueue(waiter, false);
      this.#pump();
    });
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const q of this.#queues.values()) {
      for (const w of q) {
        w.job.signal.removeEventListener('abort', w.onAbort);
        w.reject(new PoolError('closed', 'the code sandbox is shut down'));
      }
    }
    this.#queues.clear();
    await Promise.all(this.#slots.splice(0).map((s) => s.worker.terminate()));
  }

  /** Queues a waiter: last in its tenant's queue, or first (a job a worker gave back unrun). */
  #enqueue(waiter: Waiter, first: boolean): void {
    const q = this.#queues.get(waiter.tenant);
    if (!q) this.#queues.set(waiter.tenant, [waiter]);
    else if (first) q.unshift(waiter);
    else q.push(waiter);
  }

  /** A tenant with nothing waiting or running is served as if new next time. */
  #forgetIfIdle(tenant: string): void {
    if (!this.#queues.has(tenant) && !this.#held.has(tenant)) this.#servedAt.delete(tenant);
  }

  #cap(): number {
    return Math.max(1, this.#opts.maxWorkersPerTenant);
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
    const slot: Slot = { worker, ready, busy: false, runs: 0, freedAt: 0, ...(shared ? { interrupt: new Int32Array(shared) } : {}) };
    // A worker that dies while idle is replaced at once, not found dead by the next job.
    worker.once('exit', () => {
      if (!slot.busy && this.#slots.includes(slot)) this.#replace(slot);
    });
    return slot;
  }

  /** Terminates the slot's worker and puts a fresh one in its place; returns the fresh slot. */
  #replace(slot: Slot): Slot | undefined {
    const i = this.#slots.indexOf(slot);
    void slot.worker.terminate();
    if (i < 0) return undefined;
    if (this.#closed) {
      this.#slots.splice(i, 1);
      return undefined;
    }
    const fresh = this.#spawn();
    this.#slots[i] = fresh;
    return fresh;
  }

  /**
   * A free worker for `tenant`'s next job: one bound to it, else a fresh one, else a new one (a
   * pool of size 0) or, isolating tenants, a fresh one in place of the idle worker of another
   * tenant (one whose tenant has no job waiting first, then the one idle longest).
   */
  #freeSlot(tenant: string): Slot | undefined {
    const idle = this.#slots.filter((s) => !s.busy);
    const own = this.#opts.isolateTenants ? (idle.find((s) => s.tenant === tenant) ?? idle.find((s) => s.tenant === undefined)) : idle[0];
    if (own) return own;
    if (this.#opts.size === 0) {
      const slot = this.#spawn();
      this.#slots.push(slot);
      return slot;
    }
    if (idle.length === 0) return undefined;
    const other = idle.sort((a, b) => Number(this.#queues.has(a.tenant ?? NO_TENANT)) - Number(this.#queues.has(b.tenant ?? NO_TENANT)) || a.freedAt - b.freedAt)[0]!;
    return this.#replace(other);
  }

  /** Gives free workers to waiting jobs: each time to the tenant served least recently (under its cap). */
  #pump(): void {
    for (;;) {
      let next: string | undefined;
      for (const tenant of this.#queues.keys()) {
        if ((this.#held.get(tenant) ?? 0) >= this.#cap()) continue;
        if (next === undefined || (this.#servedAt.get(tenant) ?? 0) < (this.#servedAt.get(next) ?? 0)) next = tenant;
      }
      if (next === undefined) return;
      const slot = this.#freeSlot(next);
      if (!slot) return;
      const queue = this.#queues.get(next)!;
      const waiter = queue.shift()!;
      if (queue.length === 0) this.#queues.delete(next);
      waiter.job.signal.removeEventListener('abort', waiter.onAbort);
      slot.busy = true;
      if (this.#opts.isolateTenants) slot.tenant = next;
      this.#held.set(next, (this.#held.get(next) ?? 0) + 1);
      this.#servedAt.set(next, ++this.#turn);
      void this.#dispatch(slot, waiter);
    }
  }

  async #dispatch(slot: Slot, waiter: Waiter): Promise<void> {
    const { job, resolve, reject } = waiter;
    const finish = (retire: boolean) => {
      slot.busy = false;
      slot.runs++;
      slot.freedAt = performance.now();
      const held = (this.#held.get(waiter.tenant) ?? 1) - 1;
      if (held > 0) this.#held.set(waiter.tenant, held);
      else this.#held.delete(waiter.tenant);
      this.#forgetIfIdle(waiter.tenant);
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
      else if (m?.type === 'refused' && !answered) {
        // The worker found its state changed since its last job and ran nothing: it is replaced,
        // and the job goes back first in its queue (once; a second refusal fails it).
        answered = true;
        clearTimeout(softTimer);
        job.signal.removeEventListener('abort', onAbort);
        if (waiter.refused || job.signal.aborted) reject(job.signal.aborted ? new PoolError('aborted', 'Code execution was stopped.') : new PoolError('crashed', 'the code sandbox worker refused the run twice'));
        else {
          waiter.refused = true;
          job.signal.addEventListener('abort', waiter.onAbort, { once: true });
          this.#enqueue(waiter, true);
        }
        free(true);
      }
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
