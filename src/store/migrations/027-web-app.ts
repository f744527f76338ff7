import { sql, type Kysely } from 'kysely';
import { newSiteCode, siteSettingsFromDsl } from '../../apps/site-settings.js';
import type { DslDocument } from '../../apps/dsl.js';

/**
 * Every app's web app (Dify's `sites`): a unique 16-character code, enabled by default, and the
 * site's settings. Existing apps get theirs here, their settings read from their DSL's `app` block.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('sites')
    .addColumn('app_id', 'text', (c) => c.primaryKey())
    .addColumn('code', 'text', (c) => c.notNull().unique())
    .addColumn('enabled', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('settings', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  const apps = await sql<{ id: string; dsl: string; created_at: number | string }>`select id, dsl, created_at from apps`.execute(db);
  for (const a of apps.rows) {
    let doc: Pick<DslDocument, 'app'>;
    try {
      doc = JSON.parse(a.dsl) as DslDocument;
    } catch {
      doc = { app: { mode: 'workflow', name: '' } };
    }
    const settings = JSON.stringify(siteSettingsFromDsl(doc));
    const at = Number(a.created_at);
    await sql`insert into sites (app_id, code, enabled, settings, created_at, updated_at) values (${a.id}, ${newSiteCode()}, 1, ${settings}, ${at}, ${at})`.execute(db);
  }
  // Dify's `pinned_conversations` and `saved_messages`: an end user's pins and saved answers in the web app.
  await db.schema
    .createTable('pinned_conversations')
    .addColumn('app_id', 'text', (c) => c.notNull())
    .addColumn('end_user_id', 'text', (c) => c.notNull())
    .addColumn('conversation_id', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('pinned_conversations_pk', ['end_user_id', 'conversation_id'])
    .execute();
  await db.schema.createIndex('pinned_conversations_conversation').on('pinned_conversations').column('conversation_id').execute();
  await db.schema
    .createTable('saved_messages')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('app_id', 'text', (c) => c.notNull())
    .addColumn('end_user_id', 'text', (c) => c.notNull())
    .addColumn('message_id', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('saved_messages_owner').on('saved_messages').columns(['end_user_id', 'message_id']).unique().execute();
  await db.schema.createIndex('saved_messages_message').on('saved_messages').column('message_id').execute();
}
