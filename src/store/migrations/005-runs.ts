import type { Kysely } from 'kysely';

/**
 * Workflow / chatflow runs (with their durable stop flag and heartbeat), the per-run event log and
 * run snapshots. Node executions live in the log (`node_started` / `node_finished` payloads).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('workflow_runs')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('app_id', 'text', (c) => c.notNull())
    .addColumn('task_id', 'text', (c) => c.notNull())
    .addColumn('mode', 'text', (c) => c.notNull())
    .addColumn('end_user_id', 'text', (c) => c.notNull())
    .addColumn('conversation_id', 'text')
    .addColumn('message_id', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('inputs', 'text', (c) => c.notNull())
    .addColumn('outputs', 'text')
    .addColumn('error', 'text')
    .addColumn('total_steps', 'integer', (c) => c.notNull())
    .addColumn('total_tokens', 'bigint', (c) => c.notNull())
    .addColumn('exceptions_count', 'integer', (c) => c.notNull())
    .addColumn('elapsed_ms', 'bigint', (c) => c.notNull())
    .addColumn('stop_requested', 'integer', (c) => c.notNull())
    .addColumn('last_seq', 'bigint', (c) => c.notNull())
    .addColumn('heartbeat_at', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('finished_at', 'bigint')
    .execute();
  await db.schema.createIndex('workflow_runs_task').on('workflow_runs').column('task_id').execute();
  await db.schema.createIndex('workflow_runs_status').on('workflow_runs').columns(['status', 'heartbeat_at']).execute();
  await db.schema
    .createTable('workflow_run_events')
    .addColumn('run_id', 'text', (c) => c.notNull())
    .addColumn('seq', 'bigint', (c) => c.notNull())
    .addColumn('event', 'text', (c) => c.notNull())
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('workflow_run_events_pk', ['run_id', 'seq'])
    .execute();
  await db.schema
    .createTable('workflow_run_snapshots')
    .addColumn('run_id', 'text', (c) => c.primaryKey())
    .addColumn('version', 'integer', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
}
