import type { Transaction } from 'kysely';
import type { Database } from '../../store/schema.js';

/**
 * Durable background jobs: a port with one implementation per deployment (`db-queue.ts` keeps
 * jobs in the main database, so it works on SQLite and PostgreSQL alike).
 *
 * Semantics every implementation keeps:
 * - `enqueue` persists the job before it returns; a job runs at least once, after `runAt`.
 * - A worker holds a job under a lease that it renews while the handler runs. A worker that dies
 *   stops renewing; once the lease has expired another worker (or the next boot) claims the job
 *   again and counts a new attempt.
 * - A handler that throws is retried with backoff until `maxAttempts`; then the job is `failed`
 *   and the handler's `onFailed` runs once, so the domain can record a terminal error (nothing is
 *   left "in progress" forever).
 * - Handlers must be idempotent: the same job can run more than once.
 */
export interface JobContext {
  readonly jobId: string;
  /** 1 for the first run. */
  readonly attempt: number;
  /** Aborted when the worker shuts down or loses the lease; stop promptly. */
  readonly signal: AbortSignal;
}

export interface JobHandler<P = unknown> {
  run(payload: P, ctx: JobContext): Promise<void>;
  /** Called once when the job has used its last attempt (or its lease ran out on the last one). */
  onFailed?(payload: P, error: string): Promise<void>;
}

export interface EnqueueOptions {
  /** Epoch ms; default now. */
  readonly runAt?: number;
  /** Default: the queue's configured attempt limit. */
  readonly maxAttempts?: number;
  /**
   * Enqueue inside the caller's transaction, so the job exists exactly when the caller's writes
   * do (no state left waiting for a job that was never written). Call `notify()` after commit.
   */
  readonly tx?: Transaction<Database>;
}

export interface RegisterOptions {
  /** Jobs of this kind one worker runs at once; default the queue's `concurrency`. */
  readonly concurrency?: number;
  /** The lease of a claimed job of this kind, in ms; default the queue's `leaseMs`. */
  readonly leaseMs?: number;
}

export interface Queue {
  /** Registers the handler for a kind; register every kind before `start`. */
  register<P>(kind: string, handler: JobHandler<P>, opts?: RegisterOptions): void;
  /** Persists a job and wakes a local worker; returns the job id. */
  enqueue(kind: string, payload: unknown, opts?: EnqueueOptions): Promise<string>;
  /** Wakes local workers now (after committing a transaction that enqueued jobs). */
  notify(): void;
  /** Starts the worker loop (no-op when this process runs no worker). */
  start(): void;
  /** Stops claiming, aborts running handlers and hands their jobs back to the queue. */
  close(): Promise<void>;
}

export interface QueueConfig {
  /** Run a worker loop in this process (`QUEUE_WORKER`, default true). */
  readonly worker: boolean;
  /** Jobs run at once by one worker (`QUEUE_CONCURRENCY`, default 2). */
  readonly concurrency: number;
  /** A claimed job's lease; renewed every third of it while running (`QUEUE_LEASE_MS`, default 30000). */
  readonly leaseMs: number;
  /** Poll interval when idle (`QUEUE_POLL_MS`, default 500). */
  readonly pollMs: number;
  /** Attempt limit (`QUEUE_MAX_ATTEMPTS`, default 3). */
  readonly maxAttempts: number;
  /** First retry delay; doubles per attempt (`QUEUE_RETRY_DELAY_MS`, default 1000). */
  readonly retryDelayMs: number;
}
