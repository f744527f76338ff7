import os from 'node:os';
import type { Kysely } from 'kysely';
import type { Database } from '../store/schema.js';
import type { Clock } from './clock.js';
import { newId } from './ids.js';
import type { Logger } from './logger.js';

/** A worker is gone once its heartbeat is this many intervals old. */
const MISSED_BEATS = 3;

/** What a process knows of the deployment's workers (read from `worker_heartbeats`). */
export interface WorkerStatus {
  /** Workers with a heartbeat younger than three intervals. */
  readonly seen: number;
  /** Age of the newest heartbeat in ms; null when no worker ever beat. */
  readonly lastSeenAgeMs: number | null;
  /** True when this process runs the job worker itself (it never lacks one). */
  readonly self: boolean;
}

export interface WorkerPresenceOptions {
  readonly db: Kysely<Database>;
  readonly clock: Clock;
  readonly logger: Logger;
  /** `WORKER_HEARTBEAT_SECONDS` in ms. */
  readonly heartbeatMs: number;
  /** This process runs the job worker (role `all` or `worker`, QUEUE_WORKER not false): it beats. */
  readonly runsWorker: boolean;
  readonly role: string;
}

/**
 * Worker presence. A process that runs the job worker writes a heartbeat row every
 * WORKER_HEARTBEAT_SECONDS (and deletes it when it closes); a process that does not (the `api`
 * role) reads them on the same beat and says in its log when no worker has been seen for three
 * intervals — its runs and background jobs would stay queued — and when one is back. `/ready` and
 * `/metrics` read `status()`.
 */
export class WorkerPresence {
  readonly #o: WorkerPresenceOptions;
  readonly #id = newId();
  #timer: NodeJS.Timeout | undefined;
  /** Whether the last check found a worker (undefined before the first). */
  #present: boolean | undefined;

  constructor(o: WorkerPresenceOptions) {
    this.#o = o;
  }

  /** How long without a heartbeat a worker counts as gone, in seconds (for messages). */
  get windowSeconds(): number {
    return (this.#o.heartbeatMs * MISSED_BEATS) / 1000;
  }

  async start(): Promise<void> {
    await this.#tick();
    this.#timer = setInterval(() => void this.#tick().catch((err: unknown) => this.#o.logger.warn({ err }, 'worker heartbeat failed')), this.#o.heartbeatMs);
    this.#timer.unref();
  }

  async status(): Promise<WorkerStatus> {
    const now = this.#o.clock.now();
    const row = await this.#o.db
      .selectFrom('worker_heartbeats')
      .select((eb) => [eb.fn.max('seen_at').as('last'), eb.fn.countAll<number>().as('n')])
      .where('seen_at', '>=', now - this.#o.heartbeatMs * MISSED_BEATS)
      .executeTakeFirst();
    const last = await this.#o.db.selectFrom('worker_heartbeats').select((eb) => eb.fn.max('seen_at').as('last')).executeTakeFirst();
    const lastSeen = last?.last === null || last?.last === undefined ? null : Number(last.last);
    return { seen: Number(row?.n ?? 0), lastSeenAgeMs: lastSeen === null ? null : Math.max(0, now - lastSeen), self: this.#o.runsWorker };
  }

  async #tick(): Promise<void> {
    const now = this.#o.clock.now();
    if (this.#o.runsWorker) {
      await this.#o.db
        .insertInto('worker_heartbeats')
        .values({ id: this.#id, role: this.#o.role, host: os.hostname(), pid: process.pid, started_at: now, seen_at: now })
        .onConflict((oc) => oc.column('id').doUpdateSet({ seen_at: now }))
        .execute();
      // rows of workers gone for a day are of no more use
      await this.#o.db.deleteFrom('worker_heartbeats').where('seen_at', '<', now - 86_400_000).execute();
      return;
    }
    const { seen, lastSeenAgeMs } = await this.status();
    const present = seen > 0;
    if (present === this.#present) return;
    this.#present = present;
    if (present) {
      this.#o.logger.info({ workers: seen }, 'a worker process is running: queued runs and background jobs are being taken');
    } else {
      this.#o.logger.warn(
        { role: this.#o.role, lastWorkerSeenSecondsAgo: lastSeenAgeMs === null ? null : Math.round(lastSeenAgeMs / 1000) },
        `no worker process has sent a heartbeat in the last ${this.windowSeconds} s (WORKER_HEARTBEAT_SECONDS=${this.#o.heartbeatMs / 1000}): runs and background jobs this process queues wait until one runs (start \`dovetail worker\`); a run no worker takes within RUN_QUEUE_WAIT_SECONDS fails`,
      );
    }
  }

  async close(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    if (this.#o.runsWorker) await this.#o.db.deleteFrom('worker_heartbeats').where('id', '=', this.#id).execute().catch(() => undefined);
  }
}
