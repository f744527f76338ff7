import { sql, type Kysely } from 'kysely';
import type { Database, WorkflowRunTable, Executor } from '../store/schema.js';
import { RUN_STATUSES, type RunStatus } from './run-types.js';
import { containsIgnoringCase } from '../store/like.js';
import { inBatches } from '../store/statement-batches.js';

export { RUN_STATUSES, type RunStatus };

/**
 * A run as stored (`workflow_runs`), its status typed. The row's own field names are kept: the
 * routes and frames that read a run (blocking bodies, `workflow_finished`) map them to the wire.
 */
export type RunRecord = Omit<WorkflowRunTable, 'status'> & { readonly status: RunStatus };

/** A new run row (everything but the columns the store fills in). */
export type NewRun = Omit<WorkflowRunTable, 'status' | 'outputs' | 'error' | 'total_steps' | 'total_tokens' | 'exceptions_count' | 'elapsed_ms' | 'stop_requested' | 'last_seq' | 'finished_at' | 'owner_job' | 'triggered_from'> & {
  /** Dify's `WorkflowRunTriggeredFrom`; default `app-run`. */
  readonly triggered_from?: RunTrigger;
};

/** Dify's `WorkflowRunTriggeredFrom` values Dovetail writes. */
export type RunTrigger = 'app-run' | 'webhook' | 'schedule' | 'plugin';

/**
 * The `owner_job` of a run that executes inline — a workflow tool's run inside its caller's
 * execution, or any run of a process without a job worker — rather than as a queue job. No other
 * process can continue such a run; when its process stops keeping it alive it is ended (`RunService`).
 */
export const INLINE_OWNER = 'inline';

/** What a run's owner may change in its row (never its identity, sequence or epoch). */
export type RunPatch = Partial<Omit<RunRecord, 'id' | 'last_seq' | 'owner_epoch'>>;


const toRecord = (r: WorkflowRunTable): RunRecord => r as RunRecord;

/** One row of `GET /workflows/logs`: a workflow run with its end user's session id. */
export interface WorkflowLogRow {
  readonly id: string;
  readonly status: RunStatus;
  readonly triggered_from: string;
  readonly error: string | null;
  readonly elapsed_ms: number;
  readonly total_tokens: number;
  readonly total_steps: number;
  readonly exceptions_count: number;
  readonly created_at: number;
  readonly finished_at: number | null;
  readonly end_user_id: string;
  readonly session_id: string;
}

export interface WorkflowLogFilter {
  readonly appId: string;
  /** No run matches (an account filter: runs are started by end users only). */
  readonly none?: boolean;
  readonly status?: RunStatus;
  readonly createdBefore?: number;
  readonly createdAfter?: number;
  readonly endUserSessionId?: string;
  /** Case-insensitive match of inputs, outputs and the end user's session id. */
  readonly keyword?: string;
  readonly limit: number;
  readonly offset: number;
}

/**
 * The runs table (`workflow_runs`). Every write that an owner makes while executing a run is fenced
 * by its owner epoch (see RunEventStore.flush); the writes here are the lifecycle's compare-and-sets
 * (claim, resume, end), each conditional on the status or epoch it expects.
 */
export class RunStore {
  readonly #db: Kysely<Database>;

  constructor(db: Kysely<Database>) {
    this.#db = db;
  }

  /** `inline`: the run executes in the process that starts it, not as a job (`INLINE_OWNER`). */
  /** `inline`: owned by this process without a job; `ownerJob`: owned from the start by that job (claimed locally). */
  async insert(run: NewRun, trx: Executor = this.#db, opts: { inline?: boolean; ownerJob?: string } = {}): Promise<void> {
    await trx
      .insertInto('workflow_runs')
      .values({
        ...run,
        triggered_from: run.triggered_from ?? 'app-run',
        status: 'running',
        outputs: null,
        error: null,
        total_steps: 0,
        total_tokens: 0,
        exceptions_count: 0,
        elapsed_ms: 0,
        stop_requested: 0,
        last_seq: 0,
        finished_at: null,
        owner_job: opts.inline ? INLINE_OWNER : (opts.ownerJob ?? null),
      })
      .execute();
  }

  async find(runId: string, trx: Executor = this.#db): Promise<RunRecord | undefined> {
    const row = await trx.selectFrom('workflow_runs').selectAll().where('id', '=', runId).executeTakeFirst();
    return row && toRecord(row);
  }

  /** Runs an earlier version left `running` without an owner (owner epoch -1, set by migration 021). */
  async legacyRunning(): Promise<string[]> {
    const rows = await this.#db.selectFrom('workflow_runs').select('id').where('status', '=', 'running').where('owner_epoch', '=', -1).execute();
    return rows.map((r) => r.id);
  }

  /** Compare-and-set of a legacy run's owner epoch -1 → 0 (queued for a job to claim); false when another instance did it first. */
  async adoptLegacy(runId: string, trx: Executor = this.#db): Promise<boolean> {
    const res = await trx.updateTable('workflow_runs').set({ owner_epoch: 0 }).where('id', '=', runId).where('owner_epoch', '=', -1).executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }

  /** Of these runs, the ids whose durable stop flag is set. */
  async stopRequested(runIds: readonly string[]): Promise<string[]> {
    if (runIds.length === 0) return [];
    const rows = await this.#db.selectFrom('workflow_runs').select('id').where('id', 'in', runIds).where('stop_requested', '=', 1).execute();
    return rows.map((r) => r.id);
  }

  /** The runs of a task of this app (of this end user when given). */
  async byTask(appId: string, taskId: string, endUserId?: string): Promise<{ id: string; status: RunStatus }[]> {
    let q = this.#db.selectFrom('workflow_runs').select(['id', 'status']).where('task_id', '=', taskId).where('app_id', '=', appId);
    if (endUserId) q = q.where('end_user_id', '=', endUserId);
    const rows = await q.execute();
    return rows.map((r) => ({ id: r.id, status: r.status as RunStatus }));
  }

  /** Sets the durable stop flag of a run that is still running. */
  async requestStop(runId: string): Promise<void> {
    await this.#db.updateTable('workflow_runs').set({ stop_requested: 1 }).where('id', '=', runId).where('status', '=', 'running').execute();
  }

  /**
   * Compare-and-set of a run in one of `from` to its end (`stopped` | `failed`), with one more
   * sequence number (for its `workflow_finished` frame) and a new owner epoch (an owner still
   * executing it, stalled, is fenced out). Returns the ended run, or undefined when it was not in `from`.
   */
  async end(runId: string, from: readonly RunStatus[], status: 'stopped' | 'failed', error: string, now: number, trx: Executor = this.#db, opts: { unclaimed?: boolean } = {}): Promise<RunRecord | undefined> {
    let update = trx
      .updateTable('workflow_runs')
      .set((eb) => ({ status, error, finished_at: now, stop_requested: status === 'stopped' ? 1 : eb.ref('stop_requested'), last_seq: eb('last_seq', '+', 1), owner_epoch: eb('owner_epoch', '+', 1), owner_job: null }))
      .where('id', '=', runId)
      .where('status', 'in', from);
    // a queued run no job has claimed yet (its epoch is still the insert's 0)
    if (opts.unclaimed) update = update.where('owner_epoch', '=', 0).where('owner_job', 'is', null);
    const res = await update.executeTakeFirst();
    if (Number(res.numUpdatedRows) !== 1) return undefined;
    return toRecord(await trx.selectFrom('workflow_runs').selectAll().where('id', '=', runId).executeTakeFirstOrThrow());
  }

  /** Compare-and-set `paused → running`, clearing the stale stop flag and the job owner; false when the run was not paused. */
  async markResumed(runId: string, now: number, trx: Executor = this.#db): Promise<boolean> {
    const r = await trx
      .updateTable('workflow_runs')
      .set({ status: 'running', stop_requested: 0, heartbeat_at: now, owner_job: null })
      .where('id', '=', runId)
      .where('status', '=', 'paused')
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }

  /** Claims a run for this process without a job (it runs inline): increments its owner epoch and returns the new one. */
  async bumpEpoch(runId: string): Promise<number> {
    const claimed = await this.#db
      .updateTable('workflow_runs')
      .set((eb) => ({ owner_epoch: eb('owner_epoch', '+', 1), owner_job: INLINE_OWNER }))
      .where('id', '=', runId)
      .returning('owner_epoch')
      .executeTakeFirst();
    return Number(claimed!.owner_epoch);
  }

  /** Compare-and-set of a running run's owner epoch `from → from + 1` for job `jobId`; false when another owner moved first. */
  async claim(runId: string, fromEpoch: number, jobId: string, now: number): Promise<boolean> {
    const claimed = await this.#db
      .updateTable('workflow_runs')
      .set({ owner_epoch: fromEpoch + 1, owner_job: jobId, heartbeat_at: now })
      .where('id', '=', runId)
      .where('status', '=', 'running')
      .where('owner_epoch', '=', fromEpoch)
      .executeTakeFirst();
    return Number(claimed.numUpdatedRows) === 1;
  }

  /**
   * The fenced update of a journal flush: applies `patch` (and the heartbeat, and `lastSeq` when
   * given) only while the row holds `epoch`. False when another owner took the run over.
   */
  async patchFenced(runId: string, epoch: number, patch: RunPatch, now: number, lastSeq: number | undefined, trx: Executor): Promise<boolean> {
    const res = await trx
      .updateTable('workflow_runs')
      .set({ heartbeat_at: now, ...patch, ...(lastSeq !== undefined ? { last_seq: lastSeq } : {}) })
      .where('id', '=', runId)
      .where('owner_epoch', '=', epoch)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }

  /** Keeps the inline runs among `ids` (those executing in this process) alive: their heartbeat is now. */
  async heartbeatInline(ids: readonly string[], now: number): Promise<void> {
    for (const batch of inBatches(ids)) {
      await this.#db.updateTable('workflow_runs').set({ heartbeat_at: now }).where('id', 'in', batch).where('status', '=', 'running').where('owner_job', '=', INLINE_OWNER).execute();
    }
  }

  /** Inline runs still `running` whose process stopped keeping them alive (no heartbeat since `cutoff`). */
  async silentInline(cutoff: number, limit: number): Promise<string[]> {
    const rows = await this.#db
      .selectFrom('workflow_runs')
      .select('id')
      .where('status', '=', 'running')
      .where('owner_job', '=', INLINE_OWNER)
      .where('heartbeat_at', '<', cutoff)
      .limit(limit)
      .execute();
    return rows.map((r) => r.id);
  }

  /** Runs by status (for metrics). */
  async countByStatus(): Promise<Record<string, number>> {
    const rows = await this.#db.selectFrom('workflow_runs').select(['status', (eb) => eb.fn.countAll<number>().as('n')]).groupBy('status').execute();
    return Object.fromEntries(rows.map((r) => [r.status, Number(r.n)]));
  }

  /** Runs newest first, of an app and with a status when given (the CLI's `run list`). */
  async list(f: { readonly appId?: string; readonly status?: string; readonly limit: number }): Promise<RunRecord[]> {
    let runs = this.#db.selectFrom('workflow_runs').selectAll().orderBy('created_at', 'desc').limit(f.limit);
    if (f.appId) runs = runs.where('app_id', '=', f.appId);
    if (f.status) runs = runs.where('status', '=', f.status);
    return (await runs.execute()).map(toRecord);
  }

  /** Task ids of an app's runs still running or paused. */
  async activeTaskIds(appId: string): Promise<string[]> {
    const rows = await this.#db.selectFrom('workflow_runs').select('task_id').where('app_id', '=', appId).where('status', 'in', ['running', 'paused']).execute();
    return rows.map((r) => r.task_id);
  }

  /**
   * `GET /workflows/logs` and the console's runs list: a page of an app's workflow runs, newest
   * first, with the total (counted up to `countLimit` rows when given). The end users are joined for
   * the page only, or for the count too when a filter needs them (session id, keyword): the indexes
   * of migration 031 keep the count an index range over the app's runs.
   */
  async workflowLogs(f: WorkflowLogFilter & { readonly countLimit?: number }): Promise<{ total: number; capped: boolean; rows: WorkflowLogRow[] }> {
    const needsUser = Boolean(f.endUserSessionId || f.keyword);
    let runs = this.#db.selectFrom('workflow_runs as r').where('r.app_id', '=', f.appId).where('r.mode', '=', 'workflow');
    if (f.none) runs = runs.where(sql<boolean>`1 = 0`);
    if (f.status) runs = runs.where('r.status', '=', f.status);
    if (f.createdBefore !== undefined) runs = runs.where('r.created_at', '<', f.createdBefore);
    if (f.createdAfter !== undefined) runs = runs.where('r.created_at', '>', f.createdAfter);
    let base = runs.innerJoin('end_users as u', 'u.id', 'r.end_user_id');
    if (f.endUserSessionId) base = base.where('u.session_id', '=', f.endUserSessionId);
    const keyword = f.keyword;
    if (keyword) base = base.where((eb) => eb.or(['r.inputs', 'r.outputs', 'u.session_id'].map((col) => containsIgnoringCase(col, keyword))));
    const counted = needsUser ? base.select('r.id') : runs.select('r.id');
    const cap = f.countLimit;
    const { n } = await this.#db
      .selectFrom((cap === undefined ? counted : counted.limit(cap + 1)).as('counted'))
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    const rows = await base
      .select(['r.id', 'r.status', 'r.triggered_from', 'r.error', 'r.elapsed_ms', 'r.total_tokens', 'r.total_steps', 'r.exceptions_count', 'r.created_at', 'r.finished_at', 'u.id as end_user_id', 'u.session_id'])
      .orderBy('r.created_at', 'desc')
      .orderBy('r.id', 'desc')
      .limit(f.limit)
      .offset(f.offset)
      .execute();
    const capped = cap !== undefined && Number(n) > cap;
    return { total: capped ? cap : Number(n), capped, rows: rows.map((r) => ({ ...r, status: r.status as RunStatus })) };
  }

  /** Deletes an app's runs with their event logs and snapshots (inside the transaction that deletes the app). */
  async purgeApp(appId: string, trx: Executor = this.#db): Promise<void> {
    const runs = trx.selectFrom('workflow_runs').select('id').where('app_id', '=', appId);
    await trx.deleteFrom('workflow_run_events').where('run_id', 'in', runs).execute();
    await trx.deleteFrom('workflow_run_snapshots').where('run_id', 'in', runs).execute();
    await trx.deleteFrom('workflow_runs').where('app_id', '=', appId).execute();
  }
}
