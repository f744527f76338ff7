/** Webhook and schedule triggers (src/triggers; docs/triggers.md). */
export interface TriggerConfig {
  /** The public base of webhook URLs, `{TRIGGER_URL}/triggers/webhook/{webhook_id}` (`TRIGGER_URL`, Dify's name; default `APP_WEB_URL`). */
  readonly triggerUrl: string;
  /** Calls one webhook accepts per window, counted per webhook across the deployment (`WEBHOOK_RATE_LIMIT_MAX_REQUESTS`, default 60). */
  readonly webhookRateLimitMax: number;
  /** The window of that count, seconds (`WEBHOOK_RATE_LIMIT_WINDOW_SECONDS`, default 60). */
  readonly webhookRateLimitWindowSeconds: number;
  /** How often due schedules are looked for, ms (`SCHEDULE_POLL_SECONDS`, default 5): a tick fires at most this late. */
  readonly schedulePollMs: number;
}
