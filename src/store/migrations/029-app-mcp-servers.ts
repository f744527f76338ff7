import type { Kysely } from 'kysely';

/**
 * Apps published as MCP servers (Dify's `app_mcp_servers`): one row per app once its server is
 * configured, with the server code of its URL (`/mcp/server/{server_code}/mcp`), its status
 * (`active` / `inactive`; inactive as Dify's default), the tool description and per-input
 * parameter descriptions (JSON).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('app_mcp_servers')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('app_id', 'text', (c) => c.notNull().unique())
    .addColumn('server_code', 'text', (c) => c.notNull().unique())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull())
    .addColumn('parameters', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
}
