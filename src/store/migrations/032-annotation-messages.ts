import type { Kysely } from 'kysely';

/**
 * Annotations made from a message (the console's "improve this answer", Dify's
 * `POST /apps/{id}/annotations` with `message_id`): the message and its conversation, so a second
 * correction of the same message edits the first (as Dify's `message.annotation`; unique, and
 * NULLs never collide, so annotations written from scratch are unaffected). And the hit
 * history of one annotation read newest first, by page.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('app_annotations').addColumn('message_id', 'text').execute();
  await db.schema.alterTable('app_annotations').addColumn('conversation_id', 'text').execute();
  await db.schema.createIndex('app_annotations_app_message').unique().on('app_annotations').columns(['app_id', 'message_id']).execute();
  await db.schema.createIndex('annotation_hit_histories_annotation_created').on('annotation_hit_histories').columns(['annotation_id', 'created_at']).execute();
  await db.schema.dropIndex('annotation_hit_histories_annotation').execute();
}
