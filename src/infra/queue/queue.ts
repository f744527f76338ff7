import type { Transaction } from 'kysely';
import type { Database } from '../../store/schema.js';

/**
 * Durable background jobs: a port with one implementation per deployment, chosen by `QUEUE`
 * (`create-queue.ts`): `db-queue.ts` (embedded) keeps jobs in the main database, so it works on
 * SQLite and PostgreSQL alike; `bullmq-queue.ts` runs them on BullMQ (Redis), with jobs enqueued
 * inside a transaction passing through an outbox table (`outbox-relay.ts`).
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
 * - A job enqueued with `tx` exists exactly when that transaction commits (never for a rollback).
 * - A repeatable job (`repeat`) runs once per tick on one worker of the whole deployment.
 * - Failed ("dead") jobs are kept; `list` shows them and `retry` queues one again.
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

export type JobStatus = 'queued' | 'running' | 'done' | 'failed';

/** One job as `list` shows it (the same fields on every runner). */
export interface JobInfo {
  readonly id: string;
  readonly kind: string;
  readonly status: JobStatus;
  /** Attempts started so far. */
  readonly attempts: number;
  readonly maxAttempts: number;
  readonly lastError: string | null;
  /** Epoch ms: when it is due (queued) or was last due. */
  readonly runAt: number;
  readonly createdAt: number;
}

export interface ListJobsOptions {
  /** Only failed ("dead") jobs. */
  readonly failedOnly?: boolean;
  /** Newest first, at most this many (default 100). */
  readonly limit?: number;
}

/**
 * A job this process claimed for itself as it enqueued it (`Queue.claimLocal`): its row is written
 * `running` under this worker's lease in the caller's transaction, so it is recovered like any
 * other job if the process dies, but it starts without a poll or a read of the table.
 */
export interface LocalJob {
  readonly id: string;
  /** After the transaction commits: runs `run` as this job's attempt (lease renewed, row finished, retried or failed as any job). */
  start(run: (ctx: JobContext) => Promise<void>): void;
  /** After the transaction rolled back: frees the slot it held. */
  release(): void;
}

export interface Queue {
  /**
   * Writes a job in `tx` that this process runs itself right after the commit, when it runs a
   * worker for `kind` with a free slot; `undefined` otherwise (enqueue it then). Runners without
   * an in-process worker (BullMQ) do not implement it.
   */
  claimLocal?(kind: string, payload: unknown, tx: Transaction<Database>): Promise<LocalJob | undefined>;
  /** Registers the handler for a kind; register every kind before `start`. */
  register<P>(kind: string, handler: JobHandler<P>, opts?: RegisterOptions): void;
  /** Persists a job and wakes a local worker; returns the job id. */
  enqueue(kind: string, payload: unknown, opts?: EnqueueOptions): Promise<string>;
  /** Wakes local workers now (after committing a transaction that enqueued jobs). */
  notify(): void;
  /**
   * Declares a timer: a job of `kind` (registered on workers) runs every `everyMs`, on one worker
   * of the deployment per tick, whichever processes declare it. Idempotent; a new `everyMs` replaces
   * the old one.
   */
  repeat(kind: string, everyMs: number, payload?: unknown): Promise<void>;
  /** Jobs, newest first (failed ones only with `failedOnly`), for operators (`dovetail jobs list`). */
  list(opts?: ListJobsOptions): Promise<JobInfo[]>;
  /** Queues a failed job again with its attempts reset; false when no failed job has this id. */
  retry(id: string): Promise<boolean>;
  /** Jobs by status (queued, running, done, failed), for metrics; BullMQ counts the done jobs it still keeps. */
  counts(): Promise<Record<string, number>>;
  /** Starts the worker loop (no-op when this process runs no worker). */
  start(): void;
  /** Stops claiming, aborts running handlers and hands their jobs back to the queue. */
  close(): Promise<void>;
}

export interface QueueConfig {
  /** Which runner (`QUEUE`: bullmq when `REDIS_URL` is set, else embedded). Absent: embedded. */
  readonly runner?: 'embedded' | 'bullmq';
  /** Per-kind concurrency (`QUEUE_CONCURRENCY_<KIND>`, the kind upper-cased with `.`/`-` as `_`). */
  readonly concurrencyByKind?: Readonly<Record<string, number>>;
  /** Run a worker loop in this process (`QUEUE_WORKER`, default true). */
  readonly worker: boolean;
  /** Jobs run at once by one worker (`QUEUE_CONCURRENCY`, default 2). */
  readonly concurrency: number;
  /** A claimed job's lease; renewed every third of it while running (`QUEUE_LEASE_MS`, default 30000). */
  readonly leaseMs: number;
  /** Poll interval when idle, of the embedded worker and of the outbox relay (`QUEUE_POLL_MS`, default 500). */
  readonly pollMs: number;
  /** Attempt limit (`QUEUE_MAX_ATTEMPTS`, default 3). */
  readonly maxAttempts: number;
  /** First retry delay; doubles per attempt (`QUEUE_RETRY_DELAY_MS`, default 1000). */
  readonly retryDelayMs: number;
}

/** The config key naming a kind's concurrency: `knowledge.index` → `QUEUE_CONCURRENCY_KNOWLEDGE_INDEX`. */
export function concurrencyKey(kind: string): string {
  return `QUEUE_CONCURRENCY_${kind.toUpperCase().replace(/[^A-Z0-9]/g, '_')}`;
}

/** A kind's concurrency: the register option, else its config override, else the queue's default. */
export function concurrencyOf(cfg: QueueConfig, kind: string, opts: RegisterOptions | undefined): number {
  return opts?.concurrency ?? cfg.concurrencyByKind?.[concurrencyKey(kind)] ?? cfg.concurrency;
}
