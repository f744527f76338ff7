import { ConfigError, positiveIntSetting as positiveInt } from '../config-error.js';
import type { ToolProviderSettings } from './tool.js';
import { readMcpServers, type McpServerConfig } from './mcp/mcp-config.js';
import { readApiTools, type ApiToolProviderConfig } from './openapi/api-tool-config.js';

/** The built-in providers that take settings, and the variables they read. */
export const TOOL_PROVIDER_SETTINGS = {
  jina: ['JINA_API_KEY', 'JINA_BASE_URL', 'JINA_SEARCH_BASE_URL'],
  tavily: ['TAVILY_API_KEY', 'TAVILY_BASE_URL'],
  searxng: ['SEARXNG_BASE_URL'],
  duckduckgo: ['DUCKDUCKGO_BASE_URL'],
  wikipedia: ['WIKIPEDIA_BASE_URL'],
  // read by the knowledge pipeline's website-crawl datasource (src/knowledge/pipeline/crawlers.ts), not by a tool
  firecrawl: ['FIRECRAWL_API_KEY', 'FIRECRAWL_BASE_URL'],
} as const;
export type SettingsProvider = keyof typeof TOOL_PROVIDER_SETTINGS;

export interface ToolsConfig {
  /** `TOOL_REQUEST_TIMEOUT`, seconds (default 60). */
  readonly timeoutSeconds: number;
  /** `TOOL_RESPONSE_MAX_SIZE`, bytes (default 5 MiB). */
  readonly maxResponseBytes: number;
  /** Settings by provider name: `NAME_API_KEY` / `NAME_BASE_URL`, else `tools.NAME.api_key` / `base_url` in dovetail.yaml. */
  readonly providers: Readonly<Record<string, ToolProviderSettings & { readonly searchBaseUrl?: string | undefined }>>;
  /** `WORKFLOW_CALL_MAX_DEPTH`: how deep workflow tools may call workflows (Dify's default 5). */
  readonly workflowCallMaxDepth: number;
  /** MCP servers (`mcp.servers` in dovetail.yaml). */
  readonly mcpServers?: readonly McpServerConfig[];
  /** Custom OpenAPI tool providers (`api_tools` in dovetail.yaml). */
  readonly apiTools?: readonly ApiToolProviderConfig[];
}

type Env = Record<string, string | undefined>;


function url(value: unknown, key: string): string | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value !== 'string' || !/^https?:\/\/[^\s]+$/.test(value)) throw new ConfigError(`${key} must be an http(s) URL, got "${String(value)}"`);
  return value;
}

/** Reads the tool settings from env and the `tools:` section of dovetail.yaml; throws ConfigError naming a bad key. */
export function readToolsConfig(env: Env, file: Record<string, unknown>, configDir = '.'): ToolsConfig {
  const section = file.tools ?? {};
  if (typeof section !== 'object' || section === null || Array.isArray(section)) throw new ConfigError('tools must be a mapping of provider name to settings');
  const fromFile = section as Record<string, unknown>;
  const providers: Record<string, ToolProviderSettings & { searchBaseUrl?: string | undefined }> = {};
  for (const name of Object.keys(TOOL_PROVIDER_SETTINGS) as SettingsProvider[]) {
    const entry = fromFile[name] ?? {};
    if (typeof entry !== 'object' || entry === null) throw new ConfigError(`tools.${name} must be a mapping (api_key, base_url)`);
    const f = entry as Record<string, unknown>;
    const up = name.toUpperCase();
    const apiKey = env[`${up}_API_KEY`] || (typeof f.api_key === 'string' && f.api_key ? f.api_key : undefined);
    providers[name] = {
      apiKey,
      baseUrl: url(env[`${up}_BASE_URL`] || f.base_url, env[`${up}_BASE_URL`] ? `${up}_BASE_URL` : `tools.${name}.base_url`),
      ...(name === 'jina' ? { searchBaseUrl: url(env.JINA_SEARCH_BASE_URL || f.search_base_url, 'JINA_SEARCH_BASE_URL') } : {}),
    };
  }
  const timeoutSeconds = positiveInt(env, file, 'TOOL_REQUEST_TIMEOUT', 60);
  return {
    timeoutSeconds,
    maxResponseBytes: positiveInt(env, file, 'TOOL_RESPONSE_MAX_SIZE', 5 * 1024 * 1024),
    providers,
    workflowCallMaxDepth: positiveInt(env, file, 'WORKFLOW_CALL_MAX_DEPTH', 5),
    mcpServers: readMcpServers(env, file, timeoutSeconds),
    apiTools: readApiTools(file, configDir),
  };
}
