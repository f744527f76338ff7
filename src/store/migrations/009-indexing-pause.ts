import type { Kysely } from 'kysely';

/** Which execution of an indexing run may write it (pause / resume fence old executions out). */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('indexing_runs').addColumn('owner', 'text').execute();
}
