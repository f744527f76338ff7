import type { Kysely } from 'kysely';

/**
 * Segment editing (`/datasets/{id}/documents/{id}/segments…`): a segment or parent chunk can be
 * disabled, carries its keywords and who created and last changed it. A child chunk records how it
 * was made (`automatic` by indexing, `customized` by the API). Existing rows are enabled.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  for (const table of ['segments', 'parent_chunks']) {
    await db.schema.alterTable(table).addColumn('enabled', 'integer', (c) => c.notNull().defaultTo(1)).execute();
    await db.schema.alterTable(table).addColumn('disabled_at', 'bigint').execute();
    await db.schema.alterTable(table).addColumn('disabled_by', 'text').execute();
    await db.schema.alterTable(table).addColumn('keywords', 'text').execute();
    await db.schema.alterTable(table).addColumn('created_by', 'text').execute();
    await db.schema.alterTable(table).addColumn('updated_at', 'bigint').execute();
    await db.schema.alterTable(table).addColumn('updated_by', 'text').execute();
  }
  await db.schema.alterTable('segments').addColumn('chunk_type', 'text').execute();
}
