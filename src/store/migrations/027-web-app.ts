import type { Kysely } from 'kysely';

/**
 * Every app's web app (Dify's `sites`): a unique 16-character code, enabled by default, and the
 * site's settings. An app stored before this migration gets its site when one is first asked for
 * (`SiteService.forApp`): until then no code of it exists, so no page or passport can name it.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('sites')
    .addColumn('app_id', 'text', (c) => c.primaryKey())
    .addColumn('code', 'text', (c) => c.notNull().unique())
    .addColumn('enabled', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('settings', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  // Dify's `pinned_conversations` and `saved_messages`: an end user's pins and saved answers in the web app.
  await db.schema
    .createTable('pinned_conversations')
    .addColumn('app_id', 'text', (c) => c.notNull())
    .addColumn('end_user_id', 'text', (c) => c.notNull())
    .addColumn('conversation_id', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('pinned_conversations_pk', ['end_user_id', 'conversation_id'])
    .execute();
  await db.schema.createIndex('pinned_conversations_conversation').on('pinned_conversations').column('conversation_id').execute();
  await db.schema
    .createTable('saved_messages')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('app_id', 'text', (c) => c.notNull())
    .addColumn('end_user_id', 'text', (c) => c.notNull())
    .addColumn('message_id', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('saved_messages_owner').on('saved_messages').columns(['end_user_id', 'message_id']).unique().execute();
  await db.schema.createIndex('saved_messages_message').on('saved_messages').column('message_id').execute();
}
