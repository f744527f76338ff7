import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ToolError, type Tool, type ToolMessage, type ToolParameter, type ToolParameterType } from '../tool.js';
import type { McpServerConfig } from './mcp-config.js';

/** The subset of an MCP tool listing we read. */
interface McpToolInfo {
  readonly name: string;
  readonly description?: string;
  readonly inputSchema: { readonly properties?: Record<string, unknown>; readonly required?: readonly string[] };
}

const TYPES: Readonly<Record<string, ToolParameterType>> = { string: 'string', number: 'number', integer: 'number', boolean: 'boolean', array: 'array', object: 'object' };

function parametersOf(info: McpToolInfo): ToolParameter[] {
  const required = new Set(info.inputSchema.required ?? []);
  return Object.entries(info.inputSchema.properties ?? {}).map(([name, raw]) => {
    const p = (typeof raw === 'object' && raw !== null ? raw : {}) as { type?: unknown; description?: unknown; enum?: unknown; default?: unknown };
    const options = Array.isArray(p.enum) ? p.enum.map(String) : undefined;
    return {
      name,
      type: options ? 'select' : (TYPES[String(p.type)] ?? 'string'),
      form: 'llm',
      required: required.has(name),
      ...(p.default !== undefined ? { default: p.default } : {}),
      ...(options ? { options } : {}),
      ...(typeof p.description === 'string' ? { llmDescription: p.description } : {}),
    };
  });
}

/** An MCP call's result as tool messages: text as text, structured content as json; `isError` fails. */
function messagesOf(tool: string, result: Record<string, unknown>): ToolMessage[] {
  const out: ToolMessage[] = [];
  const content = Array.isArray(result.content) ? (result.content as Record<string, unknown>[]) : [];
  const texts: string[] = [];
  for (const c of content) {
    if (c.type === 'text' && typeof c.text === 'string') texts.push(c.text);
    else if (c.type === 'resource' && typeof c.resource === 'object' && c.resource !== null) {
      const r = c.resource as { text?: unknown; uri?: unknown };
      texts.push(typeof r.text === 'string' ? r.text : String(r.uri ?? ''));
    } else if (c.type === 'resource_link' && typeof c.uri === 'string') out.push({ type: 'link', url: c.uri });
    else if ((c.type === 'image' || c.type === 'audio') && typeof c.data === 'string') {
      out.push({ type: 'blob', data: Buffer.from(c.data, 'base64'), mimeType: String(c.mimeType ?? 'application/octet-stream'), filename: `${tool}.${String(c.mimeType ?? '').split('/')[1] ?? 'bin'}` });
    }
  }
  if (result.isError === true) throw new ToolError(`MCP tool "${tool}" reported an error: ${texts.join('\n') || 'no details'}`);
  if (texts.length > 0) out.unshift({ type: 'text', text: texts.join('\n') });
  if (typeof result.structuredContent === 'object' && result.structuredContent !== null) out.push({ type: 'json', json: result.structuredContent as Record<string, unknown> });
  return out;
}

/**
 * One MCP server as a tool provider, through the official SDK client: connected on first use, its
 * tool list read once and cached, each call bounded by the server's timeout and the run's signal.
 * A failed connection is retried on the next use.
 */
export class McpProvider {
  readonly config: McpServerConfig;
  #client: Promise<Client> | undefined;
  #tools: Promise<Tool[]> | undefined;

  constructor(config: McpServerConfig) {
    this.config = config;
  }

  // The SDK (with zod and its transports' dependencies, ~0.3 s of CPU) is loaded on first use, not
  // at every process start.
  async #transport(): Promise<Transport> {
    const c = this.config;
    if (c.transport === 'stdio') {
      const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
      return new StdioClientTransport({ command: c.command!, args: [...c.args], stderr: 'ignore' });
    }
    const requestInit = { headers: { ...c.headers } };
    if (c.transport === 'sse') {
      const { SSEClientTransport } = await import('@modelcontextprotocol/sdk/client/sse.js');
      return new SSEClientTransport(new URL(c.url!), { requestInit });
    }
    const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
    return new StreamableHTTPClientTransport(new URL(c.url!), { requestInit });
  }

  #connect(): Promise<Client> {
    if (!this.#client) {
      this.#client = (async () => {
        const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
        const client = new Client({ name: 'dovetail', version: '1.0.0' });
        await client.connect(await this.#transport(), { timeout: this.config.timeoutSeconds * 1000 });
        return client;
      })();
      this.#client.catch(() => (this.#client = undefined));
    }
    return this.#client;
  }

  /** The server's tools (listed once; a failure is a `ToolError` naming the server). */
  tools(): Promise<Tool[]> {
    if (!this.#tools) {
      this.#tools = (async () => {
        try {
          const client = await this.#connect();
          const listed: McpToolInfo[] = [];
          let cursor: string | undefined;
          // pages of the listing, bounded so a server cannot keep us listing forever
          for (let page = 0; page < 100; page++) {
            const r = await client.listTools(cursor ? { cursor } : undefined, { timeout: this.config.timeoutSeconds * 1000 });
            listed.push(...(r.tools as McpToolInfo[]));
            cursor = r.nextCursor;
            if (!cursor) break;
          }
          return listed.map((t) => this.#tool(t));
        } catch (err) {
          throw new ToolError(`MCP server "${this.config.name}" cannot be reached: ${(err as Error).message}`, 'ToolProviderNotFoundError');
        }
      })();
      this.#tools.catch(() => (this.#tools = undefined));
    }
    return this.#tools;
  }

  #tool(info: McpToolInfo): Tool {
    const timeout = this.config.timeoutSeconds * 1000;
    const server = this.config.name;
    return {
      name: info.name,
      description: info.description ?? '',
      parameters: parametersOf(info),
      inputSchema: info.inputSchema as Record<string, unknown>,
      invoke: async (params, ctx) => {
        const client = await this.#connect();
        let result: Record<string, unknown>;
        try {
          result = (await client.callTool({ name: info.name, arguments: { ...params } }, undefined, { signal: ctx.signal, timeout })) as Record<string, unknown>;
        } catch (err) {
          if (ctx.signal.aborted) throw err;
          throw new ToolError(`MCP server "${server}", tool "${info.name}": ${(err as Error).message}`);
        }
        return messagesOf(info.name, result);
      },
    };
  }

  async close(): Promise<void> {
    const c = this.#client;
    this.#client = undefined;
    this.#tools = undefined;
    if (c) await (await c.catch(() => undefined))?.close().catch(() => undefined);
  }
}
