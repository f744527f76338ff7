import type { Kysely } from 'kysely';
import type { Database } from '../store/schema.js';
import { invalidParam } from '../infra/errors.js';
import { RunStore, type RunRecord } from './run-store.js';
import { RunEventStore, type StoredRunEvent } from './run-event-store.js';
import type { RunEventName } from './run-events.js';

/**
 * A run's trace, as a page draws it (issue #44's "Run trace"): one bar per node execution on a
 * timeline, built from the run's event log (`workflow_run_events`). Nothing is stored for it: the
 * log is the record, read by its primary key `(run_id, seq)`.
 *
 * Incremental: `trace(run, { afterSeq })` reads the log after `afterSeq` (at most
 * `maxEvents` events; `more` says the window was full) and answers the bars and pauses those events
 * touched, each whole, to merge by `id` (bars) and `key` (pauses) into what the page holds. The
 * small events before `afterSeq` (`node_started`, round and pause events, never the payloads with a
 * node's inputs and outputs) are read again to place new bars (their parent round, their branch).
 */

/** A node execution's bar. Times are epoch milliseconds (`end_ms` null while it runs). */
export interface TraceBar {
  /** The node execution id (`node_started.id`). */
  readonly id: string;
  readonly node_id: string;
  readonly title: string;
  readonly type: string;
  /** The execution's index in the run (`node_started.index`). */
  readonly index: number;
  readonly predecessor_node_id: string | null;
  start_ms: number;
  end_ms: number | null;
  /** running | succeeded | failed | exception | stopped | paused (a Human Input pause) */
  status: string;
  error: string | null;
  /** The model tokens the execution used (`execution_metadata.total_tokens`). */
  tokens: number;
  /** Seconds, once it ended. */
  elapsed_time: number | null;
  /** How many times it was retried so far (0: none); each failed attempt is in `retries`. */
  retry_index: number;
  readonly retries: { index: number; error: string | null; at_ms: number }[];
  /** The iteration or loop it ran in, and in which round; null at the top level. */
  parent: { readonly type: 'iteration' | 'loop'; readonly node_id: string; readonly execution_id: string | null; round: number | null } | null;
  /** A parallel iteration item's run id (`parallel_run_id`), else null. */
  readonly parallel_run_id: string | null;
  /**
   * The branch it ran on within its scope (the run, or one round of a container): 0 the first,
   * each branch a node fanned out into beyond its first successor a new number, in the order they started.
   */
  readonly branch: number;
  /** Containers: their rounds (iterations' items, loops' rounds) as they started. */
  rounds?: { index: number; start_ms: number }[];
  readonly started_seq: number;
  /** The `node_finished` event with its inputs, outputs and process data (`TraceService.node`). */
  finished_seq: number | null;
}

/** A Human Input pause: the run waited for a form. */
export interface TracePause {
  /** The sequence number of its `human_input_required` event. */
  readonly key: number;
  readonly node_id: string;
  readonly node_title: string;
  readonly form_id: string | null;
  readonly form_token: string | null;
  /** The form's page on this server (`/form/{token}`), when it has a token. */
  readonly form_url: string | null;
  /** Epoch seconds. */
  readonly expiration_time: number | null;
  readonly paused_at_ms: number;
  resumed_at_ms: number | null;
  /** waiting | filled | timeout */
  outcome: 'waiting' | 'filled' | 'timeout';
  /** The action a filled form took. */
  action: string | null;
}

export interface RunTrace {
  readonly run: {
    readonly id: string;
    readonly app_id: string;
    readonly mode: string;
    readonly status: string;
    readonly error: string | null;
    readonly conversation_id: string | null;
    readonly message_id: string | null;
    readonly total_tokens: number;
    readonly total_steps: number;
    /** Seconds. */
    readonly elapsed_time: number;
    /** Epoch ms. */
    readonly created_ms: number;
    readonly finished_ms: number | null;
  };
  readonly bars: TraceBar[];
  readonly pauses: TracePause[];
  /** The failed (and `exception`) node executions with their errors, in order. */
  readonly errors: { execution_id: string; node_id: string; title: string; error: string }[];
  /** Ask again with `after_seq` = this for what happens next. */
  readonly last_seq: number;
  /** The window was full: more of the log is already there (ask again at once). */
  readonly more: boolean;
  /** The run may still change (running or paused): ask again later. */
  readonly live: boolean;
  /** The events read before `afterSeq` were capped: some new bars may lack their branch or round. */
  readonly history_capped: boolean;
}

/** A node execution's inputs, outputs, process data and error. */
export interface TraceNode {
  readonly id: string;
  readonly node_id: string;
  readonly title: string;
  readonly type: string;
  readonly status: string;
  readonly error: string | null;
  readonly inputs: unknown;
  readonly outputs: unknown;
  readonly process_data: unknown;
  readonly execution_metadata: unknown;
  readonly elapsed_time: number | null;
  readonly retries: { index: number; error: string | null }[];
}

/** The settings of the trace (`src/config.ts`). */
export interface TraceLimits {
  /** Events read per call (`CONSOLE_TRACE_MAX_EVENTS`); the small events before the cursor at most 4× this. */
  readonly maxEvents: number;
}

const SMALL: readonly RunEventName[] = ['workflow_started', 'node_started', 'iteration_started', 'iteration_next', 'loop_started', 'loop_next', 'human_input_required', 'human_input_form_filled', 'human_input_form_timeout', 'workflow_paused'];
const TRACE: readonly RunEventName[] = [...SMALL, 'node_retry', 'node_finished', 'iteration_completed', 'loop_completed', 'workflow_finished'];
const LIVE = new Set(['running', 'paused']);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

type Data = Record<string, unknown>;
const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);
const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);

/** Builds bars and pauses from a run's events in order (the history first, then the window). */
class TraceBuilder {
  readonly bars = new Map<string, TraceBar>();
  readonly pauses: TracePause[] = [];
  readonly touchedBars = new Set<string>();
  readonly touchedPauses = new Set<number>();
  /** Node id → its latest execution id. */
  readonly #lastExec = new Map<string, string>();
  /** Execution id → successors started so far. */
  readonly #successors = new Map<string, number>();
  /** Scope → branches handed out so far. */
  readonly #branches = new Map<string, number>();
  /** Container node id → the round it runs now (sequential containers). */
  readonly #round = new Map<string, number>();
  runError: string | null = null;

  apply(e: StoredRunEvent, touch: boolean): void {
    let frame: Data;
    try {
      frame = JSON.parse(e.payload) as Data;
    } catch {
      return;
    }
    const d = (frame.data && typeof frame.data === 'object' ? frame.data : {}) as Data;
    const t = e.createdAt;
    const markBar = (id: string) => touch && this.touchedBars.add(id);
    const markPause = (p: TracePause) => touch && this.touchedPauses.add(p.key);
    switch (e.event) {
      case 'workflow_started':
        if (d.reason === 'resumption') {
          for (const p of this.pauses) {
            if (p.resumed_at_ms === null) {
              p.resumed_at_ms = t;
              markPause(p);
            }
          }
        }
        return;
      case 'node_started': {
        const bar = this.#start(d, e.seq, t);
        markBar(bar.id);
        return;
      }
      case 'node_retry': {
        const bar = this.#bar(d, e.seq, t);
        // Dify's retry_index counts from 0 (the first failed attempt)
        bar.retries.push({ index: num(d.retry_index) ?? bar.retries.length, error: str(d.error), at_ms: t });
        bar.retry_index = bar.retries.length;
        markBar(bar.id);
        return;
      }
      case 'node_finished': {
        const bar = this.#bar(d, e.seq, t);
        bar.end_ms = t;
        bar.status = str(d.status) ?? 'succeeded';
        bar.error = str(d.error);
        bar.elapsed_time = num(d.elapsed_time);
        bar.finished_seq = e.seq;
        const meta = (d.execution_metadata && typeof d.execution_metadata === 'object' ? d.execution_metadata : {}) as Data;
        bar.tokens = num(meta.total_tokens) ?? 0;
        if (bar.parent) bar.parent.round = num(meta.iteration_index) ?? num(meta.loop_index) ?? bar.parent.round;
        markBar(bar.id);
        return;
      }
      case 'iteration_started':
      case 'loop_started': {
        const bar = this.bars.get(str(d.id) ?? '');
        if (!bar) return;
        bar.rounds = e.event === 'loop_started' ? [{ index: 0, start_ms: t }] : [];
        if (e.event === 'loop_started') this.#round.set(bar.node_id, 0);
        markBar(bar.id);
        return;
      }
      case 'iteration_next':
      case 'loop_next': {
        const bar = this.bars.get(str(d.id) ?? '');
        const index = num(d.index);
        if (!bar || index === null) return;
        (bar.rounds ??= []).push({ index, start_ms: t });
        this.#round.set(bar.node_id, index);
        markBar(bar.id);
        return;
      }
      case 'iteration_completed':
      case 'loop_completed':
        return;
      case 'human_input_required': {
        const token = str(d.form_token);
        const p: TracePause = {
          key: e.seq,
          node_id: str(d.node_id) ?? '',
          node_title: str(d.node_title) ?? '',
          form_id: str(d.form_id),
          form_token: token,
          form_url: token ? `/form/${encodeURIComponent(token)}` : null,
          expiration_time: num(d.expiration_time),
          paused_at_ms: t,
          resumed_at_ms: null,
          outcome: 'waiting',
          action: null,
        };
        this.pauses.push(p);
        markPause(p);
        const bar = this.bars.get(this.#lastExec.get(p.node_id) ?? '');
        if (bar && bar.end_ms === null) {
          bar.status = 'paused';
          bar.end_ms = t;
          markBar(bar.id);
        }
        return;
      }
      case 'workflow_paused':
        for (const bar of this.bars.values()) {
          if (bar.status === 'paused' && bar.end_ms === null) {
            bar.end_ms = t;
            markBar(bar.id);
          }
        }
        return;
      case 'human_input_form_filled':
      case 'human_input_form_timeout': {
        const p = [...this.pauses].reverse().find((x) => x.node_id === d.node_id);
        if (!p) return;
        p.outcome = e.event === 'human_input_form_filled' ? 'filled' : 'timeout';
        p.action = str(d.action_text) ?? str(d.action_id);
        p.resumed_at_ms ??= t;
        markPause(p);
        return;
      }
      case 'workflow_finished':
        this.runError = str(d.error);
        return;
    }
  }

  #start(d: Data, seq: number, t: number): TraceBar {
    const id = str(d.id) ?? `seq-${seq}`;
    const nodeId = str(d.node_id) ?? '';
    const iterationId = str(d.iteration_id);
    const loopId = str(d.loop_id);
    const containerNode = iterationId ?? loopId;
    const parallelRunId = str(d.parallel_run_id);
    const parent = containerNode
      ? { type: iterationId ? ('iteration' as const) : ('loop' as const), node_id: containerNode, execution_id: this.#lastExec.get(containerNode) ?? null, round: parallelRunId ? null : (this.#round.get(containerNode) ?? null) }
      : null;
    const scope = parent ? `${parent.execution_id}#${parallelRunId ?? parent.round}` : '';
    const predecessor = str(d.predecessor_node_id);
    let branch = 0;
    const predExec = predecessor ? this.#lastExec.get(predecessor) : undefined;
    const pred = predExec ? this.bars.get(predExec) : undefined;
    if (pred) {
      const k = this.#successors.get(pred.id) ?? 0;
      this.#successors.set(pred.id, k + 1);
      if (k === 0) branch = pred.branch;
      else {
        branch = (this.#branches.get(scope) ?? 0) + 1;
        this.#branches.set(scope, branch);
      }
    }
    const bar: TraceBar = {
      id,
      node_id: nodeId,
      title: str(d.title) ?? nodeId,
      type: str(d.node_type) ?? '',
      index: num(d.index) ?? 0,
      predecessor_node_id: predecessor,
      start_ms: t,
      end_ms: null,
      status: 'running',
      error: null,
      tokens: 0,
      elapsed_time: null,
      retry_index: 0,
      retries: [],
      parent,
      parallel_run_id: parallelRunId,
      branch,
      started_seq: seq,
      finished_seq: null,
    };
    this.bars.set(id, bar);
    this.#lastExec.set(nodeId, id);
    return bar;
  }

  /** The bar of the execution `d` reports on; made from `d` when its start was not read (history capped). */
  #bar(d: Data, seq: number, t: number): TraceBar {
    const found = this.bars.get(str(d.id) ?? '');
    if (found) return found;
    const elapsed = num(d.elapsed_time);
    const bar = this.#start(d, seq, elapsed !== null ? t - Math.round(elapsed * 1000) : t);
    return bar;
  }
}

/** The console's run trace over a run's log (`TraceService.trace`) and a node execution's details (`node`). */
export class TraceService {
  readonly #runs: RunStore;
  readonly #events: RunEventStore;
  readonly #limits: TraceLimits;

  constructor(db: Kysely<Database>, limits: TraceLimits) {
    this.#runs = new RunStore(db);
    this.#events = new RunEventStore(db, this.#runs);
    this.#limits = limits;
  }

  /** The run, when it belongs to `appId` (an app of the caller's workspace). */
  async run(appId: string, runId: string): Promise<RunRecord | undefined> {
    const run = await this.#runs.find(runId);
    return run && run.app_id === appId ? run : undefined;
  }

  /** The trace of run (see the module comment); `afterSeq` 0 for the whole of it. */
  async trace(run: RunRecord, opts: { afterSeq?: number } = {}): Promise<RunTrace> {
    const afterSeq = opts.afterSeq ?? 0;
    if (!Number.isInteger(afterSeq) || afterSeq < 0) throw invalidParam(`after_seq must be a non-negative integer, got ${afterSeq}`);
    // the row first: an event it does not count yet is read next time; one it counts is read now
    const fresh = (await this.#runs.find(run.id)) ?? run;
    const max = this.#limits.maxEvents;
    const historyLimit = max * 4;
    const [history, window] = await Promise.all([
      afterSeq > 0 ? this.#events.named(run.id, SMALL, { afterSeq: 0, untilSeq: afterSeq, limit: historyLimit }) : Promise.resolve([]),
      this.#events.named(run.id, TRACE, { afterSeq, limit: max }),
    ]);
    const b = new TraceBuilder();
    for (const e of history) b.apply(e, false);
    for (const e of window) b.apply(e, true);
    const full = window.length === max;
    const lastSeq = window.length > 0 ? window[window.length - 1]!.seq : afterSeq;
    const whole = afterSeq === 0;
    const bars = [...b.bars.values()].filter((x) => whole || b.touchedBars.has(x.id));
    const pauses = b.pauses.filter((p) => whole || b.touchedPauses.has(p.key));
    return {
      run: {
        id: fresh.id,
        app_id: fresh.app_id,
        mode: fresh.mode,
        status: fresh.status,
        error: fresh.error ?? b.runError,
        conversation_id: fresh.conversation_id,
        message_id: fresh.message_id,
        total_tokens: Number(fresh.total_tokens),
        total_steps: Number(fresh.total_steps),
        elapsed_time: Number(fresh.elapsed_ms) / 1000,
        created_ms: Number(fresh.created_at),
        finished_ms: fresh.finished_at === null ? null : Number(fresh.finished_at),
      },
      bars,
      pauses,
      errors: bars.filter((x) => (x.status === 'failed' || x.status === 'exception') && x.error).map((x) => ({ execution_id: x.id, node_id: x.node_id, title: x.title, error: x.error! })),
      last_seq: lastSeq,
      more: full,
      live: LIVE.has(fresh.status) || full,
      history_capped: history.length === historyLimit,
    };
  }

  /** A node execution of the run with its inputs, outputs, process data and error; undefined when the run has none such. */
  async node(run: RunRecord, executionId: string): Promise<TraceNode | undefined> {
    if (!UUID.test(executionId)) throw invalidParam(`execution_id must be a node execution id (a UUID), got "${executionId.slice(0, 64)}"`);
    const events = await this.#events.containing(run.id, ['node_started', 'node_retry', 'node_finished'], `"data":{"id":"${executionId}"`, 1000);
    if (events.length === 0) return undefined;
    let out: TraceNode | undefined;
    const retries: { index: number; error: string | null }[] = [];
    for (const e of events) {
      const d = ((JSON.parse(e.payload) as Data).data ?? {}) as Data;
      if (d.id !== executionId) continue;
      if (e.event === 'node_retry') retries.push({ index: num(d.retry_index) ?? retries.length, error: str(d.error) });
      out = {
        id: executionId,
        node_id: str(d.node_id) ?? '',
        title: str(d.title) ?? '',
        type: str(d.node_type) ?? '',
        status: e.event === 'node_started' ? 'running' : e.event === 'node_retry' ? 'retry' : (str(d.status) ?? 'succeeded'),
        error: str(d.error),
        inputs: d.inputs ?? null,
        outputs: d.outputs ?? null,
        process_data: d.process_data ?? null,
        execution_metadata: d.execution_metadata ?? null,
        elapsed_time: num(d.elapsed_time),
        retries,
      };
    }
    return out;
  }
}
