import { sql, type Kysely } from 'kysely';

/**
 * App graph versions: `app update` stores a new version of the DSL under the same app id and keys;
 * a run records the version it started with and resumes on it. Existing apps become version 1.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('apps').addColumn('version', 'integer', (c) => c.notNull().defaultTo(1)).execute();
  await db.schema
    .createTable('app_versions')
    .addColumn('app_id', 'text', (c) => c.notNull())
    .addColumn('version', 'integer', (c) => c.notNull())
    .addColumn('dsl', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('app_versions_pk', ['app_id', 'version'])
    .execute();
  await sql`insert into app_versions (app_id, version, dsl, created_at) select id, 1, dsl, created_at from apps`.execute(db);
  await db.schema.alterTable('workflow_runs').addColumn('app_version', 'integer', (c) => c.notNull().defaultTo(1)).execute();
}
