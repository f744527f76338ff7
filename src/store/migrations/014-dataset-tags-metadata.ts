import type { Kysely } from 'kysely';

/**
 * Knowledge tags (`tags`, `tag_bindings`: a tag of the workspace bound to a dataset) and document
 * metadata (`dataset_metadata`: a dataset's custom fields; `document_metadata_values`: one value of
 * one field on one document, which is also Dify's metadata binding). A dataset records whether its
 * built-in fields are enabled; built-in values are computed from the document when read.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('tags')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('created_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('tags_workspace_type_name').on('tags').columns(['workspace_id', 'type', 'name']).unique().execute();

  await db.schema
    .createTable('tag_bindings')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('tag_id', 'text', (c) => c.notNull())
    .addColumn('target_id', 'text', (c) => c.notNull())
    .addColumn('created_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('tag_bindings_tag_target').on('tag_bindings').columns(['tag_id', 'target_id']).unique().execute();
  await db.schema.createIndex('tag_bindings_target').on('tag_bindings').columns(['target_id']).execute();

  await db.schema
    .createTable('dataset_metadata')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('dataset_id', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('created_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_by', 'text')
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('dataset_metadata_dataset_name').on('dataset_metadata').columns(['dataset_id', 'name']).unique().execute();

  await db.schema
    .createTable('document_metadata_values')
    .addColumn('document_id', 'text', (c) => c.notNull())
    .addColumn('metadata_id', 'text', (c) => c.notNull())
    .addColumn('dataset_id', 'text', (c) => c.notNull())
    .addColumn('value', 'text', (c) => c.notNull())
    .addColumn('created_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('document_metadata_values_pk', ['document_id', 'metadata_id'])
    .execute();
  await db.schema.createIndex('document_metadata_values_metadata').on('document_metadata_values').columns(['metadata_id']).execute();
  await db.schema.createIndex('document_metadata_values_dataset').on('document_metadata_values').columns(['dataset_id']).execute();

  await db.schema.alterTable('datasets').addColumn('built_in_field_enabled', 'integer', (c) => c.notNull().defaultTo(0)).execute();
}
