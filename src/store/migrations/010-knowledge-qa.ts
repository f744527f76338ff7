import type { Kysely } from 'kysely';

/** The answer of a Q&A segment (`doc_form: qa_model`); the question is the segment's content. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('segments').addColumn('answer', 'text').execute();
}
