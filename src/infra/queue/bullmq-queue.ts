import { Queue as BullQueue, WaitingError, type Job, type JobsOptions } from 'bullmq';
import { Redis } from 'ioredis';
import type { Kysely } from 'kysely';
import type { Database } from '../../store/schema.js';
import type { Clock } from '../clock.js';
import { newId } from '../ids.js';
import type { Logger } from '../logger.js';
import { OutboxRelay, writeOutbox, type OutboxRow } from './outbox-relay.js';
import { RetakingWorker } from './bullmq-worker.js';
import { logRedisErrors } from '../redis-errors.js';
import { concurrencyOf, type EnqueueOptions, type JobHandler, type JobInfo, type JobStatus, type ListJobsOptions, type Queue, type QueueConfig, type RegisterOptions } from './queue.js';

export interface BullmqQueueOptions {
  readonly redisUrl: string;
  /** `REDIS_KEY_PREFIX`; BullMQ's keys are `<prefix>bull:<kind>:…`. */
  readonly keyPrefix: string;
}

interface Registered {
  readonly handler: JobHandler<unknown>;
  readonly opts: RegisterOptions | undefined;
}

/** A processing of a job here (one job can have two: see RetakingWorker). */
interface Running {
  readonly jobId: string;
  /** BullMQ's lock token of this processing. */
  readonly token: string | undefined;
  readonly abort: AbortController;
  readonly done: Promise<void>;
  /** Set when this worker took the job again while this processing still ran: the job is no longer its. */
  superseded: boolean;
}

/** BullMQ's job states as the port names them. */
const STATUS: Record<string, JobStatus> = {
  waiting: 'queued',
  delayed: 'queued',
  prioritized: 'queued',
  'waiting-children': 'queued',
  paused: 'queued',
  active: 'running',
  completed: 'done',
  failed: 'failed',
};

/**
 * The job runner on BullMQ (Redis): one BullMQ queue per job kind (so each kind has its own
 * worker concurrency and lock duration), BullMQ's lock + stalled-job check as the lease, its
 * exponential back-off for retries, failed jobs kept. Jobs enqueued with `tx` go through the outbox
 * table (`outbox-relay.ts`); jobs enqueued without one are added to BullMQ at once (the same
 * guarantee: persisted when `enqueue` returns). Repeatable jobs are BullMQ job schedulers.
 */
export class BullmqQueue implements Queue {
  readonly #db: Kysely<Database>;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #cfg: QueueConfig;
  readonly #prefix: string;
  readonly #redis: Redis;
  readonly #workerRedis: Redis;
  readonly #relay: OutboxRelay;
  readonly #handlers = new Map<string, Registered>();
  readonly #queues = new Map<string, BullQueue>();
  readonly #workers = new Map<string, RetakingWorker>();
  readonly #running = new Set<Running>();
  #started = false;
  #closing = false;

  constructor(db: Kysely<Database>, clock: Clock, logger: Logger, cfg: QueueConfig, opts: BullmqQueueOptions) {
    this.#db = db;
    this.#clock = clock;
    this.#log = logger;
    this.#cfg = cfg;
    this.#prefix = `${opts.keyPrefix}bull`;
    // Producers (enqueue, list, the relay) fail after a few retries when Redis is gone, rather than
    // hang a request; workers block on Redis and BullMQ wants no retry limit on theirs.
    this.#redis = new Redis(opts.redisUrl, { maxRetriesPerRequest: 3 });
    logRedisErrors(this.#redis, logger, 'queue redis connection');
    this.#workerRedis = new Redis(opts.redisUrl, { maxRetriesPerRequest: null, lazyConnect: true });
    logRedisErrors(this.#workerRedis, logger, 'queue worker redis connection');
    this.#relay = new OutboxRelay(db, (row) => this.#send(row), cfg.pollMs, logger);
  }

  register<P>(kind: string, handler: JobHandler<P>, opts?: RegisterOptions): void {
    if (kind.includes(':')) throw new Error(`job kind must not contain ":", got "${kind}"`);
    this.#handlers.set(kind, { handler: handler as JobHandler<unknown>, opts });
    if (this.#started && this.#cfg.worker) this.#startWorker(kind);
  }

  async enqueue(kind: string, payload: unknown, opts: EnqueueOptions = {}): Promise<string> {
    const row: OutboxRow = {
      id: newId(),
      kind,
      payload: JSON.stringify(payload),
      run_at: opts.runAt ?? this.#clock.now(),
      max_attempts: opts.maxAttempts ?? this.#cfg.maxAttempts,
      created_at: this.#clock.now(),
    };
    if (opts.tx) await writeOutbox(opts.tx, row);
    else await this.#send(row);
    return row.id;
  }

  notify(): void {
    this.#relay.notify();
  }

  async repeat(kind: string, everyMs: number, payload: unknown = {}): Promise<void> {
    if (!Number.isInteger(everyMs) || everyMs < 1) throw new Error(`repeat interval must be a positive integer of ms, got ${everyMs}`);
    await this.#queue(kind).upsertJobScheduler(kind, { every: everyMs }, { name: kind, data: payload, opts: this.#jobOpts(this.#cfg.maxAttempts) });
  }

  async list(opts: ListJobsOptions = {}): Promise<JobInfo[]> {
    const limit = opts.limit ?? 100;
    const out: JobInfo[] = [];
    if (!opts.failedOnly) {
      const rows = await this.#db.selectFrom('job_outbox').selectAll().orderBy('created_at', 'desc').limit(limit).execute();
      for (const r of rows) out.push({ id: r.id, kind: r.kind, status: 'queued', attempts: 0, maxAttempts: r.max_attempts, lastError: null, runAt: r.run_at, createdAt: r.created_at });
    }
    const types = opts.failedOnly ? (['failed'] as const) : (['waiting', 'delayed', 'prioritized', 'active', 'completed', 'failed'] as const);
    for (const name of await this.#kinds()) {
      const q = this.#queue(name);
      for (const type of types) {
        for (const job of await q.getJobs(type, 0, limit - 1, false)) {
          if (job?.id) out.push(this.#info(job, STATUS[type] ?? 'queued'));
        }
      }
    }
    return out.sort((a, b) => b.createdAt - a.createdAt).slice(0, limit);
  }

  async counts(): Promise<Record<string, number>> {
    const out: Record<string, number> = {};
    const add = (status: string, n: number) => n > 0 && (out[status] = (out[status] ?? 0) + n);
    const outbox = await this.#db.selectFrom('job_outbox').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirst();
    add('queued', Number(outbox?.n ?? 0));
    for (const name of await this.#kinds()) {
      const c = await this.#queue(name).getJobCounts('waiting', 'delayed', 'prioritized', 'active', 'completed', 'failed');
      for (const [state, n] of Object.entries(c)) add(STATUS[state] ?? 'queued', n);
    }
    return out;
  }

  async retry(id: string): Promise<boolean> {
    for (const name of await this.#kinds()) {
      const job = await this.#queue(name).getJob(id);
      if (!job) continue;
      if (!(await job.isFailed())) return false;
      await job.retry('failed', { resetAttemptsMade: true, resetAttemptsStarted: true });
      return true;
    }
    return false;
  }

  start(): void {
    if (this.#started) return;
    this.#started = true;
    this.#relay.start();
    if (!this.#cfg.worker) return;
    for (const kind of this.#handlers.keys()) this.#startWorker(kind);
  }

  /**
   * Stops at once without handing anything back or renewing a lock, as a killed process would
   * (tests and benches: another worker takes the jobs over once their locks run out).
   */
  async abandon(): Promise<void> {
    this.#closing = true;
    await this.#relay.close();
    await Promise.all([...this.#workers.values()].map((w) => w.close(true).catch(() => undefined)));
    this.#running.clear();
  }

  async close(): Promise<void> {
    this.#closing = true;
    await this.#relay.close();
    // Abort what runs (each aborted handler's job goes back to waiting; a job fetched meanwhile goes
    // straight back, see #process), then close. BullMQ's close() or pause() right after a job became
    // active can wait for ever, so neither comes first.
    for (const r of this.#running) r.abort.abort(new Error('worker shutting down'));
    await Promise.allSettled([...this.#running].map((r) => r.done));
    await Promise.allSettled([...this.#workers.values()].map((w) => w.close()));
    await Promise.allSettled([...this.#queues.values()].map((q) => q.close()));
    this.#redis.disconnect();
    this.#workerRedis.disconnect();
  }

  #jobOpts(maxAttempts: number): JobsOptions {
    return {
      attempts: maxAttempts,
      backoff: { type: 'exponential', delay: this.#cfg.retryDelayMs },
      // Done jobs are kept a while (a relay re-sending a row within that time adds nothing); failed ones until retried or removed.
      removeOnComplete: { age: 24 * 3600, count: 10_000 },
      removeOnFail: false,
    };
  }

  async #send(row: OutboxRow): Promise<void> {
    const delay = Math.max(0, row.run_at - this.#clock.now());
    await this.#queue(row.kind).add(row.kind, JSON.parse(row.payload), { ...this.#jobOpts(row.max_attempts), jobId: row.id, delay, timestamp: row.created_at });
  }

  #queue(kind: string): BullQueue {
    let q = this.#queues.get(kind);
    if (!q) {
      q = new BullQueue(kind, { connection: this.#redis, prefix: this.#prefix });
      logRedisErrors(q, this.#log, 'queue', { kind });
      this.#queues.set(kind, q);
    }
    return q;
  }

  /** Every kind with jobs in this deployment's Redis (a CLI process registers none), plus the registered ones. */
  async #kinds(): Promise<string[]> {
    const names = new Set(this.#handlers.keys());
    const head = `${this.#prefix}:`;
    let cursor = '0';
    do {
      const [next, keys] = await this.#redis.scan(cursor, 'MATCH', `${head}*:meta`, 'COUNT', 500);
      cursor = next;
      for (const k of keys) names.add(k.slice(head.length, -':meta'.length));
    } while (cursor !== '0');
    return [...names].sort();
  }

  #info(job: Job, status: JobStatus): JobInfo {
    return {
      id: job.id!,
      kind: job.name,
      status,
      attempts: job.attemptsMade + (status === 'running' ? 1 : 0),
      maxAttempts: job.opts.attempts ?? 1,
      lastError: job.failedReason || null,
      runAt: job.timestamp + (job.delay ?? 0),
      createdAt: job.timestamp,
    };
  }

  #startWorker(kind: string): void {
    if (this.#workers.has(kind) || this.#closing) return;
    const { handler, opts } = this.#handlers.get(kind)!;
    const leaseMs = opts?.leaseMs ?? this.#cfg.leaseMs;
    const worker = new RetakingWorker(kind, (job, token, signal) => this.#process(handler, job, token, signal), {
      connection: this.#workerRedis,
      prefix: this.#prefix,
      concurrency: concurrencyOf(this.#cfg, kind, opts),
      lockDuration: leaseMs,
      stalledInterval: Math.max(100, Math.floor(leaseMs / 2)),
      // A job whose worker keeps dying counts those as attempts, as the embedded lease does.
      maxStalledCount: this.#cfg.maxAttempts,
      // An idle worker wakes at least this often (BullMQ blocks on Redis for new jobs meanwhile).
      drainDelay: 5,
    });
    // BullMQ's own connections (the worker's blocking one) report their errors here
    logRedisErrors(worker, this.#log, 'queue worker', { kind });
    worker.onLockLost((id, token) => {
      for (const r of this.#running) if (r.jobId === id && r.token === token) r.abort.abort(new Error('lease lost'));
    });
    worker.on('failed', (job, err) => {
      if (job) void this.#afterFailure(handler, job, err);
    });
    this.#workers.set(kind, worker);
  }

  async #process(handler: JobHandler<unknown>, job: Job, token: string | undefined, signal: AbortSignal | undefined): Promise<void> {
    const abort = new AbortController();
    const id = job.id!;
    signal?.addEventListener('abort', () => abort.abort(signal.reason), { once: true });
    let settle!: () => void;
    const done = new Promise<void>((resolve) => (settle = resolve));
    // This worker lost the job's lock (it stalled) and has taken the job again: an earlier
    // processing still running here is stale, it stops and leaves the job to this one.
    for (const r of this.#running) {
      if (r.jobId !== id) continue;
      r.superseded = true;
      r.abort.abort(new Error('lease lost: this worker took the job again'));
    }
    const running: Running = { jobId: id, token, abort, done, superseded: false };
    this.#running.add(running);
    if (this.#closing) abort.abort(new Error('worker shutting down'));
    try {
      abort.signal.throwIfAborted();
      await handler.run(job.data, { jobId: id, attempt: job.attemptsMade + 1, signal: abort.signal });
      if (running.superseded) throw new WaitingError();
    } catch (err) {
      if (running.superseded) {
        // The job belongs to the later processing: neither complete nor fail it with this one's stale lock.
        this.#log.info({ job: id, err: (err as Error).message }, 'an earlier processing of a job taken again ended');
        throw new WaitingError();
      }
      if (this.#closing && abort.signal.aborted) {
        // Shutdown: hand the job back to waiting without counting the attempt.
        await job.moveToWait(token);
        throw new WaitingError();
      }
      if (job.attemptsMade + 1 < (job.opts.attempts ?? 1)) this.#log.warn({ job: id, attempt: job.attemptsMade + 1, err: (err as Error).message }, 'job failed; retrying');
      throw err;
    } finally {
      this.#running.delete(running);
      settle();
    }
  }

  /** `onFailed` once, when the job is failed for good (not on a failure that is retried). */
  async #afterFailure(handler: JobHandler<unknown>, job: Job, err: Error): Promise<void> {
    try {
      if (!(await job.isFailed())) return;
      this.#log.error({ job: job.id, attempts: job.attemptsMade, err: err.message }, 'job failed for good');
      if (handler.onFailed) await handler.onFailed(job.data, job.failedReason || err.message);
    } catch (e) {
      this.#log.error({ job: job.id, err: e }, 'clean-up of a failed job failed');
    }
  }
}
