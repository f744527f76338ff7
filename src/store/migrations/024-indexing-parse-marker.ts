import type { Kysely } from 'kysely';

/**
 * The execution parsing an indexing run's file (`parsing_owner`): set durably before a parse and
 * cleared after it, so that a run whose process died mid-parse ends in `error` instead of being
 * parsed again by the next process.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('indexing_runs').addColumn('parsing_owner', 'text').execute();
}
