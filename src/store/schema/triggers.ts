/** A trigger node of an app's current graph (migration 034; see src/triggers/trigger-store.ts). */
export interface AppTriggerTable {
  id: string;
  app_id: string;
  node_id: string;
  /** webhook | schedule | plugin */
  kind: string;
  /** The id in `/triggers/webhook/{webhook_id}`; null for schedules and plugins. */
  webhook_id: string | null;
  /** enabled | paused */
  status: string;
  cron_expression: string | null;
  timezone: string | null;
  /** Epoch ms of a schedule's next tick. */
  next_fire_at: number | null;
  last_fired_at: number | null;
  created_at: number;
  updated_at: number;
}
