import type { Kysely } from 'kysely';

/** Human Input forms and their deliveries. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('human_input_forms')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('app_id', 'text', (c) => c.notNull())
    .addColumn('workflow_run_id', 'text', (c) => c.notNull())
    .addColumn('node_id', 'text', (c) => c.notNull())
    .addColumn('end_user_id', 'text', (c) => c.notNull())
    .addColumn('definition', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('token', 'text', (c) => c.unique())
    .addColumn('expiration_time', 'bigint', (c) => c.notNull())
    .addColumn('global_deadline', 'bigint')
    .addColumn('selected_action_id', 'text')
    .addColumn('submitted_data', 'text')
    .addColumn('submitted_at', 'bigint')
    .addColumn('submission_end_user_id', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addUniqueConstraint('human_input_forms_run_node', ['workflow_run_id', 'node_id'])
    .execute();
  await db.schema.createIndex('human_input_forms_waiting').on('human_input_forms').columns(['status', 'expiration_time']).execute();
  await db.schema
    .createTable('human_input_deliveries')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('form_id', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('config', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
}
