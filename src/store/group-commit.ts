import type { Kysely, Transaction } from 'kysely';
import { afterArrivals } from '../infra/after-arrivals.js';

/** A write that runs inside a transaction it is given. */
export type TxWrite<DB> = (tx: Transaction<DB>) => Promise<void>;

/**
 * Group commit: the writes submitted while requests keep arriving run together in one
 * transaction, started in the first turn of the event loop that brought no new request (at most
 * `AFTER_ARRIVALS_MAX_WAIT_MS` later; on a quiet server, once the turn's I/O callbacks are done).
 * A burst of requests (200 streaming answers arriving at once, each inserting its message) costs
 * a few commits instead of 200, and none of it runs between two arrivals, where it would delay
 * the next request's way to the model.
 *
 * Each caller's promise settles with its own write: when a batch fails, its writes run again one
 * transaction each, so one bad row fails only its own caller. A write must therefore be safe to
 * run again after a rollback (plain inserts and updates are).
 */
export class GroupCommit<DB> {
  readonly #db: Kysely<DB>;
  readonly #maxBatch: number;
  #queue: { write: TxWrite<DB>; resolve: () => void; reject: (err: unknown) => void }[] = [];
  #scheduled = false;

  constructor(db: Kysely<DB>, opts: { maxBatch?: number } = {}) {
    this.#db = db;
    this.#maxBatch = opts.maxBatch ?? 500;
  }

  /** Runs `write` in the next group's transaction; resolves once that transaction committed. */
  run(write: TxWrite<DB>): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.#queue.push({ write, resolve, reject });
      if (!this.#scheduled) {
        this.#scheduled = true;
        afterArrivals(() => void this.#flush());
      }
    });
  }

  async #flush(): Promise<void> {
    this.#scheduled = false;
    const all = this.#queue;
    this.#queue = [];
    for (let i = 0; i < all.length; i += this.#maxBatch) await this.#commit(all.slice(i, i + this.#maxBatch));
  }

  async #commit(batch: { write: TxWrite<DB>; resolve: () => void; reject: (err: unknown) => void }[]): Promise<void> {
    if (batch.length > 1) {
      try {
        await this.#db.transaction().execute(async (tx) => {
          for (const item of batch) await item.write(tx);
        });
        for (const item of batch) item.resolve();
        return;
      } catch {
        // one of them failed: each alone, below
      }
    }
    for (const item of batch) {
      try {
        await this.#db.transaction().execute(item.write);
        item.resolve();
      } catch (err) {
        item.reject(err);
      }
    }
  }
}
