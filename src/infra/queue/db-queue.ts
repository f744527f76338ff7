import type { Kysely } from 'kysely';
import type { Database } from '../../store/schema.js';
import type { Clock } from '../clock.js';
import { newId } from '../ids.js';
import { jobsByStatus } from './job-counts.js';
import type { Logger } from '../logger.js';
import type { Transaction } from 'kysely';
import { concurrencyOf, type EnqueueOptions, type JobContext, type JobHandler, type JobInfo, type ListJobsOptions, type LocalJob, type Queue, type QueueConfig, type RegisterOptions } from './queue.js';

interface Running {
  readonly id: string;
  readonly kind: string;
  readonly abort: AbortController;
  readonly heartbeat: NodeJS.Timeout;
  readonly done: Promise<void>;
}

/**
 * The job queue kept in the main database (table `jobs`). Claiming is a compare-and-set UPDATE on
 * one row, so several workers (processes) can share the table; a lease that is not renewed makes
 * the job claimable again. A repeatable job (`repeat`) is one row with a fixed id (`repeat:<kind>`)
 * that goes back to `queued` at its next tick instead of `done`, so one worker acts per tick.
 */
export class DbQueue implements Queue {
  readonly #db: Kysely<Database>;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #cfg: QueueConfig;
  readonly #handlers = new Map<string, JobHandler<unknown>>();
  readonly #kindOpts = new Map<string, RegisterOptions>();
  /** Repeatable kinds and their interval (ms). */
  readonly #repeats = new Map<string, number>();
  readonly #running = new Map<string, Running>();
  /** Slots held by jobs claimed with `claimLocal` whose transaction has not ended yet, per kind. */
  readonly #reserved = new Map<string, number>();
  readonly #workerId = newId();
  #timer: NodeJS.Timeout | undefined;
  #started = false;
  #closed = false;
  #polling = false;
  #pollAgain = false;

  constructor(db: Kysely<Database>, clock: Clock, logger: Logger, cfg: QueueConfig) {
    this.#db = db;
    this.#clock = clock;
    this.#log = logger;
    this.#cfg = cfg;
  }

  register<P>(kind: string, handler: JobHandler<P>, opts?: RegisterOptions): void {
    this.#handlers.set(kind, handler as JobHandler<unknown>);
    if (opts) this.#kindOpts.set(kind, opts);
  }

  async repeat(kind: string, everyMs: number, payload: unknown = {}): Promise<void> {
    if (!Number.isInteger(everyMs) || everyMs < 1) throw new Error(`repeat interval must be a positive integer of ms, got ${everyMs}`);
    this.#repeats.set(kind, everyMs);
    const id = `repeat:${kind}`;
    const now = this.#clock.now();
    await this.#db
      .insertInto('jobs')
      .values({ id, kind, payload: JSON.stringify(payload), status: 'queued', attempts: 0, max_attempts: this.#cfg.maxAttempts, run_at: now, lease_until: null, locked_by: null, last_error: null, created_at: now, updated_at: now })
      .onConflict((oc) => oc.column('id').doNothing())
      .execute();
    // A timer row left failed or done (by an older version) ticks again.
    await this.#db.updateTable('jobs').set({ status: 'queued', attempts: 0, run_at: now, updated_at: now }).where('id', '=', id).where('status', 'in', ['done', 'failed']).execute();
    this.#wake();
  }

  async list(opts: ListJobsOptions = {}): Promise<JobInfo[]> {
    let q = this.#db.selectFrom('jobs').selectAll();
    if (opts.failedOnly) q = q.where('status', '=', 'failed');
    const rows = await q.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(opts.limit ?? 100).execute();
    return rows.map((r) => ({
      id: r.id,
      kind: r.kind,
      status: r.status as JobInfo['status'],
      attempts: r.attempts,
      maxAttempts: r.max_attempts,
      lastError: r.last_error,
      runAt: r.run_at,
      createdAt: r.created_at,
    }));
  }

  counts(): Promise<Record<string, number>> {
    return jobsByStatus(this.#db);
  }

  async retry(id: string): Promise<boolean> {
    const now = this.#clock.now();
    const res = await this.#db.updateTable('jobs').set({ status: 'queued', attempts: 0, run_at: now, updated_at: now }).where('id', '=', id).where('status', '=', 'failed').executeTakeFirst();
    if (Number(res.numUpdatedRows) !== 1) return false;
    this.#wake();
    return true;
  }

  /**
   * Stops at once without handing anything back or renewing a lease, as a killed process would
   * (tests and benches: another worker takes the jobs over once their leases run out).
   */
  abandon(): void {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    for (const r of this.#running.values()) clearInterval(r.heartbeat);
    this.#running.clear();
  }

  #leaseMs(kind: string): number {
    return this.#kindOpts.get(kind)?.leaseMs ?? this.#cfg.leaseMs;
  }

  /** Kinds with a free slot in this worker (slots held by local claims count as taken). */
  #freeKinds(): string[] {
    const busy = new Map<string, number>(this.#reserved);
    for (const r of this.#running.values()) busy.set(r.kind, (busy.get(r.kind) ?? 0) + 1);
    return [...this.#handlers.keys()].filter((k) => (busy.get(k) ?? 0) < concurrencyOf(this.#cfg, k, this.#kindOpts.get(k)));
  }

  async claimLocal(kind: string, payload: unknown, tx: Transaction<Database>): Promise<LocalJob | undefined> {
    const handler = this.#handlers.get(kind);
    if (!this.#started || this.#closed || !handler || !this.#freeKinds().includes(kind)) return undefined;
    const hold = (d: number) => this.#reserved.set(kind, (this.#reserved.get(kind) ?? 0) + d);
    hold(1);
    const id = newId();
    const now = this.#clock.now();
    const maxAttempts = this.#cfg.maxAttempts;
    try {
      await tx
        .insertInto('jobs')
        .values({ id, kind, payload: JSON.stringify(payload), status: 'running', attempts: 1, max_attempts: maxAttempts, run_at: now, lease_until: now + this.#leaseMs(kind), locked_by: this.#workerId, last_error: null, created_at: now, updated_at: now })
        .execute();
    } catch (err) {
      hold(-1);
      throw err;
    }
    let settled = false;
    const settle = (): boolean => {
      if (settled) return false;
      settled = true;
      hold(-1);
      return true;
    };
    return {
      id,
      start: (run: (ctx: JobContext) => Promise<void>) => {
        if (!settle()) return;
        // this attempt runs `run`; a retry or a recovery after a crash runs the registered handler
        this.#execute(id, kind, { run: (_p, ctx) => run(ctx), ...(handler.onFailed ? { onFailed: handler.onFailed.bind(handler) } : {}) }, payload, 1, maxAttempts);
      },
      release: () => void settle(),
    };
  }

  async enqueue(kind: string, payload: unknown, opts: EnqueueOptions = {}): Promise<string> {
    const id = newId();
    const now = this.#clock.now();
    await (opts.tx ?? this.#db)
      .insertInto('jobs')
      .values({
        id,
        kind,
        payload: JSON.stringify(payload),
        status: 'queued',
        attempts: 0,
        max_attempts: opts.maxAttempts ?? this.#cfg.maxAttempts,
        run_at: opts.runAt ?? now,
        lease_until: null,
        locked_by: null,
        last_error: null,
        created_at: now,
        updated_at: now,
      })
      .execute();
    if (!opts.tx) this.#wake();
    return id;
  }

  notify(): void {
    this.#wake();
  }

  start(): void {
    if (!this.#cfg.worker || this.#started) return;
    this.#started = true;
    this.#schedule(0);
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    const running = [...this.#running.values()];
    for (const r of running) r.abort.abort(new Error('worker shutting down'));
    await Promise.allSettled(running.map((r) => r.done));
  }

  #wake(): void {
    if (!this.#started || this.#closed) return;
    if (this.#polling) this.#pollAgain = true;
    else this.#schedule(0);
  }

  #schedule(ms: number): void {
    if (this.#closed) return;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = setTimeout(() => void this.#poll(), ms);
    this.#timer.unref?.();
  }

  async #poll(): Promise<void> {
    if (this.#closed || this.#polling) return;
    this.#polling = true;
    try {
      do {
        this.#pollAgain = false;
        while (!this.#closed) {
          const kinds = this.#freeKinds();
          if (kinds.length === 0) break;
          const claimed = await this.#claim(kinds);
          if (!claimed) break;
        }
      } while (this.#pollAgain && !this.#closed);
    } catch (err) {
      this.#log.error({ err }, 'queue poll failed');
    } finally {
      this.#polling = false;
      this.#schedule(this.#cfg.pollMs);
    }
  }

  /** Claims one due job (queued, or running with an expired lease); false when none is due. */
  async #claim(kinds: string[]): Promise<boolean> {
    const now = this.#clock.now();
    const candidates = await this.#db
      .selectFrom('jobs')
      .selectAll()
      .where('kind', 'in', kinds)
      .where((eb) =>
        eb.or([
          eb.and([eb('status', '=', 'queued'), eb('run_at', '<=', now)]),
          eb.and([eb('status', '=', 'running'), eb('lease_until', '<', now)]),
        ]),
      )
      .orderBy('run_at')
      .limit(5)
      .execute();
    for (const job of candidates) {
      if (this.#running.has(job.id)) continue;
      // Compare-and-set on the exact state we read: only one worker wins a given row.
      const res = await this.#db
        .updateTable('jobs')
        .set({ status: 'running', attempts: job.attempts + 1, lease_until: now + this.#leaseMs(job.kind), locked_by: this.#workerId, updated_at: now })
        .where('id', '=', job.id)
        .where('status', '=', job.status)
        .where('attempts', '=', job.attempts)
        .executeTakeFirst();
      if (Number(res.numUpdatedRows) !== 1) continue;
      const attempt = job.attempts + 1;
      const handler = this.#handlers.get(job.kind)!;
      const payload: unknown = JSON.parse(job.payload);
      if (attempt > job.max_attempts) {
        // The previous holder died on the last attempt: a lease timeout counts as a failure.
        await this.#fail(job.id, job.kind, handler, payload, job.last_error ?? `the worker running it stopped responding (lease of ${this.#leaseMs(job.kind)} ms expired)`, attempt - 1);
        return true;
      }
      this.#execute(job.id, job.kind, handler, payload, attempt, job.max_attempts);
      return true;
    }
    return false;
  }

  #execute(id: string, kind: string, handler: JobHandler<unknown>, payload: unknown, attempt: number, maxAttempts: number): void {
    const abort = new AbortController();
    const leaseMs = this.#leaseMs(kind);
    let lost = false;
    const heartbeat = setInterval(() => {
      void this.#db
        .updateTable('jobs')
        .set({ lease_until: this.#clock.now() + leaseMs })
        .where('id', '=', id)
        .where('locked_by', '=', this.#workerId)
        .where('status', '=', 'running')
        .executeTakeFirst()
        .then((res) => {
          // Another worker took the job over (our lease ran out): stop working on it.
          if (Number(res.numUpdatedRows) === 0 && !abort.signal.aborted) {
            lost = true;
            abort.abort(new Error('lease lost'));
          }
        })
        .catch((err: unknown) => this.#log.warn({ err, job: id }, 'lease renewal failed'));
    }, Math.max(50, Math.floor(leaseMs / 3)));
    heartbeat.unref?.();
    const done = (async () => {
      try {
        await handler.run(payload, { jobId: id, attempt, signal: abort.signal });
        const every = this.#repeats.get(kind);
        if (every !== undefined && id === `repeat:${kind}`) await this.#finish(id, { status: 'queued', attempts: 0, run_at: this.#clock.now() + every, last_error: null });
        else await this.#finish(id, { status: 'done', last_error: null });
      } catch (err) {
        const message = err instanceof Error ? err.message : String(err);
        if (lost) {
          this.#log.warn({ job: id }, 'lease lost to another worker; leaving the job to it');
        } else if (abort.signal.aborted && this.#closed) {
          // Shutdown: hand the job back without counting the attempt.
          await this.#finish(id, { status: 'queued', attempts: attempt - 1, run_at: this.#clock.now(), last_error: message });
        } else if (attempt >= maxAttempts) {
          await this.#fail(id, kind, handler, payload, message, attempt);
        } else {
          const delay = this.#cfg.retryDelayMs * 2 ** (attempt - 1);
          this.#log.warn({ job: id, attempt, err: message }, 'job failed; retrying');
          await this.#finish(id, { status: 'queued', run_at: this.#clock.now() + delay, last_error: message });
        }
      } finally {
        clearInterval(heartbeat);
        this.#running.delete(id);
        this.#wake();
      }
    })().catch((err: unknown) => this.#log.error({ err, job: id }, 'job bookkeeping failed'));
    this.#running.set(id, { id, kind, abort, heartbeat, done });
  }

  async #finish(id: string, set: { status: string; last_error: string | null; attempts?: number; run_at?: number }): Promise<void> {
    await this.#db
      .updateTable('jobs')
      .set({ ...set, lease_until: null, locked_by: null, updated_at: this.#clock.now() })
      .where('id', '=', id)
      .where('locked_by', '=', this.#workerId)
      .execute();
  }

  async #fail(id: string, kind: string, handler: JobHandler<unknown>, payload: unknown, error: string, attempts: number): Promise<void> {
    this.#log.error({ job: id, attempts, err: error }, 'job failed for good');
    const every = this.#repeats.get(kind);
    // A timer that failed this tick still ticks next time.
    if (every !== undefined && id === `repeat:${kind}`) await this.#finish(id, { status: 'queued', attempts: 0, run_at: this.#clock.now() + every, last_error: error });
    else await this.#finish(id, { status: 'failed', last_error: error });
    // The job is failed for good whatever its handler's clean-up does: it is never claimed again.
    try {
      if (handler.onFailed) await handler.onFailed(payload, error);
    } catch (err) {
      this.#log.error({ job: id, err }, 'clean-up of a failed job failed');
    }
  }
}
