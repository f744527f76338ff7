import { defineError, notFound } from '../infra/errors.js';

/** `GET /workflows/run/{id}` (with a period, as Dify). */
export const workflowRunNotFound = () => notFound('Workflow run not found.');
/** `GET /workflow/{id}/events` (no period, as Dify). */
export const workflowRunEventsNotFound = () => notFound('Workflow run not found');
export const conversationNotExists = () => notFound('Conversation Not Exists.');
export const lastConversationNotExists = () => notFound('Last Conversation Not Exists.');
export const firstMessageNotExists = () => notFound('First Message Not Exists.');
/**
 * A run queued for the workers that none took within RUN_QUEUE_WAIT_SECONDS (the run ended
 * `failed` with this message as its error); a blocking request answers it.
 */
export const runNotPickedUp = defineError(
  'run_not_picked_up',
  503,
  (seconds: number) => `No worker process took this run within RUN_QUEUE_WAIT_SECONDS=${seconds} s, so it ended failed. Start a worker (\`dovetail worker\`, or a process with the all role) and send the request again.`,
);
/** 400 `completion_request_error` (a chatflow run that failed, answered in blocking mode): the model layer's one registration. */
export { completionRequestError } from '../llm/errors.js';
/**
 * A blocking run request whose run's event log could not be read while waiting for its end (the
 * database failed): the run goes on, the request cannot say how it ended.
 */
export const runWaitFailed = defineError(
  'run_wait_failed',
  503,
  (runId: string, cause: string) => `Waiting for the end of run ${runId} failed: ${cause}. The run goes on; follow it with GET /v1/workflows/run/${runId}.`,
);
