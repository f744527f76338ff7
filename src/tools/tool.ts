/**
 * The Tool port: what tool nodes and agents call. A tool declares Dify's parameter schema and
 * answers with Dify's tool messages; providers live in `providers/` (one file each) and the
 * registry (`tool-registry.ts`) finds them by Dify's provider and tool names.
 */

/** Dify's tool parameter types (`ToolParameter.ToolParameterType`). */
export const TOOL_PARAMETER_TYPES = ['string', 'number', 'boolean', 'select', 'secret-input', 'file', 'files', 'array', 'object'] as const;
export type ToolParameterType = (typeof TOOL_PARAMETER_TYPES)[number];

/** One parameter as Dify declares it: `form` ones are set on the node, `llm` ones by a model or the node. */
export interface ToolParameter {
  readonly name: string;
  readonly type: ToolParameterType;
  readonly form: 'form' | 'llm';
  readonly required: boolean;
  readonly default?: unknown;
  /** `select` parameters: the allowed values. */
  readonly options?: readonly string[];
  /** What a model is told about it (`llm_description`). */
  readonly llmDescription?: string;
}

/** Dify's `ToolInvokeMessage`s, as the tool node and agents consume them. */
export type ToolMessage =
  | { readonly type: 'text'; readonly text: string }
  | { readonly type: 'link'; readonly url: string }
  | { readonly type: 'json'; readonly json: Readonly<Record<string, unknown>> }
  /** An image at a URL (Dify's `image_link`); becomes a `remote_url` file. */
  | { readonly type: 'image_link'; readonly url: string }
  /** Bytes the tool made (Dify's `blob`); becomes a file of the run. */
  | { readonly type: 'blob'; readonly data: Uint8Array; readonly mimeType: string; readonly filename: string }
  | { readonly type: 'variable'; readonly name: string; readonly value: unknown }
  /** A file of this server passed through as is (a workflow tool's output files). */
  | { readonly type: 'file'; readonly file: ToolFileValue };

/** The run a tool is called from: who owns the files it makes, and how deep workflow tools nest. */
export interface ToolCaller {
  readonly workspaceId: string;
  readonly appId: string;
  readonly runId: string;
  readonly endUserId: string;
  /** The caller's `user` string. */
  readonly user: string;
  /** 0 for a run started by the API; one more for each workflow tool in between. */
  readonly callDepth: number;
}

export interface ToolInvokeContext {
  readonly signal: AbortSignal;
  /** Epoch milliseconds, from the run's clock. */
  now(): number;
  /** The calling run (set by the run service, see `withCaller`); unset outside runs. */
  readonly caller?: ToolCaller;
}

export interface Tool {
  /** Dify's tool name (`current_time`). */
  readonly name: string;
  /** What a model is told the tool does. */
  readonly description: string;
  readonly parameters: readonly ToolParameter[];
  /** The tool's own JSON Schema for its arguments, when it has one (MCP): given to models as is. */
  readonly inputSchema?: Readonly<Record<string, unknown>>;
  /** Parameters arrive coerced to their declared types, defaults filled; throws `ToolError` on failure. */
  invoke(params: Readonly<Record<string, unknown>>, ctx: ToolInvokeContext): Promise<ToolMessage[]>;
}

/** A provider's settings (from `tools.NAME` in dovetail.yaml or `NAME_*` variables). */
export interface ToolProviderSettings {
  readonly apiKey?: string | undefined;
  readonly baseUrl?: string | undefined;
}

export interface ToolProvider {
  /** Dify's provider name (`time`, `jina`); plugin ids `langgenius/NAME/NAME` resolve to it too. */
  readonly name: string;
  /** The setting that must be set before its tools run (`JINA_API_KEY`); absent when none is needed. */
  readonly requiredSetting?: string;
  readonly tools: readonly Tool[];
}

/** A tool as a DSL names it. */
export interface ToolRef {
  /** `builtin`, `plugin`, `api`, `workflow`, `mcp`. */
  readonly providerType: string;
  readonly providerId: string;
  /** Dify's `provider_name` beside the id (API tools are matched by either). */
  readonly providerName?: string;
  readonly toolName: string;
}

/** A tool failure: the message reaches the run (never a credential). */
export class ToolError extends Error {
  override name = 'ToolError';
  constructor(
    message: string,
    /** Dify's error type (`ToolInvokeError`, `ToolParameterError`, `ToolProviderNotFoundError`, …). */
    readonly type = 'ToolInvokeError',
  ) {
    super(message);
  }
}

/** A Dify file mapping (`dify_model_identity: __dify__file__`) a tool produced. */
export type ToolFileValue = Readonly<Record<string, unknown>>;

/** What the engine gets back from a tool: its messages, images and blobs turned into files. */
export type ToolResultMessage = Exclude<ToolMessage, { type: 'image_link' } | { type: 'blob' }>;

/** Stores the bytes a tool made (a `blob` message) as a file of the calling run. */
export interface ToolFiles {
  /** Dify's `tool_file` mapping of the stored file; throws a message naming the limit it breaks. */
  save(blob: { readonly data: Uint8Array; readonly mimeType: string; readonly filename: string }, caller: ToolCaller | undefined): Promise<ToolFileValue>;
}

export type ToolResolution =
  | { readonly tool: Tool | undefined }
  | { readonly error: string; readonly errorType: string; /** The setting that would make it run, when one would. */ readonly setting?: string };

/** The tools port the engine sees (`EnginePorts.tools`). */
export interface ToolRuntime {
  /** The tool a DSL reference names, or why it cannot run (naming the tool and what to configure). */
  resolve(ref: ToolRef): Promise<ToolResolution>;
  /**
   * What `resolve` would say without contacting anything outside this server (import checks): an
   * MCP tool counts as available when its server is configured.
   */
  check(ref: ToolRef): Promise<ToolResolution>;
  /**
   * Runs a resolved tool: parameters cast and checked against its schema, then invoked. Rejects
   * with a `ToolError`-shaped error (`name`, `type`, `message` without credentials), or the abort.
   */
  invoke(tool: Tool, params: Readonly<Record<string, unknown>>, ctx: ToolInvokeContext): Promise<ToolResultMessage[]>;
}

/** `tools` with every call made on behalf of `caller` (the run service gives each run its own). */
export function withCaller(tools: ToolRuntime, caller: ToolCaller): ToolRuntime {
  return {
    resolve: (ref) => tools.resolve(ref),
    check: (ref) => tools.check(ref),
    invoke: (tool, params, ctx) => tools.invoke(tool, params, { ...ctx, caller }),
  };
}
