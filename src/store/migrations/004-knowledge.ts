import type { Kysely } from 'kysely';

/**
 * Knowledge bases and the generic durable job queue. Engine-specific index structures (SQLite FTS5
 * and sqlite-vec tables, the PostgreSQL GIN expression index) are created idempotently by the
 * index adapters at boot, because they depend on loaded extensions and on the embedding size.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('jobs')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull())
    .addColumn('max_attempts', 'integer', (c) => c.notNull())
    .addColumn('run_at', 'bigint', (c) => c.notNull())
    .addColumn('lease_until', 'bigint')
    .addColumn('locked_by', 'text')
    .addColumn('last_error', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('jobs_status_run_at').on('jobs').columns(['status', 'run_at']).execute();

  await db.schema
    .createTable('datasets')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull())
    .addColumn('permission', 'text', (c) => c.notNull())
    .addColumn('indexing_technique', 'text')
    .addColumn('embedding_model', 'text')
    .addColumn('embedding_model_provider', 'text')
    .addColumn('retrieval_model', 'text', (c) => c.notNull())
    .addColumn('index_version', 'integer', (c) => c.notNull())
    .addColumn('created_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('datasets_workspace').on('datasets').columns(['workspace_id', 'created_at']).execute();

  await db.schema
    .createTable('documents')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('dataset_id', 'text', (c) => c.notNull())
    .addColumn('position', 'integer', (c) => c.notNull())
    .addColumn('data_source_type', 'text', (c) => c.notNull())
    .addColumn('upload_file_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('created_from', 'text', (c) => c.notNull())
    .addColumn('created_by', 'text', (c) => c.notNull())
    .addColumn('process_rule_id', 'text', (c) => c.notNull())
    .addColumn('process_rule', 'text', (c) => c.notNull())
    .addColumn('doc_form', 'text', (c) => c.notNull())
    .addColumn('doc_language', 'text', (c) => c.notNull())
    .addColumn('batch', 'text', (c) => c.notNull())
    .addColumn('tokens', 'integer', (c) => c.notNull())
    .addColumn('word_count', 'integer', (c) => c.notNull())
    .addColumn('indexing_status', 'text', (c) => c.notNull())
    .addColumn('error', 'text')
    .addColumn('enabled', 'integer', (c) => c.notNull())
    .addColumn('archived', 'integer', (c) => c.notNull())
    .addColumn('hit_count', 'integer', (c) => c.notNull())
    .addColumn('active_generation', 'integer', (c) => c.notNull())
    .addColumn('latest_generation', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('documents_dataset').on('documents').columns(['dataset_id', 'position']).execute();

  await db.schema
    .createTable('indexing_runs')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('batch', 'text', (c) => c.notNull())
    .addColumn('dataset_id', 'text', (c) => c.notNull())
    .addColumn('document_id', 'text', (c) => c.notNull())
    .addColumn('generation', 'integer', (c) => c.notNull())
    .addColumn('upload_file_id', 'text', (c) => c.notNull())
    .addColumn('process_rule', 'text', (c) => c.notNull())
    .addColumn('indexing_technique', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('error', 'text')
    .addColumn('processing_started_at', 'bigint')
    .addColumn('parsing_completed_at', 'bigint')
    .addColumn('cleaning_completed_at', 'bigint')
    .addColumn('splitting_completed_at', 'bigint')
    .addColumn('completed_at', 'bigint')
    .addColumn('paused_at', 'bigint')
    .addColumn('stopped_at', 'bigint')
    .addColumn('total_segments', 'integer', (c) => c.notNull())
    .addColumn('completed_segments', 'integer', (c) => c.notNull())
    .addColumn('tokens', 'integer', (c) => c.notNull())
    .addColumn('word_count', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('indexing_runs_batch').on('indexing_runs').columns(['dataset_id', 'batch']).execute();
  await db.schema.createIndex('indexing_runs_document').on('indexing_runs').columns(['document_id', 'generation']).execute();

  await db.schema
    .createTable('segments')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('dataset_id', 'text', (c) => c.notNull())
    .addColumn('document_id', 'text', (c) => c.notNull())
    .addColumn('generation', 'integer', (c) => c.notNull())
    .addColumn('position', 'integer', (c) => c.notNull())
    .addColumn('content', 'text', (c) => c.notNull())
    .addColumn('word_count', 'integer', (c) => c.notNull())
    .addColumn('tokens', 'integer', (c) => c.notNull())
    .addColumn('hash', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('hit_count', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('completed_at', 'bigint')
    .execute();
  await db.schema.createIndex('segments_document').on('segments').columns(['document_id', 'generation', 'position']).execute();
  await db.schema.createIndex('segments_dataset').on('segments').columns(['dataset_id']).execute();

  /** Vectors as base64 little-endian float32: the portable copy and the exact-search source. */
  await db.schema
    .createTable('segment_embeddings')
    .addColumn('segment_id', 'text', (c) => c.primaryKey())
    .addColumn('dataset_id', 'text', (c) => c.notNull())
    .addColumn('document_id', 'text', (c) => c.notNull())
    .addColumn('model', 'text', (c) => c.notNull())
    .addColumn('dims', 'integer', (c) => c.notNull())
    .addColumn('embedding', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('segment_embeddings_dataset').on('segment_embeddings').columns(['dataset_id']).execute();
}
