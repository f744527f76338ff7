import { sql, type Kysely } from 'kysely';
import type { Database, Executor } from '../store/schema.js';
import { RunStore, type RunPatch } from './run-store.js';
import type { RunEventName } from './run-events.js';

/** One event of a run's log as stored (its payload the JSON text sent in `data:` frames). */
export interface StoredRunEvent {
  readonly runId: string;
  readonly seq: number;
  readonly event: string;
  readonly payload: string;
  /** Epoch ms. */
  readonly createdAt: number;
}

/** A run's latest engine state (plain versioned JSON). */
export interface RunSnapshot {
  readonly version: number;
  readonly state: string;
}

/** What one journal flush writes, in one transaction. */
export interface JournalWrite {
  readonly runId: string;
  /** The owner epoch the writer holds: nothing is written unless the run row still holds it. */
  readonly epoch: number;
  readonly now: number;
  readonly patch: RunPatch;
  readonly events: readonly StoredRunEvent[];
  /** Serialized inside the transaction (so it is the latest state). */
  readonly snapshot?: () => string;
  /** PostgreSQL: `idle_in_transaction_session_timeout` for this transaction (see RunJournal). */
  readonly holdLimitMs?: number;
}

const SNAPSHOT_VERSION = 1;

/** A run's event log (`workflow_run_events`) and its snapshot (`workflow_run_snapshots`). */
export class RunEventStore {
  readonly #db: Kysely<Database>;
  readonly #runs: RunStore;

  constructor(db: Kysely<Database>, runs = new RunStore(db)) {
    this.#db = db;
    this.#runs = runs;
  }

  async append(e: StoredRunEvent, trx: Executor = this.#db): Promise<void> {
    await trx.insertInto('workflow_run_events').values({ run_id: e.runId, seq: e.seq, event: e.event, payload: e.payload, created_at: e.createdAt }).execute();
  }

  /** A run's events after `afterSeq`, in order (at most `limit`). */
  async after(runId: string, afterSeq: number, limit: number): Promise<StoredRunEvent[]> {
    const rows = await this.#db
      .selectFrom('workflow_run_events')
      .selectAll()
      .where('run_id', '=', runId)
      .where('seq', '>', afterSeq)
      .orderBy('seq')
      .limit(limit)
      .execute();
    return rows.map((r) => ({ runId: r.run_id, seq: Number(r.seq), event: r.event, payload: r.payload, createdAt: Number(r.created_at) }));
  }

  /**
   * A run's events named in `events`, in order, after `afterSeq` (and up to `untilSeq` when given),
   * at most `limit`: the primary key `(run_id, seq)` ranges over the run's log, the names filter it.
   */
  async named(runId: string, events: readonly string[], opts: { afterSeq: number; untilSeq?: number; limit: number }): Promise<StoredRunEvent[]> {
    let q = this.#db.selectFrom('workflow_run_events').selectAll().where('run_id', '=', runId).where('seq', '>', opts.afterSeq).where('event', 'in', [...events]);
    if (opts.untilSeq !== undefined) q = q.where('seq', '<=', opts.untilSeq);
    const rows = await q.orderBy('seq').limit(opts.limit).execute();
    return rows.map((r) => ({ runId: r.run_id, seq: Number(r.seq), event: r.event, payload: r.payload, createdAt: Number(r.created_at) }));
  }

  /**
   * The events `event` of a run whose payload contains `fragment` as is (a node execution's
   * `"id":"…"`), in order, at most `limit`.
   */
  async containing(runId: string, events: readonly string[], fragment: string, limit: number): Promise<StoredRunEvent[]> {
    const pattern = `%${fragment.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    const rows = await this.#db
      .selectFrom('workflow_run_events')
      .selectAll()
      .where('run_id', '=', runId)
      .where('event', 'in', [...events])
      .where(sql<boolean>`payload LIKE ${pattern} ESCAPE '\\'`)
      .orderBy('seq')
      .limit(limit)
      .execute();
    return rows.map((r) => ({ runId: r.run_id, seq: Number(r.seq), event: r.event, payload: r.payload, createdAt: Number(r.created_at) }));
  }

  /** The sequence number of the latest `event` in a run's log; 0 when there is none. */
  async lastSeqOf(runId: string, event: RunEventName): Promise<number> {
    const r = await this.#db.selectFrom('workflow_run_events').select('seq').where('run_id', '=', runId).where('event', '=', event).orderBy('seq', 'desc').limit(1).executeTakeFirst();
    return r ? Number(r.seq) : 0;
  }

  async snapshot(runId: string): Promise<RunSnapshot | undefined> {
    const snap = await this.#db.selectFrom('workflow_run_snapshots').select(['state', 'version']).where('run_id', '=', runId).executeTakeFirst();
    return snap && { version: Number(snap.version), state: snap.state };
  }

  /** The first snapshot of a run (its initial state, for the job that claims it). */
  async insertSnapshot(runId: string, state: string, now: number, trx: Executor = this.#db): Promise<void> {
    await trx.insertInto('workflow_run_snapshots').values({ run_id: runId, version: SNAPSHOT_VERSION, state, updated_at: now }).execute();
  }

  /**
   * One group-committed journal flush, in one transaction: the fenced update of the run row first
   * (it is the fence and, on PostgreSQL, the row lock that orders two owners), then the events and
   * the snapshot. Returns false, having written nothing, when the row no longer holds `epoch`.
   */
  async flush(w: JournalWrite): Promise<boolean> {
    const lastSeq = w.events.length ? w.events[w.events.length - 1]!.seq : undefined;
    const fenced = new Error('fenced');
    try {
      await this.#db.transaction().execute(async (trx) => {
        if (w.holdLimitMs) await sql.raw(`SET LOCAL idle_in_transaction_session_timeout = ${w.holdLimitMs}`).execute(trx);
        if (!(await this.#runs.patchFenced(w.runId, w.epoch, w.patch, w.now, lastSeq, trx))) throw fenced;
        const rows = w.events.map((e) => ({ run_id: e.runId, seq: e.seq, event: e.event, payload: e.payload, created_at: e.createdAt }));
        for (let i = 0; i < rows.length; i += 500) await trx.insertInto('workflow_run_events').values(rows.slice(i, i + 500)).execute();
        if (w.snapshot) {
          const state = w.snapshot();
          await trx
            .insertInto('workflow_run_snapshots')
            .values({ run_id: w.runId, version: SNAPSHOT_VERSION, state, updated_at: w.now })
            .onConflict((oc) => oc.column('run_id').doUpdateSet({ state, updated_at: w.now }))
            .execute();
        }
      });
    } catch (err) {
      if (err === fenced) return false;
      throw err;
    }
    return true;
  }
}
