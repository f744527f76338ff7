import { PostgresAdapter, type Kysely } from 'kysely';

/**
 * Message feedback (end-user and admin), the accounts admins act as, and the snapshots that keep
 * `GET /app/feedbacks` paging stable while feedback is added.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  // `seq` orders inserts; it is the only place the two engines need different DDL.
  const pg = db.getExecutor().adapter instanceof PostgresAdapter;
  await db.schema
    .createTable('message_feedbacks')
    .addColumn('seq', pg ? 'bigserial' : 'integer', (c) => (pg ? c.primaryKey() : c.primaryKey().autoIncrement()))
    .addColumn('id', 'text', (c) => c.notNull().unique())
    .addColumn('app_id', 'text', (c) => c.notNull())
    .addColumn('conversation_id', 'text')
    .addColumn('message_id', 'text', (c) => c.notNull())
    .addColumn('rating', 'text', (c) => c.notNull())
    .addColumn('content', 'text')
    .addColumn('from_source', 'text', (c) => c.notNull())
    .addColumn('from_end_user_id', 'text')
    .addColumn('from_account_id', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addUniqueConstraint('message_feedbacks_message_source', ['message_id', 'from_source'])
    .execute();
  await db.schema.createIndex('message_feedbacks_app_created').on('message_feedbacks').columns(['app_id', 'created_at', 'id']).execute();
  await db.schema
    .createTable('accounts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull().unique())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('feedback_page_snapshots')
    .addColumn('api_key_id', 'text', (c) => c.notNull())
    .addColumn('page_limit', 'integer', (c) => c.notNull())
    .addColumn('max_seq', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('feedback_page_snapshots_pk', ['api_key_id', 'page_limit'])
    .execute();
}
