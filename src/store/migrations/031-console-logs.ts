import type { Kysely } from 'kysely';

/**
 * Indexes for the console's logs (issue #44): an app's conversations newest first by creation or by
 * last update, the feedback of a conversation (the log's feedback summary and its none filter) and an
 * app's conversations and messages with a like or a dislike (the like / dislike filter), and an app's runs newest first, with or without a status filter. Each serves a
 * page of a log at a million messages and 100,000 runs (`bench/console-logs.bench.ts`); the run
 * trace reads the event log by its primary key `(run_id, seq)`. The ids end each index: a page's
 * order (`…, id`) is the index's, and a count reads the index alone.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.createIndex('conversations_app_created').on('conversations').columns(['app_id', 'created_at', 'id']).execute();
  await db.schema.createIndex('conversations_app_updated').on('conversations').columns(['app_id', 'updated_at', 'id']).execute();
  await db.schema.createIndex('message_feedbacks_conversation').on('message_feedbacks').columns(['conversation_id', 'rating']).execute();
  await db.schema.createIndex('message_feedbacks_app_rating').on('message_feedbacks').columns(['app_id', 'rating', 'conversation_id', 'message_id']).execute();
  await db.schema.createIndex('workflow_runs_app_mode_created').on('workflow_runs').columns(['app_id', 'mode', 'created_at', 'id']).execute();
  await db.schema.createIndex('workflow_runs_app_mode_status_created').on('workflow_runs').columns(['app_id', 'mode', 'status', 'created_at', 'id']).execute();
}
