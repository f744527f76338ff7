import type { Kysely } from 'kysely';

/**
 * Workflow triggers (issue 45; Dify 1.10's `app_triggers`, `workflow_webhook_triggers` and
 * `workflow_schedule_plans` in one table): one row per trigger node of an app's current graph.
 * - `kind`: `webhook`, `schedule` or `plugin`.
 * - `webhook_id`: the id in the webhook's URL (`/triggers/webhook/{webhook_id}`), unique; null for
 *   the other kinds.
 * - `status`: `enabled` or `paused` (`dovetail app trigger APP --pause|--resume`).
 * - `cron_expression` / `timezone`: a schedule's five-field expression (a visual schedule's is
 *   built from it) and IANA zone; `next_fire_at` the epoch ms of its next tick, advanced by
 *   compare-and-set by the process that fires it (so a tick fires once across all workers).
 * - `last_fired_at`: when the schedule last fired a run (null before).
 *
 * `workflow_runs.triggered_from` is Dify's `WorkflowRunTriggeredFrom`: `app-run` for runs the API
 * (or the web app) started, `webhook`, `schedule`, `plugin`, `debugging`.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('app_triggers')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('app_id', 'text', (c) => c.notNull())
    .addColumn('node_id', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('webhook_id', 'text', (c) => c.unique())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('cron_expression', 'text')
    .addColumn('timezone', 'text')
    .addColumn('next_fire_at', 'bigint')
    .addColumn('last_fired_at', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addUniqueConstraint('app_triggers_app_node', ['app_id', 'node_id'])
    .execute();
  await db.schema.createIndex('app_triggers_due').on('app_triggers').columns(['kind', 'status', 'next_fire_at']).execute();
  await db.schema.alterTable('workflow_runs').addColumn('triggered_from', 'text', (c) => c.notNull().defaultTo('app-run')).execute();
}
