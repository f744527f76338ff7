import type { Kysely, Transaction } from 'kysely';
import { afterArrivals } from '../infra/after-arrivals.js';
import { CompiledOnce } from './compiled-once.js';
import { inBatches } from './statement-batches.js';

/** A write that runs inside a transaction it is given. */
export type TxWrite<DB> = (tx: Transaction<DB>) => Promise<void>;

/** A row for `table`, with every column given (the same columns, in the same order, for every row of a table). */
export type RowInsert<DB> = { readonly [T in keyof DB & string]: { readonly table: T; readonly row: Readonly<DB[T]> } }[keyof DB & string];

/** Values one statement binds at most (SQLite's limit is 32,766; PostgreSQL's 65,535). */
const MAX_PARAMS_PER_STATEMENT = 30_000;

interface Item<DB> {
  readonly inserts: readonly RowInsert<DB>[];
  readonly write: TxWrite<DB> | undefined;
  readonly resolve: () => void;
  readonly reject: (err: unknown) => void;
}

/**
 * Group commit: the writes submitted while requests keep arriving run together in one
 * transaction, started in the first turn of the event loop that brought no new request (at most
 * `AFTER_ARRIVALS_MAX_WAIT_MS` later; on a quiet server, once the turn's I/O callbacks are done).
 * A burst of requests (200 streaming answers arriving at once, each inserting its message) costs
 * a few commits instead of 200, and none of it runs between two arrivals, where it would delay
 * the next request's way to the model.
 *
 * Rows given as `RowInsert`s are merged with the batch's other rows of their table into multi-row
 * INSERTs (one statement for a burst's message rows instead of one each: on PostgreSQL each
 * statement is a round trip); they are inserted before the batch's writes run, in the order the
 * tables first appear.
 *
 * Each caller's promise settles with its own rows and write: when a batch fails, each caller's part
 * runs again in a transaction of its own, so one bad row fails only its own caller. A write must
 * therefore be safe to run again after a rollback (plain inserts and updates are).
 */
export class GroupCommit<DB> {
  readonly #db: Kysely<DB>;
  readonly #maxBatch: number;
  #queue: Item<DB>[] = [];
  #scheduled = false;
  /** One-row inserts (a batch of one, or a retry alone) run compiled SQL. */
  readonly #compiled = new CompiledOnce();

  constructor(db: Kysely<DB>, opts: { maxBatch?: number } = {}) {
    this.#db = db;
    this.#maxBatch = opts.maxBatch ?? 500;
  }

  /** Runs `write` in the next group's transaction; resolves once that transaction committed. */
  run(write: TxWrite<DB>): Promise<void> {
    return this.#submit([], write);
  }

  /**
   * Inserts `rows`, merged with the group's other rows of their tables, and then runs `then` (when
   * given) in the next group's transaction; resolves once that transaction committed.
   */
  insert(rows: readonly RowInsert<DB>[], then?: TxWrite<DB>): Promise<void> {
    return this.#submit(rows, then);
  }

  /** The same rows and write as `insert`, in the caller's transaction `tx`, at once (no group). */
  async insertIn(tx: Transaction<DB>, rows: readonly RowInsert<DB>[], then?: TxWrite<DB>): Promise<void> {
    await this.#apply(tx, [{ inserts: rows, write: then }]);
  }

  #submit(inserts: readonly RowInsert<DB>[], write: TxWrite<DB> | undefined): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.#queue.push({ inserts, write, resolve, reject });
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

  async #commit(batch: Item<DB>[]): Promise<void> {
    if (batch.length > 1) {
      try {
        await this.#db.transaction().execute((tx) => this.#apply(tx, batch));
        for (const item of batch) item.resolve();
        return;
      } catch {
        // one of them failed: each alone, below
      }
    }
    for (const item of batch) {
      try {
        await this.#db.transaction().execute((tx) => this.#apply(tx, [item]));
        item.resolve();
      } catch (err) {
        item.reject(err);
      }
    }
  }

  /** The items' rows, one INSERT per table (and per slice of a large batch), then their writes in order. */
  async #apply(tx: Transaction<DB>, items: readonly Pick<Item<DB>, 'inserts' | 'write'>[]): Promise<void> {
    const byTable = new Map<keyof DB & string, object[]>();
    for (const item of items) {
      for (const { table, row } of item.inserts) {
        const rows = byTable.get(table);
        if (rows) rows.push(row);
        else byTable.set(table, [row]);
      }
    }
    for (const [table, rows] of byTable) {
      const columns = Object.keys(rows[0]!);
      // the rows' shape is the caller's promise (`RowInsert`), not something the types can check here
      const values = (v: unknown) => tx.insertInto(table).values(v as never);
      if (rows.length === 1) {
        await this.#compiled.run(tx, `insert ${table} (${columns.join(',')})`, () => values(rows[0]), Object.values(rows[0]!) as unknown[]);
        continue;
      }
      for (const slice of inBatches(rows, Math.max(1, Math.floor(MAX_PARAMS_PER_STATEMENT / columns.length)))) await values(slice).execute();
    }
    for (const item of items) if (item.write) await item.write(tx);
  }
}
