import type { Generated } from 'kysely';

/** Row types of workflow runs, their event log and snapshots (see src/store/schema.ts). */

export type Seq = Generated<number>;

/** One workflow or chatflow run. */
export interface WorkflowRunTable {
  id: string;
  app_id: string;
  /** The app version (graph) the run started with; it resumes on it. */
  app_version: number;
  /** The id `…/stop` takes; kept across resumes. */
  task_id: string;
  /** workflow | advanced-chat */
  mode: string;
  end_user_id: string;
  conversation_id: string | null;
  message_id: string | null;
  /** running | succeeded | failed | stopped | partial-succeeded | paused */
  status: string;
  /** JSON object of the run inputs. */
  inputs: string;
  /** JSON object, null until the run ends. */
  outputs: string | null;
  error: string | null;
  total_steps: number;
  total_tokens: number;
  exceptions_count: number;
  elapsed_ms: number;
  /** 1 once a stop was requested (the durable stop signal). */
  stop_requested: number;
  /** Sequence number of the last event appended to the run's log. */
  last_seq: number;
  /** Refreshed by each journal flush of the process running it (informational). */
  heartbeat_at: number;
  created_at: number;
  finished_at: number | null;
  /** The fencing token: incremented by each claim; the owner's writes are conditional on it. */
  owner_epoch: number;
  /** The job executing the run (null while it waits, paused or ended). */
  owner_job: string | null;
  /** Dify's `WorkflowRunTriggeredFrom`: app-run | webhook | schedule | plugin | debugging (migration 034). */
  triggered_from: string;
}

/** The per-run event log: the exact wire payloads, in order. */
export interface WorkflowRunEventTable {
  run_id: string;
  seq: number;
  event: string;
  /** The JSON payload as sent in `data:` frames. */
  payload: string;
  created_at: number;
}

/** The latest persisted engine state of a run (plain versioned JSON). */
export interface WorkflowRunSnapshotTable {
  run_id: string;
  version: number;
  state: string;
  updated_at: number;
}
