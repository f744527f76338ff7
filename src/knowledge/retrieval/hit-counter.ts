import { sql, type Kysely } from 'kysely';
import type { Database } from '../../store/schema.js';
import type { Logger } from '../../infra/logger.js';

/** Tables whose rows carry a `hit_count` that retrieval increments. */
export type HitTable = 'segments' | 'parent_chunks';

const MAX_IDS_PER_STATEMENT = 500;

/**
 * Counts retrieval hits off the request path. `record` only notes the ids; a single writer per
 * process turns everything noted since its last write into one `UPDATE … SET hit_count =
 * hit_count + n` per table and increment: at most one statement per `delayMs` window (with no
 * delay, one per retrieval, merged when retrievals arrive while a write is running). On PostgreSQL the
 * rows are locked in id order first, so writers of several instances cannot deadlock.
 */
export class HitCounter {
  readonly #db: Kysely<Database>;
  /** Lock the rows in id order before the update (where the store has row locks). */
  readonly #lockRows: boolean;
  readonly #log: Logger;
  readonly #delayMs: number;
  #pending = new Map<HitTable, Map<string, number>>();
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;

  /** `delayMs`: how long hits gather before a write (`HIT_COUNT_FLUSH_MS`); 0 writes after each response. */
  constructor(db: Kysely<Database>, rowLocks: boolean, logger: Logger, delayMs = 0) {
    this.#db = db;
    this.#lockRows = rowLocks;
    this.#log = logger;
    this.#delayMs = delayMs;
  }

  /** Notes one hit for each distinct id (an id listed twice in one retrieval counts once). */
  record(table: HitTable, ids: readonly string[]): void {
    if (ids.length === 0) return;
    let m = this.#pending.get(table);
    if (!m) this.#pending.set(table, (m = new Map()));
    for (const id of new Set(ids)) m.set(id, (m.get(id) ?? 0) + 1);
    this.#schedule();
  }

  /** Resolves once every hit recorded so far is written (shutdown, tests). */
  async flush(): Promise<void> {
    for (;;) {
      if (this.#timer) {
        clearTimeout(this.#timer);
        this.#timer = undefined;
        this.#running = this.#drain();
      }
      if (!this.#running) return;
      await this.#running;
    }
  }

  #schedule(): void {
    if (this.#timer || this.#running) return;
    // Even with no delay the write waits for the next turn of the event loop, so the response that
    // produced the hits is written first.
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#running = this.#drain();
    }, this.#delayMs);
    this.#timer.unref();
  }

  async #drain(): Promise<void> {
    try {
      while (this.#pending.size > 0) {
        const batch = this.#pending;
        this.#pending = new Map();
        for (const [table, counts] of batch) await this.#write(table, counts);
      }
    } finally {
      this.#running = undefined;
    }
  }

  async #write(table: HitTable, counts: Map<string, number>): Promise<void> {
    const byIncrement = new Map<number, string[]>();
    for (const [id, n] of counts) {
      const ids = byIncrement.get(n) ?? [];
      ids.push(id);
      byIncrement.set(n, ids);
    }
    for (const [n, all] of byIncrement) {
      all.sort();
      for (let i = 0; i < all.length; i += MAX_IDS_PER_STATEMENT) {
        const ids = sql.join(all.slice(i, i + MAX_IDS_PER_STATEMENT).map((id) => sql`${id}`));
        const t = sql.table(table);
        const where = this.#lockRows ? sql`id IN (SELECT id FROM ${t} WHERE id IN (${ids}) ORDER BY id FOR UPDATE)` : sql`id IN (${ids})`;
        try {
          await sql`UPDATE ${t} SET hit_count = hit_count + ${n} WHERE ${where}`.execute(this.#db);
        } catch (err) {
          // A lost count is not worth failing anything for; it is logged.
          this.#log.warn({ err, table, ids: all.length }, 'hit_count update failed');
        }
      }
    }
  }
}

/**
 * Records one hit for each returned segment and gives back the segments with `hitCount` including
 * it (the value the row holds once the write lands, concurrent retrievals aside).
 */
export function countHits<T extends { segmentId: string; hitCount: number; hitTable: HitTable }>(hits: HitCounter, found: readonly T[]): T[] {
  for (const table of ['segments', 'parent_chunks'] as const) {
    hits.record(table, found.filter((s) => s.hitTable === table).map((s) => s.segmentId));
  }
  return found.map((s) => ({ ...s, hitCount: s.hitCount + 1 }));
}
