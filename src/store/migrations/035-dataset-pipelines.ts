import type { Kysely } from 'kysely';

/**
 * Knowledge pipelines (issue 43; Dify's `pipelines` and the dataset's `runtime_mode: rag_pipeline`
 * and `pipeline_id`): one row per dataset that is filled by a pipeline.
 * - `id`: the pipeline id (the dataset object's `pipeline_id`).
 * - `dsl`: the `kind: rag_pipeline` YAML as imported (export gives it back).
 * - `graph`: the parsed, upgraded document as JSON (what runs).
 * The dataset's `runtime_mode` is `rag_pipeline` exactly when it has a row here.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('dataset_pipelines')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('dataset_id', 'text', (c) => c.notNull().unique())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('dsl', 'text', (c) => c.notNull())
    .addColumn('graph', 'text', (c) => c.notNull())
    .addColumn('created_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
}
