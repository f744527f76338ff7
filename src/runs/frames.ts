import type { WorkflowRunTable } from '../store/schema.js';
import type { UsageBody } from '../llm/usage.js';
import { EMPTY_USAGE } from '../lib/usage.js';
import type { HumanInputRequired } from '../forms/human-input-port.js';
import type { Flight } from './run-types.js';

/** The `workflow_finished` frame of an ended run, built from its row (events endpoint, stop of a paused run). */
export function finishedFrame(run: WorkflowRunTable, user: string, workflowId: string): { event: string; [k: string]: unknown } {
  const sec = (ms: number | null) => (ms === null ? null : Math.floor(Number(ms) / 1000));
  const data = {
    id: run.id,
    workflow_id: workflowId,
    status: run.status,
    outputs: run.outputs ? (JSON.parse(run.outputs) as unknown) : null,
    error: run.error,
    elapsed_time: Number(run.elapsed_ms) / 1000,
    total_tokens: Number(run.total_tokens),
    total_steps: Number(run.total_steps),
    created_by: { id: run.end_user_id, user },
    created_at: sec(run.created_at),
    finished_at: sec(run.finished_at),
    exceptions_count: Number(run.exceptions_count),
    files: [],
  };
  if (run.mode === 'advanced-chat') {
    return {
      event: 'workflow_finished',
      conversation_id: run.conversation_id,
      message_id: run.message_id,
      created_at: sec(run.created_at),
      task_id: run.task_id,
      workflow_run_id: run.id,
      data,
    };
  }
  return { event: 'workflow_finished', workflow_run_id: run.id, task_id: run.task_id, data };
}

/**
 * `metadata.usage` of a chatflow message (`message_end`, the blocking body, the message row): the
 * sum of the run's model calls, as Dify's `graph_runtime_state.llm_usage`, or zero usage with the
 * token total of a snapshot written before usage was kept (`tokens` only).
 */
export function usageOf(state: { readonly usage?: UsageBody | undefined; readonly tokens: number }): UsageBody {
  return state.usage ?? { ...EMPTY_USAGE, total_tokens: state.tokens };
}

/** `workflow_paused.reasons[]` and the paused blocking bodies' `reasons`: Dify's upper-case `TYPE` key first. */
export function pauseReasons(reasons: readonly HumanInputRequired[]): Record<string, unknown>[] {
  return reasons.map((r) => ({ TYPE: 'human_input_required', ...r }));
}

/** The data of a `node_finished` (or `node_retry`) event of the node started as `flight`, at `now`. */
export function nodeFinishedData(
  flight: Flight,
  now: number,
  status: string,
  error: string | null,
  inputs: Record<string, unknown> | null,
  outputs: Record<string, unknown> | null,
  processData: Record<string, unknown> | null,
  metadata: Record<string, unknown> | null,
  extra: { retry_index?: number } = {},
): Record<string, unknown> {
  const st = flight.started;
  return {
    id: st.id,
    node_id: st.node_id,
    node_type: st.node_type,
    title: st.title,
    index: st.index,
    predecessor_node_id: st.predecessor_node_id,
    inputs,
    inputs_truncated: false,
    created_at: st.created_at,
    extras: st.extras,
    iteration_id: null,
    loop_id: null,
    process_data: processData,
    process_data_truncated: false,
    outputs,
    outputs_truncated: false,
    status,
    error,
    elapsed_time: (now - flight.startedAt) / 1000,
    execution_metadata: metadata,
    finished_at: Math.floor(now / 1000),
    files: [],
    ...(extra.retry_index !== undefined ? { retry_index: extra.retry_index } : {}),
  };
}
