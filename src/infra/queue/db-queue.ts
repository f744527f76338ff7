import type { Kysely } from 'kysely';
import type { Database } from '../../store/schema.js';
import type { Clock } from '../clock.js';
import { newId } from '../ids.js';
import type { Logger } from '../logger.js';
import type { EnqueueOptions, JobHandler, Queue, QueueConfig, RegisterOptions } from './queue.js';

interface Running {
  readonly id: string;
  readonly kind: string;
  readonly abort: AbortController;
  readonly done: Promise<void>;
}

/**
 * The job queue kept in the main database (table `jobs`). Claiming is a compare-and-set UPDATE on
 * one row, so several workers (processes) can share the table; a lease that is not renewed makes
 * the job claimable again.
 *
 * A kind registered with its own `concurrency` has its own slots; the kinds without share the
 * queue's `concurrency`. A kind's `leaseMs` replaces the queue's for its jobs.
 */
export class DbQueue implements Queue {
  readonly #db: Kysely<Database>;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #cfg: QueueConfig;
  readonly #handlers = new Map<string, JobHandler<unknown>>();
  readonly #kindOpts = new Map<string, RegisterOptions>();
  readonly #running = new Map<string, Running>();
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

  register<P>(kind: string, handler: JobHandler<P>, opts: RegisterOptions = {}): void {
    this.#handlers.set(kind, handler as JobHandler<unknown>);
    this.#kindOpts.set(kind, opts);
  }

  #leaseOf(kind: string): number {
    return this.#kindOpts.get(kind)?.leaseMs ?? this.#cfg.leaseMs;
  }

  /** The kinds with a free slot now: a kind with its own concurrency, or the shared pool. */
  #freeKinds(): string[] {
    const own = (k: string) => this.#kindOpts.get(k)?.concurrency;
    const busy = new Map<string, number>();
    let shared = 0;
    for (const r of this.#running.values()) {
      if (own(r.kind) === undefined) shared++;
      else busy.set(r.kind, (busy.get(r.kind) ?? 0) + 1);
    }
    return [...this.#handlers.keys()].filter((k) => {
      const limit = own(k);
      return limit === undefined ? shared < this.#cfg.concurrency : (busy.get(k) ?? 0) < limit;
    });
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
          const claimed = await this.#claim();
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
  async #claim(): Promise<boolean> {
    const now = this.#clock.now();
    const kinds = this.#freeKinds();
    if (kinds.length === 0) return false;
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
        .set({ status: 'running', attempts: job.attempts + 1, lease_until: now + this.#leaseOf(job.kind), locked_by: this.#workerId, updated_at: now })
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
        await this.#fail(job.id, handler, payload, job.last_error ?? `the worker running it stopped responding (lease of ${this.#leaseOf(job.kind)} ms expired)`, attempt - 1);
        return true;
      }
      this.#execute(job.id, job.kind, handler, payload, attempt, job.max_attempts);
      return true;
    }
    return false;
  }

  #execute(id: string, kind: string, handler: JobHandler<unknown>, payload: unknown, attempt: number, maxAttempts: number): void {
    const abort = new AbortController();
    const leaseMs = this.#leaseOf(kind);
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
        await this.#finish(id, { status: 'done', last_error: null });
      } catch (err) {
        const message = err instanceof Error ? err.message : String(err);
        if (lost) {
          this.#log.warn({ job: id }, 'lease lost to another worker; leaving the job to it');
        } else if (abort.signal.aborted && this.#closed) {
          // Shutdown: hand the job back without counting the attempt.
          await this.#finish(id, { status: 'queued', attempts: attempt - 1, run_at: this.#clock.now(), last_error: message });
        } else if (attempt >= maxAttempts) {
          await this.#fail(id, handler, payload, message, attempt);
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
    this.#running.set(id, { id, kind, abort, done });
  }

  async #finish(id: string, set: { status: string; last_error: string | null; attempts?: number; run_at?: number }): Promise<void> {
    await this.#db
      .updateTable('jobs')
      .set({ ...set, lease_until: null, locked_by: null, updated_at: this.#clock.now() })
      .where('id', '=', id)
      .where('locked_by', '=', this.#workerId)
      .execute();
  }

  async #fail(id: string, handler: JobHandler<unknown>, payload: unknown, error: string, attempts: number): Promise<void> {
    this.#log.error({ job: id, attempts, err: error }, 'job failed for good');
    await this.#finish(id, { status: 'failed', last_error: error });
    // The job is failed for good whatever its handler's clean-up does: it is never claimed again.
    try {
      if (handler.onFailed) await handler.onFailed(payload, error);
    } catch (err) {
      this.#log.error({ job: id, err }, 'clean-up of a failed job failed');
    }
  }
}
