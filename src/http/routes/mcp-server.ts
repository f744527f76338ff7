import type { FastifyPluginAsync } from 'fastify';
import { Type, type Static } from '@sinclair/typebox';
import type { Runtime } from '../../runtime.js';
import { notFound } from '../../infra/errors.js';
import { toolInputSchema, toolName } from '../../publish/mcp-tool.js';
import { requireJson } from '../json-body.js';

/** The runtime members these routes use (server.ts hands them nothing else). */
export type McpRouteDeps = Pick<Runtime, 'mcpServers'>;

const Params = Type.Object({ server_code: Type.String() });

/** The parts of the MCP SDK this route uses. */
interface McpServerSdk {
  readonly Server: typeof import('@modelcontextprotocol/sdk/server/index.js').Server;
  readonly StreamableHTTPServerTransport: typeof import('@modelcontextprotocol/sdk/server/streamableHttp.js').StreamableHTTPServerTransport;
  readonly types: Pick<typeof import('@modelcontextprotocol/sdk/types.js'), 'CallToolRequestSchema' | 'ListToolsRequestSchema'>;
}

let sdk: Promise<McpServerSdk> | undefined;

/** The MCP SDK's server side (with zod and its own HTTP layer, ~180 modules), loaded with the first MCP request, not at start (docs/speed.md, "Start-up"). */
function loadMcpServerSdk(): Promise<McpServerSdk> {
  sdk ??= Promise.all([
    import('@modelcontextprotocol/sdk/server/index.js'),
    import('@modelcontextprotocol/sdk/server/streamableHttp.js'),
    import('@modelcontextprotocol/sdk/types.js'),
  ]).then(([server, http, types]) => ({ Server: server.Server, StreamableHTTPServerTransport: http.StreamableHTTPServerTransport, types }));
  return sdk;
}

/** The package version the server reports in `serverInfo`. */
const VERSION = '0.1.0';

/**
 * `POST /mcp/server/{server_code}/mcp` (Dify's "publish as MCP"): MCP's streamable HTTP transport,
 * stateless (no session: every POST carries its own JSON-RPC message, answered as JSON), by the
 * MCP SDK's own server and transport. The app is one tool. A server that does not exist or is not
 * enabled answers 404 (Dify's `{code, message, status}`).
 */
export const mcpServerRoutes: FastifyPluginAsync<{ runtime: McpRouteDeps }> = async (app, { runtime }) => {
  const servers = runtime.mcpServers;

  app.post<{ Params: Static<typeof Params> }>('/mcp/server/:server_code/mcp', { preValidation: requireJson, schema: { params: Params } }, async (request, reply) => {
    const found = await servers.active(request.params.server_code);
    if (!found) throw notFound('Server Not Found');
    const { server: settings, app: a } = found;
    const name = toolName(a.name);
    const { Server, StreamableHTTPServerTransport, types } = await loadMcpServerSdk();
    const { CallToolRequestSchema, ListToolsRequestSchema } = types;
    const mcp = new Server({ name: 'Dovetail', version: VERSION }, { capabilities: { tools: { listChanged: false } }, instructions: settings.description });
    mcp.setRequestHandler(ListToolsRequestSchema, async () => ({
      tools: [{ name, description: settings.description, inputSchema: toolInputSchema(a, settings.parameters) }],
    }));
    mcp.setRequestHandler(CallToolRequestSchema, async (call) => {
      if (call.params.name !== name) return { isError: true, content: [{ type: 'text' as const, text: `Unknown tool "${call.params.name}"; this server's one tool is "${name}".` }] };
      const answer = await servers.call(settings, a, call.params.arguments ?? {});
      if (answer.error !== undefined) return { isError: true, content: [{ type: 'text' as const, text: answer.error }] };
      return { content: [{ type: 'text' as const, text: answer.text }] };
    });
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    await mcp.connect(transport);
    reply.hijack();
    reply.raw.once('close', () => void mcp.close());
    await transport.handleRequest(request.raw, reply.raw, request.body);
  });
};
