import { PostgresAdapter, type Kysely } from 'kysely';

/**
 * App annotations (`/apps/annotations…`, `/apps/annotation-reply…`): the question/answer pairs,
 * the app's reply setting (present = enabled), the annotations' embeddings, every hit, the
 * enable/disable jobs, and the annotation a message was answered with.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  // `seq` orders annotations created in the same millisecond (ids are random UUIDs).
  const pg = db.getExecutor().adapter instanceof PostgresAdapter;
  await db.schema
    .createTable('app_annotations')
    .addColumn('seq', pg ? 'bigserial' : 'integer', (c) => (pg ? c.primaryKey() : c.primaryKey().autoIncrement()))
    .addColumn('id', 'text', (c) => c.notNull().unique())
    .addColumn('app_id', 'text', (c) => c.notNull())
    .addColumn('question', 'text', (c) => c.notNull())
    .addColumn('content', 'text', (c) => c.notNull())
    .addColumn('hit_count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('account_id', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('app_annotations_app_created').on('app_annotations').columns(['app_id', 'created_at', 'seq']).execute();

  await db.schema
    .createTable('app_annotation_settings')
    .addColumn('app_id', 'text', (c) => c.primaryKey())
    .addColumn('score_threshold', 'double precision', (c) => c.notNull())
    .addColumn('embedding_provider', 'text', (c) => c.notNull())
    .addColumn('embedding_model', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('annotation_embeddings')
    .addColumn('annotation_id', 'text', (c) => c.primaryKey())
    .addColumn('app_id', 'text', (c) => c.notNull())
    .addColumn('model', 'text', (c) => c.notNull())
    .addColumn('question', 'text', (c) => c.notNull())
    .addColumn('dims', 'integer', (c) => c.notNull())
    .addColumn('embedding', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('annotation_embeddings_app').on('annotation_embeddings').column('app_id').execute();

  await db.schema
    .createTable('annotation_hit_histories')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('app_id', 'text', (c) => c.notNull())
    .addColumn('annotation_id', 'text', (c) => c.notNull())
    .addColumn('message_id', 'text', (c) => c.notNull())
    .addColumn('end_user_id', 'text', (c) => c.notNull())
    .addColumn('question', 'text', (c) => c.notNull())
    .addColumn('source', 'text', (c) => c.notNull())
    .addColumn('score', 'double precision', (c) => c.notNull())
    .addColumn('annotation_question', 'text', (c) => c.notNull())
    .addColumn('annotation_content', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('annotation_hit_histories_annotation').on('annotation_hit_histories').column('annotation_id').execute();

  await db.schema
    .createTable('annotation_jobs')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('app_id', 'text', (c) => c.notNull())
    .addColumn('action', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('error_msg', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('score_threshold', 'double precision', (c) => c.notNull())
    .addColumn('embedding_provider', 'text', (c) => c.notNull())
    .addColumn('embedding_model', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('annotation_jobs_app').on('annotation_jobs').columns(['app_id', 'action', 'status']).execute();

  await db.schema.alterTable('messages').addColumn('annotation_id', 'text').execute();
}
