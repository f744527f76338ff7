import { ConfigError } from '../../config-error.js';

export const MCP_TRANSPORTS = ['streamable-http', 'sse', 'stdio'] as const;
export type McpTransport = (typeof MCP_TRANSPORTS)[number];

/** One MCP server from `mcp.servers.NAME` in dovetail.yaml. */
export interface McpServerConfig {
  readonly name: string;
  readonly transport: McpTransport;
  /** `streamable-http` / `sse`: the endpoint. */
  readonly url?: string;
  /** Sent with every HTTP request (an `Authorization` header, say). */
  readonly headers: Readonly<Record<string, string>>;
  /** `stdio`: the program and its arguments. */
  readonly command?: string;
  readonly args: readonly string[];
  /** Seconds one request (list, call) may take; default `TOOL_REQUEST_TIMEOUT`. */
  readonly timeoutSeconds: number;
  /** Dify provider ids (`provider_id` of exported nodes) that mean this server, besides its name. */
  readonly providerIds: readonly string[];
}

type Env = Record<string, string | undefined>;

const strings = (v: unknown, key: string): string[] => {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) throw new ConfigError(`${key} must be a list of strings`);
  return v as string[];
};

/**
 * Reads `mcp.servers` of dovetail.yaml. `stdio` servers start processes, so they are refused
 * unless `MCP_STDIO_ENABLED=true`; the error names the setting.
 */
export function readMcpServers(env: Env, file: Record<string, unknown>, defaultTimeoutSeconds: number): McpServerConfig[] {
  const mcp = file.mcp;
  if (mcp === undefined || mcp === null) return [];
  if (typeof mcp !== 'object' || Array.isArray(mcp)) throw new ConfigError('mcp must be a mapping with servers');
  const servers = (mcp as Record<string, unknown>).servers ?? {};
  if (typeof servers !== 'object' || servers === null || Array.isArray(servers)) throw new ConfigError('mcp.servers must be a mapping of server name to settings');
  const stdioEnabled = (env.MCP_STDIO_ENABLED ?? String((file as Record<string, unknown>).MCP_STDIO_ENABLED ?? 'false')) === 'true';
  return Object.entries(servers as Record<string, unknown>).map(([name, raw]) => {
    const key = `mcp.servers.${name}`;
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new ConfigError(`${key} must be a mapping (url or command, transport)`);
    const s = raw as Record<string, unknown>;
    const transport = (s.transport ?? (typeof s.command === 'string' ? 'stdio' : 'streamable-http')) as McpTransport;
    if (!(MCP_TRANSPORTS as readonly string[]).includes(transport)) throw new ConfigError(`${key}.transport must be one of ${MCP_TRANSPORTS.join(', ')}, got "${String(s.transport)}"`);
    if (transport === 'stdio') {
      if (!stdioEnabled) throw new ConfigError(`${key}: stdio MCP servers start processes on this machine; set MCP_STDIO_ENABLED=true to allow them`);
      if (typeof s.command !== 'string' || s.command === '') throw new ConfigError(`${key}.command must be a program to start`);
    } else if (typeof s.url !== 'string' || !/^https?:\/\/\S+$/.test(s.url)) {
      throw new ConfigError(`${key}.url must be an http(s) URL`);
    }
    const headers = s.headers ?? {};
    if (typeof headers !== 'object' || headers === null || Array.isArray(headers) || !Object.values(headers).every((v) => typeof v === 'string')) throw new ConfigError(`${key}.headers must be a mapping of header name to string`);
    const timeout = s.timeout ?? defaultTimeoutSeconds;
    if (typeof timeout !== 'number' || !(timeout > 0)) throw new ConfigError(`${key}.timeout must be a positive number of seconds`);
    return {
      name,
      transport,
      ...(typeof s.url === 'string' ? { url: s.url } : {}),
      headers: headers as Record<string, string>,
      ...(typeof s.command === 'string' ? { command: s.command } : {}),
      args: strings(s.args, `${key}.args`),
      timeoutSeconds: timeout,
      providerIds: strings(s.provider_ids, `${key}.provider_ids`),
    };
  });
}
