import type { Kysely, Transaction } from 'kysely';
import type { Database, JobOutboxTable } from '../../store/schema.js';
import type { Logger } from '../logger.js';

export type OutboxRow = JobOutboxTable;

const BATCH = 100;

/** Writes a job into the outbox inside the caller's transaction (it exists exactly if that commits). */
export async function writeOutbox(tx: Transaction<Database>, row: OutboxRow): Promise<void> {
  await tx.insertInto('job_outbox').values(row).execute();
}

/**
 * Moves committed outbox rows to the runner: reads the oldest rows, sends each (`send` must be
 * idempotent per row id — BullMQ ignores an add whose job id exists), then deletes it. A crash
 * between the send and the delete sends the row again, which adds nothing. Woken by `notify()`
 * (after a local commit) and by a poll every `pollMs` (commits of other processes). Every process
 * may run a relay; two relays sending the same row is harmless for the same reason.
 */
export class OutboxRelay {
  readonly #db: Kysely<Database>;
  readonly #send: (row: OutboxRow) => Promise<void>;
  readonly #pollMs: number;
  readonly #log: Logger;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #again = false;
  #closed = false;

  constructor(db: Kysely<Database>, send: (row: OutboxRow) => Promise<void>, pollMs: number, logger: Logger) {
    this.#db = db;
    this.#send = send;
    this.#pollMs = pollMs;
    this.#log = logger;
  }

  start(): void {
    this.notify();
  }

  /** Relays now (after a local commit that wrote outbox rows). */
  notify(): void {
    if (this.#closed) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#running = this.#drain().finally(() => {
      this.#running = undefined;
      if (this.#closed) return;
      if (this.#again) {
        this.#again = false;
        this.notify();
      } else {
        this.#timer = setTimeout(() => this.notify(), this.#pollMs);
        this.#timer.unref();
      }
    });
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    await this.#running;
  }

  async #drain(): Promise<void> {
    try {
      for (;;) {
        const rows = await this.#db.selectFrom('job_outbox').selectAll().orderBy('created_at').orderBy('id').limit(BATCH).execute();
        for (const row of rows) {
          await this.#send(row);
          await this.#db.deleteFrom('job_outbox').where('id', '=', row.id).execute();
        }
        if (rows.length < BATCH || this.#closed) return;
      }
    } catch (err) {
      this.#log.error({ err }, 'outbox relay failed; retrying at the next poll');
    }
  }
}
