import type { WorkflowRunTable } from '../store/schema.js';

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

/** `message_end.metadata.usage` of a chatflow run. */
export function usageOf(tokens: number, elapsedMs: number): Record<string, unknown> {
  return {
    prompt_tokens: 0,
    prompt_unit_price: '0',
    prompt_price_unit: '0',
    prompt_price: '0',
    completion_tokens: 0,
    completion_unit_price: '0',
    completion_price_unit: '0',
    completion_price: '0',
    total_tokens: tokens,
    total_price: '0',
    currency: 'USD',
    latency: elapsedMs / 1000,
  };
}
