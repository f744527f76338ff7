import type { Kysely } from 'kysely';

/** Chatflow conversation variables, one row per conversation and declared variable (as Dify). */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('conversation_variables')
    .addColumn('id', 'text', (c) => c.notNull())
    .addColumn('conversation_id', 'text', (c) => c.notNull())
    .addColumn('app_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('value_type', 'text', (c) => c.notNull())
    .addColumn('value', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('conversation_variables_pk', ['conversation_id', 'id'])
    .execute();
}
