import type { McpServer } from '../publish/mcp-server-store.js';

/** What `app mcp` and `app show` print about an app's MCP server. */
export function mcpServerView(server: McpServer | undefined, baseUrl: string): { status: string; server_code: string | null; url: string | null; description: string; parameters: Record<string, string> } {
  if (!server) return { status: 'inactive', server_code: null, url: null, description: '', parameters: {} };
  return { status: server.status, server_code: server.serverCode, url: `${baseUrl}/mcp/server/${server.serverCode}/mcp`, description: server.description, parameters: { ...server.parameters } };
}
