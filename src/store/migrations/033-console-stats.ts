import type { Kysely } from 'kysely';

/**
 * Indexes for the console's monitoring figures (issue #44, `src/console/app-stats.ts`): each figure
 * reads one app's (or a workspace's apps') rows created in a range. Messages already have
 * `messages_app_created` (app_id, created_at); runs and conversations get theirs here, so every
 * figure is an index range scan rather than a scan of the table.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.createIndex('workflow_runs_app_created').on('workflow_runs').columns(['app_id', 'created_at']).execute();
  await db.schema.createIndex('conversations_app_created').on('conversations').columns(['app_id', 'created_at']).execute();
}
