import { defineError, notFound } from '../infra/errors.js';

/** `GET /workflows/run/{id}` (with a period, as Dify). */
export const workflowRunNotFound = () => notFound('Workflow run not found.');
/** `GET /workflow/{id}/events` (no period, as Dify). */
export const workflowRunEventsNotFound = () => notFound('Workflow run not found');
export const conversationNotExists = () => notFound('Conversation Not Exists.');
export const lastConversationNotExists = () => notFound('Last Conversation Not Exists.');
export const firstMessageNotExists = () => notFound('First Message Not Exists.');
/** A chatflow run that failed, answered in blocking mode. */
export const completionRequestError = defineError('completion_request_error', 400, (message: string) => message || 'Completion request failed.');
/**
 * A blocking run request whose run's event log could not be read while waiting for its end (the
 * database failed): the run goes on, the request cannot say how it ended.
 */
export const runWaitFailed = defineError(
  'run_wait_failed',
  503,
  (runId: string, cause: string) => `Waiting for the end of run ${runId} failed: ${cause}. The run goes on; follow it with GET /v1/workflows/run/${runId}.`,
);
