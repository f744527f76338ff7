import type { Kysely } from 'kysely';
import type { Database, DatasetTable } from '../../store/schema.js';
import type { Clock } from '../../infra/clock.js';
import { newId } from '../../infra/ids.js';
import { invalidParam } from '../../infra/errors.js';
import { isObject } from '../../infra/objects.js';
import type { EnginePorts, Graph, GraphNode, ImportWarning, KnowledgePipelinePort } from '../../engine/types.js';
import type { ToolRuntime } from '../../engine/ports.js';
import { VariablePool, type PoolData } from '../../engine/variable-pool.js';
import { datasourceParameters, datasourceRefOf, unsupportedDatasource } from '../../engine/nodes/datasource.js';
import { toolRefOf } from '../../engine/nodes/tool.js';
import type { UploadService } from '../../files/upload-service.js';
import type { DatasetService } from '../datasets.js';
import type { DocumentService } from '../documents/documents.js';
import type { Indexer } from '../ingest/indexer.js';
import { DOC_FORM_OF, encodePreparedChunks, PREPARED_RULE, preparedChunksOf } from '../ingest/prepared-chunks.js';
import { parsePipelineDsl, pipelineGraph, pipelineWarnings, type PipelineDsl, type PipelineVariable } from './pipeline-dsl.js';
import { PipelineStore, type DatasetPipeline } from './pipeline-store.js';
import { runPipeline, type PipelineFrame, type PipelineRunResult } from './pipeline-runner.js';
import { PipelineTools } from './pipeline-tools.js';
import type { Crawlers, CrawledPage } from './crawlers.js';

export interface PipelineServiceDeps {
  readonly db: Kysely<Database>;
  readonly clock: Clock;
  readonly datasets: DatasetService;
  readonly documents: DocumentService;
  readonly uploads: Pick<UploadService, 'find'>;
  readonly indexer: Pick<Indexer, 'run'>;
  readonly crawlers: Crawlers;
  /** The server's tools (the pipeline's own processing tools come first). */
  readonly tools: () => ToolRuntime | undefined;
  /** Models, code, templates, HTTP and limits, as workflow runs get them. */
  readonly basePorts: () => Omit<EnginePorts, 'files' | 'tools' | 'pipeline' | 'knowledge' | 'humanInput' | 'memory'>;
  /** The text of a File mapping naming an upload of the workspace (the knowledge parsers). */
  extractText(file: unknown, workspaceId: string, signal: AbortSignal): Promise<string>;
  /** Dify's File mapping of an upload of the workspace; throws naming the file. */
  describeFile(file: unknown, workspaceId: string): Promise<Record<string, unknown>>;
  readonly limits: {
    readonly maxSteps: number;
    readonly maxTimeMs: number;
    /** `PIPELINE_RUN_MAX_ITEMS`. */
    readonly maxItems: number;
    /** `KNOWLEDGE_SEGMENT_MAX_CHARS`. */
    readonly segmentMaxChars: number;
    readonly maxSegmentationTokens: number;
    readonly fullDocMaxTokens: number;
    /** `PIPELINE_CHUNK_INPUT_MAX_CHARS`. */
    readonly chunkInputMaxChars: number;
  };
  /** Whether a website-crawl provider has its key (the datasource plugins' `credentials`). */
  crawlerCredential(provider: string): { id: string; name: string; type: string; is_default: boolean } | null;
}

export const DATASOURCE_TYPES = ['local_file', 'online_document', 'website_crawl', 'online_drive'] as const;

const pipelineNotFound = () => invalidParam('Pipeline not found');

/** The request of `POST /datasets/{id}/pipeline/run`. */
export interface PipelineRunRequest {
  readonly inputs: unknown;
  readonly datasource_type: unknown;
  readonly datasource_info_list: unknown;
  readonly start_node_id: unknown;
}

/**
 * Knowledge pipelines: a `kind: rag_pipeline` DSL attached to a dataset (Dify's `runtime_mode:
 * rag_pipeline`), its datasource nodes, and its runs over uploaded files and crawled pages, each
 * item a document of the dataset indexed from the chunks the pipeline made.
 */
export class PipelineService {
  readonly #d: PipelineServiceDeps;
  readonly #store: PipelineStore;

  constructor(deps: PipelineServiceDeps) {
    this.#d = deps;
    this.#store = new PipelineStore(deps.db);
  }

  /** What the pipeline names that cannot run here (datasource plugins, tools). */
  async warnings(p: PipelineDsl): Promise<ImportWarning[]> {
    const tools = this.#tools('');
    return pipelineWarnings(p, async (graph) => {
      const out: ImportWarning[] = [];
      for (const n of graph.nodes.values()) {
        if (n.type !== 'tool') continue;
        const found = await tools.check(toolRefOf(n.data));
        if ('error' in found) out.push({ node_id: n.id, node_type: n.type, part: `tool ${String(n.data.tool_name)}`, setting: ('setting' in found ? found.setting : undefined) ?? null, message: `node ${n.id} (tool): ${found.error}` });
      }
      return out;
    });
  }

  /**
   * `dovetail dataset create --pipeline FILE`: a dataset filled by the pipeline, named as given or
   * as the pipeline, its indexing technique and retrieval model from the knowledge-index node.
   */
  async create(workspaceId: string, yaml: string, opts: { name?: string; createdBy: string }): Promise<{ dataset: DatasetTable; pipeline: DatasetPipeline; warnings: ImportWarning[] }> {
    const p = parsePipelineDsl(yaml);
    const index = [...pipelineGraph(p).nodes.values()].find((n) => n.type === 'knowledge-index')!;
    const technique = index.data.indexing_technique === 'high_quality' ? 'high_quality' : 'economy';
    // the dataset's retrieval settings are its own (the technique's default search); the node's are not copied
    const dataset = await this.#d.datasets.create(workspaceId, { name: opts.name ?? p.name.slice(0, 40), indexingTechnique: technique, createdBy: opts.createdBy });
    const now = this.#d.clock.now();
    const row: DatasetPipeline = { id: newId(), dataset_id: dataset.id, name: p.name, dsl: yaml, graph: JSON.stringify(p.doc), created_by: opts.createdBy, created_at: now, updated_at: now };
    await this.#store.insert(row);
    return { dataset, pipeline: row, warnings: await this.warnings(p) };
  }

  /** `dovetail dataset pipeline update DATASET FILE`: the dataset's pipeline replaced (its documents stay). */
  async update(ds: DatasetTable, yaml: string): Promise<{ pipeline: DatasetPipeline; warnings: ImportWarning[] }> {
    const current = await this.#store.ofDataset(ds.id);
    if (!current) throw pipelineNotFound();
    const p = parsePipelineDsl(yaml);
    const change = { name: p.name, dsl: yaml, graph: JSON.stringify(p.doc), updated_at: this.#d.clock.now() };
    await this.#store.replace(ds.id, change);
    return { pipeline: { ...current, ...change }, warnings: await this.warnings(p) };
  }

  /** The dataset's pipeline as imported (`dovetail dataset pipeline export`). */
  async export(ds: DatasetTable): Promise<string> {
    const row = await this.#store.ofDataset(ds.id);
    if (!row) throw pipelineNotFound();
    return row.dsl.endsWith('\n') ? row.dsl : `${row.dsl}\n`;
  }

  /** Pipeline ids by dataset id (the dataset object's `pipeline_id`, `runtime_mode`). */
  async idsOf(datasetIds: readonly string[]): Promise<Map<string, string>> {
    return this.#store.idsOf(datasetIds);
  }

  async #load(ds: DatasetTable): Promise<{ row: DatasetPipeline; p: PipelineDsl; graph: Graph }> {
    const row = await this.#store.ofDataset(ds.id);
    if (!row) throw pipelineNotFound();
    const p = parsePipelineDsl(row.dsl);
    return { row, p, graph: pipelineGraph(p) };
  }

  /** `GET /datasets/{id}/pipeline/datasource-plugins`: the pipeline's datasource nodes. */
  async datasourcePlugins(ds: DatasetTable): Promise<Record<string, unknown>[]> {
    const { p, graph } = await this.#load(ds);
    return [...graph.nodes.values()]
      .filter((n) => n.type === 'datasource')
      .map((n) => {
        const ref = datasourceRefOf(n.data);
        const cred = ref.providerType === 'website_crawl' ? this.#d.crawlerCredential(ref.providerName) : null;
        return {
          node_id: n.id,
          plugin_id: ref.pluginId,
          provider_name: ref.providerName,
          datasource_type: ref.providerType,
          title: n.title,
          user_input_variables: p.variables.filter((v) => v.belong_to_node_id === n.id),
          credentials: cred ? [cred] : [],
        };
      });
  }

  /** The `rag` scope of a run's pool: the request's inputs over the variables' defaults, checked and typed. */
  #ragInputs(vars: readonly PipelineVariable[], nodeId: string, inputs: unknown): PoolData['rag'] {
    if (inputs !== undefined && inputs !== null && !isObject(inputs)) throw invalidParam('inputs must be an object.');
    const given = (inputs ?? {}) as Record<string, unknown>;
    const rag: Record<string, Record<string, unknown>> = {};
    for (const v of vars) {
      if (v.belong_to_node_id !== 'shared' && v.belong_to_node_id !== nodeId) continue;
      let value = given[v.variable];
      if (value === undefined || value === null || value === '') value = v.default_value ?? undefined;
      if ((value === undefined || value === null || value === '') && v.required) throw invalidParam(`inputs.${v.variable} is required (${v.label}).`);
      if (value !== undefined && value !== null) value = typed(v, value);
      (rag[v.belong_to_node_id] ??= {})[v.variable] = value ?? null;
    }
    return rag;
  }

  #node(graph: Graph, nodeId: unknown, field: string): GraphNode {
    if (typeof nodeId !== 'string' || nodeId === '') throw invalidParam(`${field} is required.`);
    const node = graph.nodes.get(nodeId);
    if (!node || node.type !== 'datasource') throw invalidParam(`${field} ${nodeId} is not a datasource node of the pipeline (its datasource nodes: ${[...graph.nodes.values()].filter((n) => n.type === 'datasource').map((n) => n.id).join(', ')}).`);
    return node;
  }

  #tools(workspaceId: string): PipelineTools {
    const l = this.#d.limits;
    return new PipelineTools(this.#d.tools(), {
      extractText: (file, signal) => this.#d.extractText(file, workspaceId, signal),
      maxSegmentationTokens: l.maxSegmentationTokens,
      fullDocMaxTokens: l.fullDocMaxTokens,
      inputMaxChars: l.chunkInputMaxChars,
    });
  }

  /**
   * `POST /datasets/{id}/pipeline/datasource/nodes/{node_id}/run`: a website-crawl node crawls
   * with the request's inputs and streams Dify's `datasource_processing` and
   * `datasource_completed` frames (the pages), or `datasource_error`.
   */
  async datasourceNodeRun(ds: DatasetTable, nodeId: string, body: { inputs: unknown; datasource_type: unknown }): Promise<(emit: (f: PipelineFrame) => void, signal: AbortSignal) => Promise<void>> {
    const { p, graph } = await this.#load(ds);
    const node = this.#node(graph, nodeId, 'node_id');
    const ref = datasourceRefOf(node.data);
    if (!(DATASOURCE_TYPES as readonly string[]).includes(String(body.datasource_type))) throw invalidParam(`datasource_type must be one of ${DATASOURCE_TYPES.join(', ')}.`);
    if (body.datasource_type !== ref.providerType) throw invalidParam(`datasource_type is ${String(body.datasource_type)}, but node ${nodeId} reads ${ref.providerType}.`);
    const rag = this.#ragInputs(p.variables, nodeId, body.inputs);
    const why = unsupportedDatasource(ref);
    const params = datasourceParameters(node, new VariablePool({ rag }));
    return async (emit, signal) => {
      const started = this.#d.clock.now();
      if (why) return void emit({ event: 'datasource_error', error: `datasource node "${node.title}" (${node.id}): ${why}` });
      if (ref.providerType !== 'website_crawl') {
        return void emit({ event: 'datasource_error', error: `datasource node "${node.title}" (${node.id}) reads uploaded files: upload each with POST /datasets/pipeline/file-upload and pass its id as reference in datasource_info_list of POST /datasets/{dataset_id}/pipeline/run` });
      }
      let pages: CrawledPage[];
      try {
        pages = await this.#d.crawlers.crawl(ref.providerName, crawlParams(params), (total, completed) => emit({ event: 'datasource_processing', total, completed }), signal);
      } catch (err) {
        if (signal.aborted) throw err;
        return void emit({ event: 'datasource_error', error: (err as Error).message });
      }
      emit({ event: 'datasource_completed', data: pages, total: pages.length, completed: pages.length, time_consuming: ((this.#d.clock.now() - started) / 1000).toFixed(2) });
    };
  }

  /** Checks a run request before anything starts (named 400s). */
  async checkRun(ds: DatasetTable, req: PipelineRunRequest): Promise<{ graph: Graph; row: DatasetPipeline; node: GraphNode; rag: PoolData['rag']; items: Record<string, unknown>[] }> {
    const { row, p, graph } = await this.#load(ds);
    const node = this.#node(graph, req.start_node_id, 'start_node_id');
    const type = req.datasource_type;
    if (!(DATASOURCE_TYPES as readonly string[]).includes(String(type))) throw invalidParam(`datasource_type must be one of ${DATASOURCE_TYPES.join(', ')}.`);
    const ref = datasourceRefOf(node.data);
    if (type !== ref.providerType) throw invalidParam(`datasource_type is ${String(type)}, but start node ${node.id} reads ${ref.providerType}.`);
    const list = req.datasource_info_list;
    if (!Array.isArray(list) || list.length === 0) throw invalidParam('datasource_info_list must be a non-empty list.');
    const max = this.#d.limits.maxItems;
    if (list.length > max) throw invalidParam(`datasource_info_list has ${list.length} items, more than PIPELINE_RUN_MAX_ITEMS (${max}).`);
    const items = list.map((it, i) => {
      if (!isObject(it)) throw invalidParam(`datasource_info_list[${i}] must be an object.`);
      if (type === 'local_file') {
        const ref = [it.reference, it.related_id].find((x) => typeof x === 'string' && x !== '');
        if (!ref) throw invalidParam(`datasource_info_list[${i}].reference is required (the id from POST /datasets/pipeline/file-upload).`);
      }
      if (type === 'website_crawl' && !(typeof it.url === 'string' && it.url) && !(typeof it.source_url === 'string' && it.source_url)) throw invalidParam(`datasource_info_list[${i}].url is required.`);
      return it;
    });
    return { graph, row, node, rag: this.#ragInputs(p.variables, node.id, req.inputs), items };
  }

  /**
   * `POST /datasets/{id}/pipeline/run`: one pipeline run per item of `datasource_info_list`, in
   * order, each streaming its frames through `emit`; answers each run's result.
   */
  async run(ds: DatasetTable, req: PipelineRunRequest, createdBy: string, emit: (f: PipelineFrame) => void, signal: AbortSignal): Promise<PipelineRunResult[]> {
    const { graph, row, node, rag, items } = await this.checkRun(ds, req);
    const type = String(req.datasource_type);
    const results: PipelineRunResult[] = [];
    for (const item of items) {
      if (signal.aborted) break;
      const runId = newId();
      const batch = { name: itemName(type, item) };
      const info = type === 'local_file' ? { ...item, related_id: item.reference ?? item.related_id, transfer_method: 'local_file' } : { ...item, source_url: item.source_url ?? item.url };
      const pool: PoolData = {
        sys: { datasource_type: type, datasource_info: info, dataset_id: ds.id, invoke_from: 'published', user_id: createdBy, workflow_id: row.id, workflow_run_id: runId },
        rag,
      };
      const ports: EnginePorts = {
        ...this.#d.basePorts(),
        files: {
          describe: (ref) => this.#d.describeFile(ref, ds.workspace_id),
          extractText: (ref, _scope, s) => this.#d.extractText(ref, ds.workspace_id, s),
        },
        tools: this.#tools(ds.workspace_id),
        pipeline: this.#port(ds, batch, type, createdBy),
        humanInput: undefined,
        memory: undefined,
      };
      results.push(
        await runPipeline({
          graph,
          startNodeId: node.id,
          pool,
          ports,
          limits: { maxSteps: this.#d.limits.maxSteps, maxTimeMs: this.#d.limits.maxTimeMs },
          runId,
          taskId: newId(),
          workflowId: row.id,
          scopeId: ds.workspace_id,
          inputs: (isObject(req.inputs) ? req.inputs : {}) as Record<string, unknown>,
          signal,
          emit,
        }),
      );
    }
    return results;
  }

  /** The pipeline port of one run: its item read, its chunks written as a document of `ds`. */
  #port(ds: DatasetTable, item: { name: string }, type: string, createdBy: string): KnowledgePipelinePort {
    const d = this.#d;
    return {
      async datasource(ref, _type, info, params, signal) {
        if (ref.providerType === 'local_file') {
          const id = String(info.related_id ?? '');
          const f = await d.uploads.find(id);
          if (!f || f.workspaceId !== ds.workspace_id || f.appId !== null) throw new Error(`File is not exist: no pipeline file ${id} (upload it with POST /datasets/pipeline/file-upload)`);
          if (!isObject(info) || typeof info.name !== 'string' || !info.name) item.name = f.name;
          return { file: await d.describeFile({ transfer_method: 'local_file', upload_file_id: f.id }, ds.workspace_id) };
        }
        // a page whose content the caller sent (Dify's crawl result) is taken as is; else the page is read now
        if (typeof info.content === 'string' && info.content !== '') {
          return { source_url: String(info.source_url ?? ''), content: info.content, title: String(info.title ?? ''), description: String(info.description ?? '') };
        }
        const pages = await d.crawlers.crawl(ref.providerName, { ...crawlParams(params), url: info.source_url, crawl_subpages: false }, () => undefined, signal);
        const page = pages[0];
        if (!page) throw new Error(`${ref.providerName} returned no page for ${String(info.source_url)}`);
        if (!(typeof info.title === 'string' && info.title) && page.title) item.name = page.title;
        return { ...page };
      },
      async index(chunks, settings, signal) {
        let prepared;
        try {
          prepared = preparedChunksOf(settings.chunkStructure, chunks, d.limits.segmentMaxChars);
        } catch (err) {
          throw new Error(`the chunks cannot be indexed: ${(err as Error).message}`);
        }
        if ((prepared.kind === 'flat' ? prepared.chunks.length : prepared.groups.length) === 0) throw new Error('Chunks is required: the chunker produced no chunks.');
        const name = item.name.slice(0, 255) || 'untitled';
        const file = await d.documents.storeChunks(ds.workspace_id, name, encodePreparedChunks(prepared), createdBy);
        const fresh = await d.datasets.get(ds.workspace_id, ds.id);
        const accepted = await d.documents.create(
          fresh,
          file,
          { name, docForm: DOC_FORM_OF[settings.chunkStructure], indexingTechnique: fresh.indexing_technique ?? settings.indexingTechnique ?? 'economy' },
          createdBy,
          { processRule: JSON.stringify(PREPARED_RULE), dataSourceType: type === 'local_file' ? 'upload_file' : type },
        );
        const doc = accepted.document;
        // indexed now, so the node ends when its segments are searchable; when a job worker claimed
        // the run first, the node waits for it (bounded by the run's time limit, which aborts `signal`)
        await d.indexer.run(`${doc.id}:1`, signal);
        let after = await d.documents.find(ds.id, doc.id);
        while (after && after.indexing_status !== 'completed' && after.indexing_status !== 'error') {
          signal.throwIfAborted();
          await new Promise((resolve) => setTimeout(resolve, 100));
          after = await d.documents.find(ds.id, doc.id);
        }
        if (after?.indexing_status === 'error') throw new Error(`document ${doc.id} (${name}) failed to index: ${after.error ?? 'unknown error'}`);
        return {
          dataset_id: ds.id,
          dataset_name: fresh.name,
          batch: accepted.batch,
          document_id: doc.id,
          document_name: doc.name,
          created_at: Math.floor(doc.created_at / 1000),
          display_status: after?.indexing_status === 'completed' ? 'completed' : (after?.indexing_status ?? 'waiting'),
        };
      },
    };
  }
}

/** A document's name from its item: the given name or title, else the file's or page's own (set once read). */
function itemName(type: string, item: Record<string, unknown>): string {
  const pick = type === 'local_file' ? item.name : item.title;
  if (typeof pick === 'string' && pick.trim()) return pick.trim();
  return type === 'website_crawl' ? String(item.url ?? item.source_url ?? 'untitled') : 'untitled';
}

/** Dify's crawl parameter names across providers (`crawl_sub_pages` for Jina, `crawl_subpages` for Firecrawl). */
function crawlParams(params: Record<string, unknown>): Record<string, unknown> {
  return { ...params, crawl_subpages: params.crawl_subpages ?? params.crawl_sub_pages };
}

/** A pipeline input in its variable's type: numbers and checkboxes from their text, text within `max_length`. */
function typed(v: PipelineVariable, value: unknown): unknown {
  const at = `inputs.${v.variable}`;
  switch (v.type) {
    case 'number': {
      const n = typeof value === 'number' ? value : Number(value);
      if (!Number.isFinite(n) || (typeof value === 'string' && value.trim() === '')) throw invalidParam(`${at} must be a number.`);
      return n;
    }
    case 'checkbox':
      if (typeof value === 'boolean') return value;
      if (value === 'true' || value === 'false') return value === 'true';
      throw invalidParam(`${at} must be true or false.`);
    case 'text-input':
    case 'paragraph':
    case 'select': {
      if (typeof value !== 'string') throw invalidParam(`${at} must be a string.`);
      const max = typeof v.max_length === 'number' ? v.max_length : undefined;
      if (max !== undefined && value.length > max) throw invalidParam(`${at} must be at most ${max} characters.`);
      if (v.type === 'select' && Array.isArray(v.options) && v.options.length > 0 && !v.options.includes(value)) throw invalidParam(`${at} must be one of ${v.options.join(', ')}.`);
      return v.type === 'text-input' ? value.replace(/\\n/g, '\n') : value;
    }
    default:
      return value;
  }
}
