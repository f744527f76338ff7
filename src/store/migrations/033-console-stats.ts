import type { Kysely } from 'kysely';

/**
 * Covering indexes for the console's monitoring figures (issue #44, `src/console/app-stats.ts`).
 * Each figure reads one app's (or a workspace's apps') rows created in a range; with every column
 * a figure reads in the index, the figure is an index-only range scan (SQLite; PostgreSQL once the
 * visibility map is set by vacuum) instead of a table lookup per row, which made them 10–50× a
 * plain indexed count (bench/console-stats.bench.ts).
 *
 * - messages: `messages_app_stats` (app_id, created_at, status, latency, tokens, end user,
 *   conversation, currency, price) replaces `messages_app_created` (app_id, created_at), its prefix,
 *   which serves every query the narrow one did: one index on messages more, not two.
 * - workflow_runs: `workflow_runs_app_stats` (app_id, created_at, mode, status, elapsed, tokens, end user).
 * - conversations: `conversations_app_created` (app_id, created_at, id), for messages per conversation, is 031's.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createIndex('messages_app_stats')
    .on('messages')
    .columns(['app_id', 'created_at', 'status', 'latency', 'prompt_tokens', 'completion_tokens', 'end_user_id', 'conversation_id', 'currency', 'total_price'])
    .execute();
  await db.schema.dropIndex('messages_app_created').execute();
  await db.schema.createIndex('workflow_runs_app_stats').on('workflow_runs').columns(['app_id', 'created_at', 'mode', 'status', 'elapsed_ms', 'total_tokens', 'end_user_id']).execute();
  // conversations by (app_id, created_at, id): made by 031-console-logs, which the per-day conversation counts read too
}
