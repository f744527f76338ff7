import { ToolHttp } from './tool-http.js';
import type { ToolsConfig } from './tool-config.js';
import { ToolError, type Tool, type ToolFiles, type ToolFileValue, type ToolInvokeContext, type ToolMessage, type ToolProvider, type ToolRef, type ToolResolution, type ToolResultMessage, type ToolRuntime } from './tool.js';
import type { WorkflowTools } from './workflow/workflow-tools.js';
import { ApiToolProvider } from './openapi/api-tool-provider.js';
import { McpProvider } from './mcp/mcp-provider.js';
import type { McpServerConfig } from './mcp/mcp-config.js';
import { prepareParameters } from './tool-parameters.js';
import { duckduckgoProvider } from './providers/duckduckgo.js';
import { jinaProvider } from './providers/jina.js';
import { builtinProvider, jsonProcessProvider } from './providers/json-process.js';
import { mathProvider } from './providers/math.js';
import { searxngProvider } from './providers/searxng.js';
import { tavilyProvider } from './providers/tavily.js';
import { timeProvider } from './providers/time.js';
import { webscraperProvider } from './providers/webscraper.js';
import { wikipediaProvider } from './providers/wikipedia.js';

/** The provider types a DSL tool reference may carry that name built-in providers (or plugin ids of built-ins). */
const RUNNABLE_TYPES = ['builtin', 'plugin'] as const;

/** What the registry runs beside the built-in providers and MCP servers. */
export interface ToolRegistryExtras {
  /** Stores the files tools make (`blob` messages); unset: such a tool fails saying so. */
  readonly files?: ToolFiles;
  /** Custom OpenAPI tool providers (`api_tools` of dovetail.yaml). */
  readonly apiProviders?: readonly ApiToolProvider[];
  /** Workflow as tool (built after the run service, hence lazy); unset: `workflow` tools do not resolve. */
  readonly workflows?: () => WorkflowTools | undefined;
}

/** `langgenius/time/time` → `time`; a plain name stays. */
export function providerName(providerId: string): string {
  const m = /^[\w.-]+\/([\w.-]+)\/([\w.-]+)$/.exec(providerId);
  return m ? m[2]! : providerId;
}

/**
 * Every tool this server can run, by Dify's provider and tool names. `resolve` answers either a
 * tool or an error that names the tool, the provider and what to configure.
 */
export class ToolRegistry implements ToolRuntime {
  readonly #providers = new Map<string, ToolProvider>();
  readonly #settings: ToolsConfig['providers'];
  readonly #mcp: McpProvider[];
  readonly #extras: ToolRegistryExtras;

  constructor(providers: readonly ToolProvider[], settings: ToolsConfig['providers'] = {}, mcpServers: readonly McpServerConfig[] = [], extras: ToolRegistryExtras = {}) {
    for (const p of providers) this.#providers.set(p.name, p);
    this.#settings = settings;
    this.#mcp = mcpServers.map((c) => new McpProvider(c));
    this.#extras = extras;
  }

  /** The MCP server a reference names (by server name, or a Dify provider id listed for it). */
  #mcpServer(ref: ToolRef): McpProvider | undefined {
    return this.#mcp.find((m) => m.config.name === ref.providerId || m.config.providerIds.includes(ref.providerId));
  }

  async close(): Promise<void> {
    await Promise.all(this.#mcp.map((m) => m.close()));
  }

  async resolve(ref: ToolRef): Promise<ToolResolution> {
    const checked = await this.check(ref);
    if ('error' in checked || checked.tool) return checked;
    const server = this.#mcpServer(ref)!;
    let tools: Tool[];
    try {
      tools = await server.tools();
    } catch (err) {
      return { error: `tool "${ref.toolName}" of MCP server "${server.config.name}": ${(err as Error).message}`, errorType: 'ToolProviderNotFoundError' };
    }
    const tool = tools.find((t) => t.name === ref.toolName);
    if (!tool) return { error: `tool "${ref.toolName}" of MCP server "${server.config.name}": the server has no such tool (its tools: ${tools.map((t) => t.name).join(', ')})`, errorType: 'ToolNotFoundError' };
    return { tool };
  }

  /** Provider names, sorted. */
  providerNames(): string[] {
    return [...this.#providers.keys()].sort();
  }

  provider(name: string): ToolProvider | undefined {
    return this.#providers.get(providerName(name));
  }

  async check(ref: ToolRef): Promise<ToolResolution> {
    return this.#check(ref);
  }

  async #check(ref: ToolRef): Promise<ToolResolution> {
    const label = `tool "${ref.toolName}" of provider "${ref.providerId}"`;
    if (ref.providerType === 'workflow') {
      const workflows = this.#extras.workflows?.();
      if (!workflows) return { error: `${label}: workflow tools are not available in this process`, errorType: 'ToolProviderNotFoundError' };
      return workflows.resolve(ref);
    }
    if (ref.providerType === 'api') {
      const api = this.#extras.apiProviders ?? [];
      const provider = api.find((p) => p.matches(ref));
      if (provider) return provider.resolve(ref);
      return {
        error: `${label}: no API tool provider "${ref.providerName ?? ref.providerId}" is configured; declare its OpenAPI document under api_tools in dovetail.yaml (by that name, or list "${ref.providerId}" in its provider_ids)${api.length ? ` (configured: ${api.map((p) => p.config.name).join(', ')})` : ''}`,
        errorType: 'ToolProviderNotFoundError',
        setting: 'api_tools',
      };
    }
    if (ref.providerType === 'mcp') {
      if (this.#mcpServer(ref)) return { tool: undefined };
      const names = this.#mcp.map((m) => m.config.name);
      return {
        error: `${label}: no MCP server "${ref.providerId}" is configured; declare it under mcp.servers in dovetail.yaml (by that name, or list "${ref.providerId}" in its provider_ids)${names.length ? ` (configured: ${names.join(', ')})` : ''}`,
        errorType: 'ToolProviderNotFoundError',
        setting: 'mcp.servers',
      };
    }
    if (!(RUNNABLE_TYPES as readonly string[]).includes(ref.providerType)) {
      return { error: `${label}: provider_type "${ref.providerType}" is not supported by this server (supported: builtin, plugin, mcp, workflow, api; built-in tools: ${this.providerNames().join(', ')})`, errorType: 'ToolProviderNotFoundError' };
    }
    const provider = this.provider(ref.providerId);
    if (!provider) {
      const plugin = /^([\w.-]+\/[\w.-]+)\//.exec(ref.providerId)?.[1];
      const what = plugin ? `the marketplace plugin "${plugin}" is not available here (Dovetail runs no plugins)` : 'no such provider is built in';
      return { error: `${label}: ${what}; replace the node with one of the built-in providers: ${this.providerNames().join(', ')}`, errorType: 'ToolProviderNotFoundError' };
    }
    const tool = provider.tools.find((t) => t.name === ref.toolName);
    if (!tool) return { error: `${label}: the provider has no such tool (its tools: ${provider.tools.map((t) => t.name).join(', ')})`, errorType: 'ToolNotFoundError' };
    if (provider.requiredSetting) {
      const s = this.#settings[provider.name];
      const set = provider.requiredSetting.endsWith('_BASE_URL') ? s?.baseUrl : s?.apiKey;
      if (!set) {
        const field = provider.requiredSetting.endsWith('_BASE_URL') ? 'base_url' : 'api_key';
        return { error: `${label} is not configured: set ${provider.requiredSetting} (or tools.${provider.name}.${field} in dovetail.yaml)`, errorType: 'ToolProviderCredentialValidationError', setting: provider.requiredSetting };
      }
    }
    return { tool };
  }

  async invoke(tool: Tool, params: Readonly<Record<string, unknown>>, ctx: ToolInvokeContext): Promise<ToolResultMessage[]> {
    const prepared = prepareParameters(tool, params);
    let messages;
    try {
      messages = await tool.invoke(prepared, ctx);
    } catch (err) {
      if (ctx.signal.aborted || err instanceof ToolError) throw err;
      throw new ToolError(`tool "${tool.name}" failed: ${(err as Error).message}`);
    }
    const out: ToolResultMessage[] = [];
    for (const m of messages) {
      if (m.type === 'image_link') out.push({ type: 'file', file: remoteFile(m.url, 'image') });
      else if (m.type === 'blob') out.push({ type: 'file', file: await this.#saveBlob(tool, m, ctx) });
      else out.push(m);
    }
    return out;
  }

  async #saveBlob(tool: Tool, blob: Extract<ToolMessage, { type: 'blob' }>, ctx: ToolInvokeContext): Promise<ToolFileValue> {
    const files = this.#extras.files;
    if (!files) throw new ToolError(`tool "${tool.name}" returned a file (${blob.mimeType}), but this process stores no tool files`);
    try {
      return await files.save(blob, ctx.caller);
    } catch (err) {
      throw new ToolError(`tool "${tool.name}" returned a file that cannot be stored: ${(err as Error).message}`);
    }
  }
}

/** A `remote_url` file mapping for a URL a tool returned. */
function remoteFile(url: string, type: string): Record<string, unknown> {
  const name = decodeURIComponent(new URL(url, 'http://x').pathname.split('/').pop() ?? '');
  const dot = name.lastIndexOf('.');
  return {
    dify_model_identity: '__dify__file__',
    id: null,
    type,
    transfer_method: 'remote_url',
    remote_url: url,
    related_id: null,
    filename: name,
    extension: dot > 0 ? name.slice(dot) : '',
    mime_type: '',
    size: -1,
    url,
  };
}

/** The registry of the built-in providers, their HTTP behind the SSRF guard. */
export function builtinToolRegistry(config: ToolsConfig, allowHosts: readonly string[], mcpServers: readonly McpServerConfig[] = config.mcpServers ?? [], extras: ToolRegistryExtras = {}): ToolRegistry {
  const http = new ToolHttp({ allowHosts, timeoutSeconds: config.timeoutSeconds, maxResponseBytes: config.maxResponseBytes });
  const apiProviders = (config.apiTools ?? []).map((c) => new ApiToolProvider(c, http));
  const s = (name: string) => ({ http, settings: config.providers[name] ?? {} });
  return new ToolRegistry(
    [
      builtinProvider,
      timeProvider,
      jsonProcessProvider,
      mathProvider,
      webscraperProvider(s('webscraper')),
      jinaProvider({ ...s('jina'), searchBaseUrl: config.providers.jina?.searchBaseUrl }),
      tavilyProvider(s('tavily')),
      searxngProvider(s('searxng')),
      duckduckgoProvider(s('duckduckgo')),
      wikipediaProvider(s('wikipedia')),
    ],
    config.providers,
    mcpServers,
    { apiProviders, ...extras },
  );
}
