import type { Kysely } from 'kysely';

/**
 * Human Input email delivery: one recipient per address with its own token (its personal form
 * link), its sending status and last error; accounts get an email address (member recipients).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('human_input_form_recipients')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('form_id', 'text', (c) => c.notNull())
    .addColumn('delivery_id', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('token', 'text', (c) => c.notNull().unique())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull())
    .addColumn('last_error', 'text')
    .addColumn('sent_at', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('human_input_form_recipients_form').on('human_input_form_recipients').column('form_id').execute();
  await db.schema.alterTable('human_input_deliveries').addColumn('last_error', 'text').execute();
  await db.schema.alterTable('accounts').addColumn('email', 'text').execute();
  await db.schema.createIndex('accounts_email').on('accounts').column('email').unique().execute();
}
