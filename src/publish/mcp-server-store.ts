import { randomInt } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { AppMcpServerTable, Database } from '../store/schema.js';
import { newId } from '../infra/ids.js';

/** An app's MCP server settings. */
export interface McpServer {
  readonly id: string;
  readonly appId: string;
  readonly serverCode: string;
  readonly status: 'active' | 'inactive';
  readonly description: string;
  /** Input variable → its description in the tool's input schema. */
  readonly parameters: Readonly<Record<string, string>>;
  readonly createdAt: number;
  readonly updatedAt: number;
}

const CODE_CHARS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** A server code as Dify's (`generate_string(16)`): 16 letters and digits, from the CSPRNG (~95 bits). */
export function newServerCode(): string {
  let code = '';
  for (let i = 0; i < 16; i++) code += CODE_CHARS[randomInt(CODE_CHARS.length)];
  return code;
}

function toServer(r: AppMcpServerTable): McpServer {
  return {
    id: r.id,
    appId: r.app_id,
    serverCode: r.server_code,
    status: r.status === 'active' ? 'active' : 'inactive',
    description: r.description,
    parameters: JSON.parse(r.parameters) as Record<string, string>,
    createdAt: Number(r.created_at),
    updatedAt: Number(r.updated_at),
  };
}

/** The `app_mcp_servers` table. */
export class McpServerStore {
  readonly #db: Kysely<Database>;

  constructor(db: Kysely<Database>) {
    this.#db = db;
  }

  async byCode(code: string): Promise<McpServer | undefined> {
    const row = await this.#db.selectFrom('app_mcp_servers').selectAll().where('server_code', '=', code).executeTakeFirst();
    return row ? toServer(row) : undefined;
  }

  async byApp(appId: string): Promise<McpServer | undefined> {
    const row = await this.#db.selectFrom('app_mcp_servers').selectAll().where('app_id', '=', appId).executeTakeFirst();
    return row ? toServer(row) : undefined;
  }

  /** Creates the app's server (inactive, a new code) or changes the fields given. */
  async save(appId: string, change: { status?: 'active' | 'inactive'; description?: string; parameters?: Record<string, string>; rotate?: boolean }, at: number): Promise<McpServer> {
    const existing = await this.byApp(appId);
    if (!existing) {
      await this.#db
        .insertInto('app_mcp_servers')
        .values({
          id: newId(),
          app_id: appId,
          server_code: newServerCode(),
          status: change.status ?? 'inactive',
          description: change.description ?? '',
          parameters: JSON.stringify(change.parameters ?? {}),
          created_at: at,
          updated_at: at,
        })
        .execute();
    } else {
      await this.#db
        .updateTable('app_mcp_servers')
        .set({
          status: change.status ?? existing.status,
          description: change.description ?? existing.description,
          parameters: JSON.stringify({ ...existing.parameters, ...change.parameters }),
          ...(change.rotate ? { server_code: newServerCode() } : {}),
          updated_at: at,
        })
        .where('app_id', '=', appId)
        .execute();
    }
    return (await this.byApp(appId))!;
  }

  /** Removes the app's server (the app is deleted: its code answers 404 and is not kept). */
  async deleteApp(appId: string): Promise<void> {
    await this.#db.deleteFrom('app_mcp_servers').where('app_id', '=', appId).execute();
  }
}
