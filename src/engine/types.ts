import type { ModelProviders, ChatMessage } from './ports.js';
import type { HumanInputGateway, HumanInputRequired } from './ports.js';
import type { UsageBody } from '../lib/usage.js';
import type { ModelPrice } from '../lib/usage.js';
import type { VariablePool } from './variable-pool.js';
import type { RetrieverResource } from './retriever-resources.js';
import type { ToolRuntime } from './ports.js';
import type { ImportWarning } from '../lib/import-warning.js';

/** The node types the engine runs; a DSL node of any other type is refused at import. */
export const NODE_TYPES = [
  'start',
  'end',
  'answer',
  'llm',
  'template-transform',
  'if-else',
  'variable-aggregator',
  'human-input',
  'knowledge-retrieval',
  'loop',
  'loop-start',
  'loop-end',
  'assigner',
  'code',
  'iteration',
  'iteration-start',
  'http-request',
  'tool',
  'variable-assigner',
  'knowledge-retrieval-v2',
  'list-operator',
  'document-extractor',
  'question-classifier',
  'parameter-extractor',
  'agent',
  'trigger-webhook',
  'trigger-schedule',
  'trigger-plugin',
  'datasource',
  'knowledge-index',
] as const;
export type NodeType = (typeof NODE_TYPES)[number];

/**
 * The node types a run may start from (Dify's root nodes): the start node (the API's inputs) and
 * the trigger nodes of Dify 1.10 (a webhook call, a schedule's tick, a plugin's event).
 */
export const ENTRY_TYPES: readonly NodeType[] = ['start', 'trigger-webhook', 'trigger-schedule', 'trigger-plugin'];
export const TRIGGER_TYPES: readonly NodeType[] = ['trigger-webhook', 'trigger-schedule', 'trigger-plugin'];
/** The node types only a knowledge pipeline (`kind: rag_pipeline`) has; its runs start at one of its `datasource` nodes. */
export const PIPELINE_TYPES: readonly NodeType[] = ['datasource', 'knowledge-index'];
export function isNodeType(v: unknown): v is NodeType {
  return typeof v === 'string' && (NODE_TYPES as readonly string[]).includes(v);
}

export interface GraphNode {
  readonly id: string;
  readonly type: NodeType;
  readonly title: string;
  readonly data: Readonly<Record<string, unknown>>;
  /** The loop / iteration node this node runs inside (DSL `parentId`), if any. */
  readonly parentId?: string;
}

export interface GraphEdge {
  readonly id: string;
  readonly source: string;
  readonly target: string;
  /** `source` unless the DSL names a branch handle. */
  readonly handle: string;
}

/** A validated, immutable graph compiled from DSL. */
export interface Graph {
  readonly nodes: ReadonlyMap<string, GraphNode>;
  readonly edges: readonly GraphEdge[];
  readonly outgoing: ReadonlyMap<string, readonly GraphEdge[]>;
  readonly incoming: ReadonlyMap<string, readonly GraphEdge[]>;
  readonly startId: string;
  /**
   * Every node a run of this level may start from: the start node and the trigger nodes (top level);
   * `startId` is the one a run started through the API begins at (the start node, else the first trigger).
   */
  readonly entryIds: readonly string[];
  /** Environment variables (`env.*`) by name. */
  readonly environment: Readonly<Record<string, unknown>>;
  /** The non-empty string values of `value_type: secret` environment variables, by name (masked in run events). */
  readonly secrets: Readonly<Record<string, string>>;
  /** Conversation variable defaults (`conversation.*`) by name. */
  readonly conversationDefaults: Readonly<Record<string, unknown>>;
  /** Loop / iteration node id → the graph of its child nodes (started at its `*-start` node). */
  readonly children: ReadonlyMap<string, Graph>;
  /** Chatflows: the app's `retriever_resource` feature is on (answers carry their citations). */
  readonly showRetrieveSource?: boolean;
}

/** Conversation history for chatflow LLM memory. */
export interface ConversationMemory {
  /** The last `window` exchanges of a conversation, oldest first, as user/assistant messages. */
  history(conversationId: string, window: number): Promise<ChatMessage[]>;
}

/** One chunk a knowledge search found. */
export interface KnowledgeHit {
  readonly datasetId: string;
  readonly datasetName: string;
  readonly documentId: string;
  readonly documentName: string;
  readonly dataSourceType: string;
  readonly segmentId: string;
  readonly segmentPosition: number;
  readonly content: string;
  /** 0..1, higher is better. */
  readonly score: number;
  readonly hitCount: number;
  readonly wordCount: number;
  readonly indexNodeHash: string;
  /** The document's metadata values by field name (Dify's `doc_metadata`); null when it has none. */
  readonly docMetadata: Readonly<Record<string, unknown>> | null;
  /** Parent-child documents: the matched children of the returned parent, best first. */
  readonly childChunks?: readonly { readonly id: string; readonly content: string; readonly position: number; readonly score: number }[];
}

export interface KnowledgeRetrieveOptions {
  /** The running app: only datasets of its workspace are visible. */
  readonly appId: string;
  /** Absent: each dataset's own retrieval settings (the largest top_k among them). */
  readonly topK?: number;
  /** Hits below it are dropped; null = no threshold; absent = each dataset's own setting. */
  readonly scoreThreshold?: number | null;
  /** Hybrid search weights; each dataset's own when absent. */
  readonly weights?: { readonly vector: number; readonly keyword: number };
  /** Only documents whose metadata pass these conditions; absent = no filter. */
  readonly metadataFilter?: KnowledgeMetadataFilter;
  /**
   * `multiple_retrieval_config`'s reranking of the hits of several datasets together (Dify skips it
   * for one dataset, whose own `retrieval_model` reranks); absent = reranking off.
   */
  readonly reranking?: KnowledgeReranking;
}

/** A node's `reranking_enable` / `reranking_mode` / `reranking_model` / `weights`. */
export interface KnowledgeReranking {
  readonly enabled: boolean;
  readonly mode: 'reranking_model' | 'weighted_score';
  readonly model: { readonly provider: string; readonly model: string } | null;
  readonly weights: { readonly vector: number; readonly keyword: number } | null;
}

/**
 * Dify's `metadata_filtering_conditions` with the values resolved. Conditions the node was given
 * (`manual`) are checked as the Service API checks them, and a bad one fails the node; conditions
 * a model extracted (`automatic`) that do not check out are dropped.
 */
export interface KnowledgeMetadataFilter {
  readonly source: 'manual' | 'automatic';
  readonly logical_operator: 'and' | 'or';
  readonly conditions: readonly { readonly name: string; readonly comparison_operator: unknown; readonly value: unknown }[];
}

/** Knowledge base search for `knowledge-retrieval` nodes. */
export interface KnowledgeRetriever {
  /** Hits best first (at most `topK`); `missing` lists ids that name no dataset (then no search runs). */
  retrieve(
    datasetIds: readonly string[],
    query: string,
    opts: KnowledgeRetrieveOptions,
    signal?: AbortSignal,
  ): Promise<{
    readonly hits: readonly KnowledgeHit[];
    readonly missing: readonly string[];
    /** Set when reranking was asked for and could not run (no rerank model here): what was done instead (the node's `process_data`). */
    readonly rerankingNote?: string;
    /** Set when an external knowledge base gave no records because its API failed: why (the node's `process_data`). */
    readonly externalNote?: string;
  }>;
  /**
   * The metadata fields (name, type) of the app's datasets among `datasetIds`, each name once;
   * `missing` as for `retrieve`.
   */
  metadataFields(datasetIds: readonly string[], appId: string): Promise<{ readonly fields: readonly { readonly name: string; readonly type: string }[]; readonly missing: readonly string[] }>;
  /** The app's datasets among `datasetIds` (name, description), in the order given; `missing` as for `retrieve`. */
  describe(datasetIds: readonly string[], appId: string): Promise<{ readonly datasets: readonly DatasetSummary[]; readonly missing: readonly string[] }>;
}

/** A dataset as a model is told about it (Dify's dataset router and dataset retriever tools). */
export interface DatasetSummary {
  readonly id: string;
  readonly name: string;
  readonly description: string;
}

/** A code node's program, run outside the engine (src/code). */
export interface CodeRequest {
  readonly language: 'python3' | 'javascript';
  readonly code: string;
  readonly inputs: Readonly<Record<string, unknown>>;
  /**
   * The app the node runs in: the sandboxes queue, cap and (python3) isolate runs per app, so one
   * app's runs neither wait behind another's nor share an interpreter with them.
   */
  readonly appId?: string;
}

/** Runs code nodes; rejects with a message when the program fails, times out or is too large. */
export interface CodeExecutor {
  run(req: CodeRequest, signal: AbortSignal): Promise<unknown>;
  /** What to do about a Python module code nodes cannot import (names the setting); `app check` and the code node say it. */
  missingModuleAdvice?(module: string): string;
  /** The top-level Python modules among `names` code nodes cannot import, when the executor knows without running Python. */
  missingModules?(names: readonly string[]): Promise<string[]>;
}

/**
 * Renders a DSL's Jinja2 template with its variables where it cannot reach the host and is
 * interrupted at a time limit (src/code); rejects with the message the node reports.
 */
export interface TemplateRenderer {
  /** `appId`: the app the node runs in (renders are queued per app, as code runs). */
  render(template: string, vars: Readonly<Record<string, unknown>>, signal: AbortSignal, appId?: string): Promise<string>;
}

/** An HTTP request as the http-request node built it. */
export interface HttpRequestSpec {
  readonly method: string;
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string | Uint8Array | undefined;
  /** Headers that carry credentials: not sent on to another origin after a redirect. */
  readonly credentialHeaders?: readonly string[];
  /** Seconds. */
  readonly timeouts: { readonly connect: number; readonly read: number; readonly write: number };
}

export interface HttpResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

/** Sends http-request nodes' requests (behind the server's SSRF guard). */
export interface HttpRequester {
  send(req: HttpRequestSpec, signal: AbortSignal): Promise<HttpResponse>;
}

/**
 * Files in a run (start inputs, `sys.files`, tool output files): a caller's reference
 * (`{transfer_method, upload_file_id | url}`) or Dify's File mapping (`dify_model_identity:
 * "__dify__file__"`). Implemented outside the engine (src/files/run-files.ts).
 */
export interface RunFiles {
  /**
   * Dify's File mapping of `ref` (`filename`, `extension` with its dot, `mime_type`, `size`,
   * `type`, `transfer_method`, `remote_url`, …); remote files are described from their URL
   * without fetching (`size` -1). Throws a message when `ref` names no file of the app.
   */
  describe(ref: unknown, appId: string): Promise<Record<string, unknown>>;
  /**
   * The file's text, extracted with the knowledge parsers (remote files fetched behind the SSRF
   * guard). Throws a message naming the extension when no parser reads that type.
   */
  extractText(ref: unknown, appId: string, signal: AbortSignal): Promise<string>;
}

/** A `datasource` node's plugin, as the DSL names it. */
export interface DatasourceRef {
  /** `langgenius/file`, `langgenius/jina_datasource`, … */
  readonly pluginId: string;
  /** `file`, `jina`, `firecrawl`, … */
  readonly providerName: string;
  /** `local_file` | `website_crawl` | `online_document` | `online_drive` */
  readonly providerType: string;
  readonly datasourceName: string;
}

/**
 * What a knowledge pipeline run reaches outside the engine (src/knowledge/pipeline): the item its
 * datasource node reads and the dataset its knowledge-index node writes.
 */
export interface KnowledgePipelinePort {
  /**
   * The datasource node's outputs for this run's item (`info`, Dify's `sys.datasource_info`): a
   * local file's File mapping (`file`), a crawled page (`source_url`, `content`, `title`,
   * `description`). Rejects with a message when the item cannot be read.
   */
  datasource(ref: DatasourceRef, type: string, info: Readonly<Record<string, unknown>>, params: Readonly<Record<string, unknown>>, signal: AbortSignal): Promise<Record<string, unknown>>;
  /**
   * Writes `chunks` (a chunker's `result`) into the run's document of the pipeline's dataset and
   * indexes them; answers Dify's knowledge-index outputs. Rejects with a message naming what is wrong.
   */
  index(chunks: unknown, settings: { readonly chunkStructure: string; readonly indexingTechnique: string | undefined }, signal: AbortSignal): Promise<Record<string, unknown>>;
}

/** Node limits from config (Dify's names); their defaults are config's (the engine has none). */
export interface EngineLimits {
  /** `LOOP_NODE_MAX_COUNT`: the largest `loop_count` of a loop node. */
  readonly loopMaxCount: number;
  /** `MAX_ITERATIONS_NUM`: the most items an iteration node accepts. */
  readonly iterationMaxItems: number;
  /** `ITERATION_MAX_PARALLEL`: the most items a parallel iteration runs at once (`parallel_nums` is clamped to it). */
  readonly iterationMaxParallel: number;
  /** Code node output checks (`CODE_MAX_STRING_LENGTH`, `CODE_MAX_*_ARRAY_LENGTH`, `CODE_MAX_DEPTH`, `CODE_MAX_PRECISION`). */
  readonly code: CodeOutputLimits;
  /** `AGENT_MAX_ITERATIONS`: the largest `maximum_iterations` of an agent node. */
  readonly agentMaxIterations: number;
}

export interface CodeOutputLimits {
  readonly maxStringLength: number;
  readonly maxStringArrayLength: number;
  readonly maxObjectArrayLength: number;
  readonly maxNumberArrayLength: number;
  readonly maxDepth: number;
  readonly maxPrecision: number;
}

/** Everything a node may touch outside the pool; injected by the run loop. */
export interface EnginePorts {
  readonly providers: ModelProviders | undefined;
  readonly humanInput: HumanInputGateway | undefined;
  readonly memory: ConversationMemory | undefined;
  readonly knowledge?: KnowledgeRetriever | undefined;
  readonly code?: CodeExecutor | undefined;
  /** template-transform nodes; unset: they fail saying so. */
  readonly templates?: TemplateRenderer | undefined;
  readonly http?: HttpRequester | undefined;
  readonly files?: RunFiles | undefined;
  /** Tools for tool and agent nodes (src/tools); unset: those nodes fail naming the tool. */
  readonly tools?: ToolRuntime | undefined;
  /** Knowledge pipeline runs: the data source and the dataset the chunks go to; unset outside them. */
  readonly pipeline?: KnowledgePipelinePort | undefined;
  /** Node limits (from config). */
  readonly limits: EngineLimits;
  /** The price table row of a model name (`prices` in dovetail.yaml); unset or `undefined`: free. */
  readonly priceOf?: (model: string) => ModelPrice | undefined;
  now(): number;
  newId(): string;
  sleep(ms: number, signal: AbortSignal): Promise<void>;
}

export type AppKind = 'workflow' | 'advanced-chat';

/** Events a node emits while it runs (besides its start and finish). */
export type NodeStreamEvent =
  | { readonly type: 'text'; readonly text: string; readonly selector: readonly string[] }
  | { readonly type: 'answer'; readonly text: string }
  | { readonly type: 'human_input_form_filled'; readonly data: Readonly<Record<string, unknown>> }
  | { readonly type: 'human_input_form_timeout'; readonly data: Readonly<Record<string, unknown>> }
  /** Container nodes: a stream event as is (`loop_started`, child `node_started`, …). */
  | { readonly type: 'event'; readonly event: string; readonly data: Readonly<Record<string, unknown>> };

/** How a node execution ended, after retries and its error strategy. */
export type NodeResult =
  | {
      readonly type: 'succeeded' | 'exception';
      readonly outputs: Record<string, unknown>;
      readonly inputs: Record<string, unknown> | null;
      readonly processData: Record<string, unknown> | null;
      /** Which outgoing edges to take. */
      readonly take: (e: GraphEdge) => boolean;
      readonly usage: NodeUsage | undefined;
      readonly error: string | null;
      readonly errorStrategy: string | null;
      readonly retrieverResources?: readonly RetrieverResource[];
    }
  | {
      readonly type: 'failed';
      readonly error: string;
      /** What the node had worked out before it failed (its inputs, the prompts it sent), for the run's log (`failedWith`). */
      readonly inputs?: Record<string, unknown> | null;
      readonly processData?: Record<string, unknown> | null;
    }
  | { readonly type: 'pause'; readonly required: HumanInputRequired }
  | { readonly type: 'stopped' };

/** Runs one node with its retries and error strategy (src/engine/execute-node.ts `executeNode`). */
export type ExecuteNode = (ctx: NodeContext, onRetry: (retryIndex: number, error: string) => void) => Promise<NodeResult>;

export interface NodeContext {
  readonly node: GraphNode;
  readonly graph: Graph;
  readonly pool: VariablePool;
  readonly kind: AppKind;
  readonly runId: string;
  readonly appId: string;
  readonly endUserId: string;
  readonly conversationId: string | null;
  readonly ports: EnginePorts;
  readonly signal: AbortSignal;
  /** Answer nodes: how many leading template segments were already streamed (by an LLM node). */
  readonly streamedSegments: number;
  emit(e: NodeStreamEvent): void;
  /** Inside a container: the loop / iteration node id and the round (for child events). */
  readonly container?: { readonly type: 'loop' | 'iteration'; readonly id: string; readonly index: number };
  /** This execution's id (node_started.id), when the run loop assigned one. */
  readonly executionId?: string;
  /** Counts one child node execution against the run's step limit; returns its execution index. */
  step?(): number;
  /** How container nodes run their children: `executeNode` sets itself here before running a node. */
  readonly executeChild?: ExecuteNode;
}

/** A node's model usage in Dify's `LLMUsage` shape (tokens, decimal-string prices, latency). */
export type NodeUsage = UsageBody;

export type NodeOutcome =
  | {
      readonly type: 'succeeded';
      readonly outputs: Record<string, unknown>;
      readonly inputs?: Record<string, unknown> | null;
      readonly processData?: Record<string, unknown> | null;
      /** Branch nodes: the sourceHandle to follow; others follow every edge. */
      readonly handle?: string;
      readonly usage?: NodeUsage;
      /** LLM nodes: the citations of the knowledge that reached their context (Dify's `RunRetrieverResourceEvent`). */
      readonly retrieverResources?: readonly RetrieverResource[];
    }
  | { readonly type: 'pause'; readonly required: HumanInputRequired };

export type { ImportWarning } from '../lib/import-warning.js';

/** What a node type's `importWarnings` may ask about the server it is imported into. */
export interface ImportCheckContext {
  /** Null when the model provider can be called; else why not, naming the setting to set. */
  providerProblem(provider: string): string | null;
  /** Null when the rerank model provider can be called; else why not. Unset: not checked. */
  rerankProblem?(provider: string): string | null;
}

/** One node type: import-time checks and the run itself. */
/**
 * Import-time checks that need a library the engine may not load (the Jinja parser reaches the
 * file system): supplied by the importer (src/apps/engine-graph-validator.ts). Unset: those checks
 * happen when the node runs instead.
 */
export interface CompileChecks {
  /** The first line of the template's syntax error, or undefined when it parses. */
  readonly templateSyntax?: (template: string) => string | undefined;
}

export interface NodeHandler {
  /** Throws a message (without the node id) when the node's data cannot run. */
  validate?(node: GraphNode, checks: CompileChecks): void;
  /**
   * What this node names that the server cannot serve yet, beyond the checks every node gets
   * (model provider in `model`, dataset ids, python imports); the app still imports.
   */
  importWarnings?(node: GraphNode, ctx: ImportCheckContext): readonly ImportWarning[] | Promise<readonly ImportWarning[]>;
  /** Branch nodes pick one handle and skip the rest. */
  readonly branch?: boolean;
  run(ctx: NodeContext): Promise<NodeOutcome>;
}

/** A node failure: `retryable` failures are retried per `retry_config`. */
export class NodeFailure extends Error {
  override name = 'NodeFailure';
  constructor(
    message: string,
    readonly type: string = 'NodeError',
    readonly retryable = true,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** The run was stopped; never reported as a failure. */
export class StopSignal extends Error {
  override name = 'StopSignal';
}

/** True when `err` (or any of its causes) is a stop, or the abort of a stopped run. */
/** What a failing node had worked out (its inputs, process data), carried by its error to the run's log. */
export interface FailedNodeData {
  readonly inputs?: Record<string, unknown> | null;
  readonly processData?: Record<string, unknown> | null;
}

const FAILED_NODE_DATA = Symbol('failedNodeData');

/**
 * Attaches `data` to a node's error as it is rethrown (the error itself unchanged): the failed
 * `node_finished` then reports the inputs and process data, as Dify's failed node executions do.
 */
export function failedWith<E>(err: E, data: FailedNodeData): E {
  if (err !== null && typeof err === 'object') (err as { [FAILED_NODE_DATA]?: FailedNodeData })[FAILED_NODE_DATA] = data;
  return err;
}

/** The data `failedWith` attached to a node's error, if any. */
export function failedNodeData(err: unknown): FailedNodeData {
  return (err !== null && typeof err === 'object' ? (err as { [FAILED_NODE_DATA]?: FailedNodeData })[FAILED_NODE_DATA] : undefined) ?? {};
}

export function isStop(err: unknown, signal?: AbortSignal): boolean {
  if (signal?.aborted) return true;
  for (let e = err; e; e = (e as { cause?: unknown }).cause) if (e instanceof StopSignal) return true;
  return false;
}
