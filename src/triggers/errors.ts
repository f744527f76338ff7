import { defineError } from '../infra/errors.js';

/** A webhook called more than `WEBHOOK_RATE_LIMIT_MAX_REQUESTS` times in `WEBHOOK_RATE_LIMIT_WINDOW_SECONDS`. */
export const webhookRateLimited = defineError(
  'webhook_rate_limited',
  429,
  (max: number, windowSeconds: number) =>
    `Too many calls to this webhook: at most ${max} per ${windowSeconds} s (WEBHOOK_RATE_LIMIT_MAX_REQUESTS, WEBHOOK_RATE_LIMIT_WINDOW_SECONDS). Try again later.`,
  (_max: number, windowSeconds: number) => ({ 'retry-after': String(windowSeconds) }),
);

/** A webhook request body over the upload limit. */
export const webhookBodyTooLarge = defineError(
  'webhook_body_too_large',
  413,
  (bytes: number) => `Webhook request too large: the body may be at most ${bytes} bytes (UPLOAD_FILE_SIZE_LIMIT).`,
);

/** A waiting (not async) webhook whose run failed or stopped. */
export const webhookRunFailed = defineError(
  'webhook_run_failed',
  500,
  (runId: string, status: string, error: string | null) => `The run the webhook started (workflow_run_id ${runId}) ended ${status}${error ? `: ${error}` : ''}.`,
);

/** A waiting webhook whose run did not finish within the node's `timeout`; the run goes on. */
export const webhookRunTimeout = defineError(
  'webhook_run_timeout',
  504,
  (runId: string, seconds: number) =>
    `The run the webhook started (workflow_run_id ${runId}) did not finish within the node's timeout (${seconds} s); it goes on: follow it with GET /v1/workflow/${runId}/events.`,
);

/** A waiting webhook whose run paused for a Human Input form. */
export const webhookRunPaused = defineError(
  'webhook_run_paused',
  409,
  (runId: string) => `The run the webhook started (workflow_run_id ${runId}) paused for a Human Input form; it continues once the form is submitted.`,
);
