import type { Kysely } from 'kysely';

/**
 * The job outbox: with `QUEUE=bullmq`, a job enqueued inside a transaction is a row here, written
 * by that transaction, which the relay hands to BullMQ once committed and then deletes.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('job_outbox')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('run_at', 'bigint', (c) => c.notNull())
    .addColumn('max_attempts', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('job_outbox_created_at').on('job_outbox').column('created_at').execute();
}
