import type { Kysely } from 'kysely';

/** Who disabled a document and when (`PATCH /datasets/{id}/documents/status/{action}`). */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('documents').addColumn('disabled_at', 'bigint').execute();
  await db.schema.alterTable('documents').addColumn('disabled_by', 'text').execute();
}
