import { MessageStore } from '../messages/message-store.js';
import { AppStore } from '../apps/app-store.js';
import { toSeconds } from '../infra/clock.js';
import type { Kysely } from 'kysely';
import type { Database } from '../store/schema.js';
import { RunStore, type RunRecord } from './run-store.js';
import { RunEventStore } from './run-event-store.js';

/** One line of `dovetail run list`: a workflow / chatflow run, or a completion / chat message (those keep no event log). */
export interface RunSummary {
  readonly id: string;
  readonly kind: 'workflow_run' | 'message';
  readonly app_id: string;
  /** The app's name now; null when the app was deleted (its runs stay). */
  readonly app_name: string | null;
  readonly mode: string;
  readonly status: string;
  readonly error: string | null;
  readonly total_steps: number | null;
  readonly total_tokens: number | null;
  /** Seconds. */
  readonly elapsed_time: number | null;
  /** Unix seconds. */
  readonly created_at: number;
  readonly finished_at: number | null;
}

export interface RunFilter {
  readonly appId?: string;
  readonly status?: string;
  readonly limit: number;
}

/**
 * Read side of runs for operators (the CLI): runs of every app mode, newest first. Completion and
 * chat apps have no workflow runs; their messages stand in (status `normal` | `error` | `stopped`).
 */
export async function listRuns(db: Kysely<Database>, f: RunFilter, messageStore: Pick<MessageStore, 'newestWithoutRun'> = new MessageStore(db)): Promise<RunSummary[]> {
  const [r, m] = await Promise.all([new RunStore(db).list(f), messageStore.newestWithoutRun(f)]);
  const out: RunSummary[] = [
    ...r.map((x) => runSummary(x)),
    ...m.map((x) => ({
      id: x.id,
      kind: 'message' as const,
      app_id: x.appId,
      app_name: null,
      mode: x.mode,
      status: x.status,
      error: x.error,
      total_steps: null,
      total_tokens: null,
      elapsed_time: null,
      created_at: toSeconds(x.createdAt),
      finished_at: null,
    })),
  ];
  const page = out.sort((a, b) => b.created_at - a.created_at).slice(0, f.limit);
  const names = await new AppStore(db).namesOf(page.map((r) => r.app_id));
  return page.map((r) => ({ ...r, app_name: names.get(r.app_id) ?? null }));
}

function runSummary(x: RunRecord): RunSummary {
  return {
    id: x.id,
    kind: 'workflow_run',
    app_id: x.app_id,
    app_name: null,
    mode: x.mode,
    status: x.status,
    error: x.error,
    total_steps: x.total_steps,
    total_tokens: x.total_tokens,
    elapsed_time: x.elapsed_ms / 1000,
    created_at: toSeconds(x.created_at),
    finished_at: x.finished_at === null ? null : toSeconds(x.finished_at),
  };
}

/** A run (or a message of a completion / chat app) with its inputs and outputs; undefined when there is none. */
export async function showRun(db: Kysely<Database>, id: string, messages: Pick<MessageStore, 'find'> = new MessageStore(db)): Promise<(RunSummary & Record<string, unknown>) | undefined> {
  const run = await new RunStore(db).find(id);
  if (run) {
    return { ...runSummary(run), app_name: (await new AppStore(db).namesOf([run.app_id])).get(run.app_id) ?? null, task_id: run.task_id, app_version: run.app_version, inputs: JSON.parse(run.inputs) as unknown, outputs: run.outputs === null ? null : (JSON.parse(run.outputs) as unknown), events: run.last_seq };
  }
  const m = await messages.find(id);
  if (!m) return undefined;
  return {
    id: m.id,
    kind: 'message',
    app_id: m.appId,
    app_name: (await new AppStore(db).namesOf([m.appId])).get(m.appId) ?? null,
    mode: m.mode,
    status: m.status,
    error: m.error,
    total_steps: null,
    total_tokens: null,
    elapsed_time: null,
    created_at: toSeconds(m.createdAt),
    finished_at: null,
    conversation_id: m.conversationId,
    query: m.query,
    answer: m.answer,
  };
}

export interface LoggedRunEvent {
  readonly seq: number;
  readonly event: string;
  readonly payload: Record<string, unknown>;
}

/** A run's logged events after `afterSeq`, in order (at most `limit`). */
export async function runEvents(db: Kysely<Database>, runId: string, afterSeq: number, limit: number): Promise<LoggedRunEvent[]> {
  const rows = await new RunEventStore(db).after(runId, afterSeq, limit);
  return rows.map((r) => ({ seq: r.seq, event: r.event, payload: JSON.parse(r.payload) as Record<string, unknown> }));
}
