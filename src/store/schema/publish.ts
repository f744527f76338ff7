/** An app published as an MCP server (migration 029). */
export interface AppMcpServerTable {
  id: string;
  app_id: string;
  /** The code in the server's URL, `/mcp/server/{server_code}/mcp`. */
  server_code: string;
  /** `active` or `inactive`. */
  status: string;
  description: string;
  /** JSON: input variable → its description in the tool's input schema. */
  parameters: string;
  created_at: number;
  updated_at: number;
}
