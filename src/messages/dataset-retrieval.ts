import type { App } from '../apps/app-service.js';
import type { AppDatasetConfig, RerankSettings } from '../apps/app-datasets.js';
import { appUnavailable } from '../apps/errors.js';
import { mergeResources, type RetrieverResource } from '../engine/retriever-resources.js';
import type { DatasetSummary, KnowledgeHit, KnowledgeRetrieveOptions, KnowledgeRetriever } from '../engine/types.js';
import { modelCallsFunctions, type ModelProvider, type ModelProviders, type ToolCall } from '../llm/model-provider.js';
import { parseReactDecision, reactRouterChatPrompt, reactRouterCompletionPrompt, REACT_ROUTER_STOP, type RouterTool } from './dataset-react-router.js';

/**
 * Reorders a retrieval's hits with a rerank model (`reranking_mode: reranking_model`), best first.
 * The seam for rerank models (src/knowledge/retrieval/rerank*.ts); without one the hits keep the
 * search's order, as Dify's retrieval with reranking off.
 */
export type HitReranker = (
  query: string,
  hits: readonly KnowledgeHit[],
  settings: RerankSettings & { readonly model: NonNullable<RerankSettings['model']> },
  topK: number,
  signal: AbortSignal,
) => Promise<readonly KnowledgeHit[]>;

export interface DatasetRetrievalDeps {
  /** The knowledge port (the one the workflow `knowledge-retrieval` node uses); unset: no knowledge here. */
  readonly knowledge: () => KnowledgeRetriever | undefined;
  readonly providers: ModelProviders;
  readonly rerank?: HitReranker;
}

/** The app's model (`model_config.model`), which routes `single` retrieval. */
export interface RouterModel {
  readonly provider: string;
  readonly name: string;
  /** `model.mode` (the ReAct router's prompt differs); default `chat`. */
  readonly mode?: 'chat' | 'completion';
  /** `model.completion_params` (the ReAct router calls the model with them); default none. */
  readonly params?: Readonly<Record<string, unknown>>;
}

/** What retrieval puts in an answer's prompt, and the citations it gives. */
export interface RetrievedContext {
  /** The chunks' text, best first, one a line (Dify's `#context#`). */
  readonly context: string;
  /** Numbered from 1, best first. */
  readonly resources: RetrieverResource[];
}

/** Where a citation of a Service API answer comes from (Dify's `InvokeFrom.SERVICE_API.to_source()`). */
const RETRIEVER_FROM = 'api';

/** Dify's `FunctionCallMultiDatasetRouter` prompt and parameters. */
const ROUTER_SYSTEM = 'You are a helpful AI assistant.';
const ROUTER_PARAMS = { temperature: 0.2, top_p: 0.3, max_tokens: 1500 };

/** How a dataset is described to a model when it has no description (Dify's wording). */
export function datasetDescription(d: DatasetSummary): string {
  return d.description || `useful for when you want to answer queries about the ${d.name}`;
}

/** A dataset as a router's tool: its id, its description on one line (as Dify's `single_retrieve`). */
function routerTool(d: DatasetSummary): RouterTool {
  return { name: d.id, description: datasetDescription(d).replace(/[\n\r]/g, '') };
}

/** A hit as a citation (`position` is set when the list is numbered). */
export function resourceOfHit(hit: KnowledgeHit): RetrieverResource {
  return {
    position: 0,
    dataset_id: hit.datasetId,
    dataset_name: hit.datasetName,
    document_id: hit.documentId,
    document_name: hit.documentName,
    data_source_type: hit.dataSourceType,
    segment_id: hit.segmentId,
    retriever_from: RETRIEVER_FROM,
    score: hit.score,
    hit_count: hit.hitCount,
    word_count: hit.wordCount,
    segment_position: hit.segmentPosition,
    index_node_hash: hit.indexNodeHash,
    content: hit.content,
    page: null,
    doc_metadata: hit.docMetadata,
    title: null,
    files: null,
    summary: null,
  };
}

/**
 * The knowledge of model-config apps (`model_config.dataset_configs`), as Dify's `DatasetRetrieval`:
 * `multiple` searches every dataset (top_k, score threshold, weights, reranking through the seam);
 * `single` lets the app's model pick one dataset (Dify's routers: a function call, or the ReAct
 * prompt for a model that does not call functions) and searches it with its own settings. Agent-chat apps get one retriever tool per dataset instead.
 */
export class AppDatasetRetrieval {
  readonly #d: DatasetRetrievalDeps;

  constructor(deps: DatasetRetrievalDeps) {
    this.#d = deps;
  }

  #knowledge(): KnowledgeRetriever {
    const k = this.#d.knowledge();
    if (!k) throw appUnavailable('This server has no knowledge retrieval, so the app\'s datasets (model_config.dataset_configs) cannot be searched.');
    return k;
  }

  /**
   * The app's datasets as its model is told about them, in the app's order. A dataset that does
   * not exist here is 400 `app_unavailable` naming the setting and the `--dataset` mapping.
   */
  async datasets(app: App, cfg: AppDatasetConfig): Promise<DatasetSummary[]> {
    const { datasets, missing } = await this.#knowledge().describe(cfg.datasets.map((d) => d.id), app.id);
    const gone = cfg.datasets.find((d) => missing.includes(d.id));
    if (gone) throw appUnavailable(`Dataset not found: ${gone.id} (${gone.where}: import the app with --dataset ${gone.id}=NEW_ID, or create the dataset)`);
    return [...datasets];
  }

  /** Retrieves the context of an answer to `query` (checked with `datasets` first). */
  async retrieve(app: App, cfg: AppDatasetConfig, query: string, model: RouterModel, signal: AbortSignal): Promise<RetrievedContext> {
    const summaries = await this.datasets(app, cfg);
    if (query.trim() === '') return { context: '', resources: [] };
    let hits: readonly KnowledgeHit[];
    if (cfg.strategy === 'single') {
      const picked = summaries.length === 1 ? summaries[0]!.id : await this.#route(summaries, query, model, signal);
      hits = picked === undefined ? [] : await this.search(app, [picked], query, { appId: app.id }, signal);
    } else {
      const weighted = cfg.rerank.enabled && cfg.rerank.mode === 'weighted_score' && cfg.rerank.weights;
      const opts: KnowledgeRetrieveOptions = {
        appId: app.id,
        topK: cfg.topK,
        scoreThreshold: cfg.scoreThreshold,
        ...(weighted ? { weights: cfg.rerank.weights! } : {}),
      };
      hits = await this.search(app, summaries.map((d) => d.id), query, opts, signal);
      const model = cfg.rerank.model;
      if (cfg.rerank.enabled && cfg.rerank.mode === 'reranking_model' && model && this.#d.rerank && hits.length > 0) {
        hits = (await this.#d.rerank(query, hits, { ...cfg.rerank, model }, cfg.topK, signal)).slice(0, cfg.topK);
      }
    }
    const sorted = [...hits].sort((a, b) => b.score - a.score);
    return { context: sorted.map((h) => h.content).join('\n'), resources: mergeResources([], sorted.map(resourceOfHit)) };
  }

  /** One search of `datasetIds` through the knowledge port; a dataset gone since the check is named. */
  async search(app: App, datasetIds: readonly string[], query: string, opts: KnowledgeRetrieveOptions, signal: AbortSignal): Promise<readonly KnowledgeHit[]> {
    const found = await this.#knowledge().retrieve(datasetIds, query, opts, signal);
    if (found.missing.length > 0) throw appUnavailable(`Dataset not found: ${found.missing[0]} (model_config.dataset_configs of app "${app.name}": import the app with --dataset ${found.missing[0]}=NEW_ID, or create the dataset)`);
    return found.hits;
  }

  /**
   * Picks the dataset of a `single` retrieval as Dify's `single_retrieve`: a model that calls
   * functions gets the function-call router, any other the ReAct router.
   */
  async #route(summaries: readonly DatasetSummary[], query: string, model: RouterModel, signal: AbortSignal): Promise<string | undefined> {
    const provider = this.#d.providers.get(model.provider);
    const tools = summaries.map(routerTool);
    const picked = modelCallsFunctions(provider, model.name) ? await this.#functionCallRoute(provider, tools, query, model, signal) : await this.#reactRoute(provider, tools, query, model, signal);
    return summaries.some((d) => d.id === picked) ? picked : undefined;
  }

  /**
   * Dify's `FunctionCallMultiDatasetRouter`: the app's model is offered one function per dataset
   * (named by its id, no parameters) and the first one it calls is the dataset; none or a failure:
   * no dataset (the answer gets an empty context).
   */
  async #functionCallRoute(provider: ModelProvider, tools: readonly RouterTool[], query: string, model: RouterModel, signal: AbortSignal): Promise<string | undefined> {
    let calls: readonly ToolCall[] = [];
    try {
      for await (const chunk of provider.stream({
        model: model.name,
        mode: 'chat',
        messages: [
          { role: 'system', content: ROUTER_SYSTEM },
          { role: 'user', content: query },
        ],
        params: ROUTER_PARAMS,
        tools: tools.map((t) => ({ ...t, parameters: { type: 'object', properties: {}, required: [] } })),
        signal,
      })) {
        if (chunk.type === 'tool_calls') calls = chunk.calls;
      }
    } catch (err) {
      if (signal.aborted) throw err;
      return undefined;
    }
    return calls[0]?.name;
  }

  /**
   * Dify's `ReactMultiDatasetRouter` (dataset-react-router.ts): the datasets as tools in a ReAct
   * prompt, the app's own parameters, stopping at `Observation:`; the action's tool is the
   * dataset. A "Final Answer", an answer without an action, one that cannot be parsed, a name that
   * is not one of the app's datasets or a failed call: no dataset, as Dify.
   */
  async #reactRoute(provider: ModelProvider, tools: readonly RouterTool[], query: string, model: RouterModel, signal: AbortSignal): Promise<string | undefined> {
    const { stop: _stop, ...own } = model.params ?? {};
    const params = { ...own, stop: [...REACT_ROUTER_STOP] };
    const completion = model.mode === 'completion';
    let text = '';
    try {
      for await (const chunk of provider.stream({
        model: model.name,
        mode: completion ? 'completion' : 'chat',
        messages: completion ? [{ role: 'user', content: reactRouterCompletionPrompt(tools) }] : reactRouterChatPrompt(query, tools),
        ...(completion ? { prompt: reactRouterCompletionPrompt(tools) } : {}),
        params,
        signal,
      })) {
        if (chunk.type === 'text') text += chunk.text;
      }
    } catch (err) {
      if (signal.aborted) throw err;
      return undefined;
    }
    const decision = parseReactDecision(text);
    return decision.kind === 'action' && typeof decision.tool === 'string' ? decision.tool : undefined;
  }
}
