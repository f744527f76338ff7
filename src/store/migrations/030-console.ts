import { randomUUID } from 'node:crypto';
import { sql, type Kysely } from 'kysely';

/**
 * The console (issue #44): accounts gain a password hash (scrypt, its salt and parameters in the
 * string; null = cannot log in until `dovetail account set-password`), a role (owner | admin |
 * editor | viewer) and the workspace they belong to; the console's sessions are kept server-side,
 * found by the SHA-256 of their cookie token (the token itself is never stored).
 *
 * Existing accounts (made by `account create` for feedback and Human Input mail) join the first
 * workspace (created here when there is none yet); the oldest of them becomes its `owner`, the
 * others `editor` (docs/decisions.md, "Existing accounts in the console"). None has a password.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('accounts').addColumn('password_hash', 'text').execute();
  await db.schema.alterTable('accounts').addColumn('role', 'text', (c) => c.notNull().defaultTo('editor')).execute();
  await db.schema.alterTable('accounts').addColumn('workspace_id', 'text', (c) => c.notNull().defaultTo('')).execute();

  const accounts = await sql<{ id: string }>`select id from accounts order by created_at, id`.execute(db);
  if (accounts.rows.length > 0) {
    let ws = (await sql<{ id: string }>`select id from workspaces order by created_at limit 1`.execute(db)).rows[0]?.id;
    if (ws === undefined) {
      ws = randomUUID();
      await sql`insert into workspaces (id, name, created_at) values (${ws}, ${'Default workspace'}, ${Date.now()})`.execute(db);
    }
    await sql`update accounts set workspace_id = ${ws}`.execute(db);
    await sql`update accounts set role = 'owner' where id = ${accounts.rows[0]!.id}`.execute(db);
  }
  await db.schema.createIndex('accounts_workspace').on('accounts').column('workspace_id').execute();

  await db.schema
    .createTable('console_sessions')
    .addColumn('token_hash', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('csrf_token', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('console_sessions_account').on('console_sessions').column('account_id').execute();
  await db.schema.createIndex('console_sessions_expires').on('console_sessions').column('expires_at').execute();
}
