import type { Kysely } from 'kysely';

/**
 * Parent-child chunking (`doc_form: hierarchical_model`): parent chunks are what retrieval
 * returns; their children are ordinary `segments` rows (indexed and searched like any segment)
 * that point at their parent.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('parent_chunks')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('dataset_id', 'text', (c) => c.notNull())
    .addColumn('document_id', 'text', (c) => c.notNull())
    .addColumn('generation', 'integer', (c) => c.notNull())
    .addColumn('position', 'integer', (c) => c.notNull())
    .addColumn('content', 'text', (c) => c.notNull())
    .addColumn('word_count', 'integer', (c) => c.notNull())
    .addColumn('tokens', 'integer', (c) => c.notNull())
    .addColumn('hash', 'text', (c) => c.notNull())
    .addColumn('hit_count', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('completed_at', 'bigint')
    .execute();
  await db.schema.createIndex('parent_chunks_document').on('parent_chunks').columns(['document_id', 'generation', 'position']).execute();
  await db.schema.alterTable('segments').addColumn('parent_id', 'text').execute();
}
