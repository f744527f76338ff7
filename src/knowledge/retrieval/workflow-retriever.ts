import type { Kysely } from 'kysely';
import type { Database } from '../../store/schema.js';
import type { DatasetSummary, KnowledgeHit, KnowledgeMetadataFilter, KnowledgeRetrieveOptions, KnowledgeRetriever } from '../../engine/types.js';
import type { DatasetTable } from '../../store/schema.js';
import type { DatasetService } from '../datasets.js';
import type { AppStore } from '../../apps/app-store.js';
import type { MetadataService } from '../documents/metadata.js';
import { parseMetadataFilter, type MetadataFilter } from './metadata-filter.js';
import type { RetrievalModel } from './retrieval-model.js';
import type { RetrievalService, RetrievedSegment } from './retrieval.js';
import { countHits, type HitCounter } from './hit-counter.js';
import { DatasetStore } from '../dataset-store.js';
import { DocumentStore } from '../documents/document-store.js';

/**
 * The engine's knowledge port over `RetrievalService`: resolves the app's datasets (same
 * workspace only), searches each group of datasets that share retrieval settings, merges by score.
 */
export class WorkflowKnowledgeRetriever implements KnowledgeRetriever {
  readonly #datasetRows: DatasetStore;
  readonly #documents: DocumentStore;
  readonly #datasets: DatasetService;
  readonly #apps: Pick<AppStore, 'workspaceOf'>;
  readonly #retrieval: RetrievalService;
  readonly #hits: HitCounter;
  readonly #metadata: MetadataService;
  readonly #topKMax: number;

  constructor(deps: { db: Kysely<Database>; apps: Pick<AppStore, 'workspaceOf'>; datasets: DatasetService; retrieval: RetrievalService; hits: HitCounter; metadata: MetadataService; topKMax: number }) {
    this.#datasetRows = new DatasetStore(deps.db);
    this.#documents = new DocumentStore(deps.db);
    this.#apps = deps.apps;
    this.#metadata = deps.metadata;
    this.#datasets = deps.datasets;
    this.#retrieval = deps.retrieval;
    this.#hits = deps.hits;
    this.#topKMax = deps.topKMax;
  }

  async retrieve(datasetIds: readonly string[], query: string, opts: KnowledgeRetrieveOptions, signal?: AbortSignal) {
    if (opts.topK !== undefined && opts.topK > this.#topKMax) {
      throw new Error(`top_k must be at most ${this.#topKMax} (RETRIEVAL_TOP_K_MAX).`);
    }
    const ids = [...new Set(datasetIds)];
    const rows = await this.#visible(ids, opts.appId);
    const metadataFilter = opts.metadataFilter ? toMetadataFilter(opts.metadataFilter) : undefined;
    const byId = new Map(rows.map((r) => [r.id, r]));
    const missing = ids.filter((id) => !byId.has(id));
    if (missing.length > 0) return { hits: [], missing };

    const groups = new Map<string, { model: RetrievalModel; ids: string[] }>();
    for (const ds of rows) {
      const own = this.#datasets.retrievalModel(ds);
      const model: RetrievalModel = {
        ...own,
        topK: opts.topK ?? own.topK,
        ...(opts.scoreThreshold !== undefined
          ? { scoreThresholdEnabled: opts.scoreThreshold !== null, scoreThreshold: opts.scoreThreshold ?? 0 }
          : {}),
        ...(opts.weights ? { vectorWeight: opts.weights.vector, keywordWeight: opts.weights.keyword } : {}),
        ...(metadataFilter ? { metadataFilter } : {}),
      };
      const key = JSON.stringify(model);
      const g = groups.get(key) ?? { model, ids: [] };
      g.ids.push(ds.id);
      groups.set(key, g);
    }
    const found: RetrievedSegment[] = [];
    for (const g of groups.values()) {
      signal?.throwIfAborted();
      found.push(...(await this.#retrieval.retrieve(g.ids, query, g.model)));
    }
    const topK = opts.topK ?? Math.max(...[...groups.values()].map((g) => g.model.topK));
    // As Dify: every segment the node returns gets one hit; the results report the count including it.
    const best = countHits(this.#hits, found.sort((a, b) => b.score - a.score).slice(0, topK));
    const sourceTypes = await this.#documents.sourceTypes(best.map((s) => s.documentId));
    const docMetadata = new Map<string, Readonly<Record<string, unknown>>>();
    for (const ds of rows) {
      const docIds = best.filter((s) => s.datasetId === ds.id).map((s) => s.documentId);
      for (const [id, values] of await this.#metadata.docMetadataColumns(ds, docIds)) docMetadata.set(id, values);
    }
    const hits: KnowledgeHit[] = best.map((s) => ({
      datasetId: s.datasetId,
      datasetName: byId.get(s.datasetId)?.name ?? '',
      documentId: s.documentId,
      documentName: s.documentName,
      dataSourceType: sourceTypes.get(s.documentId) ?? 'upload_file',
      segmentId: s.segmentId,
      segmentPosition: s.position,
      // As Dify: a Q&A segment reads `question:<q> \nanswer:<a>`.
      content: s.answer ? `question:${s.content} \nanswer:${s.answer}` : s.content,
      score: s.score,
      hitCount: s.hitCount,
      wordCount: s.wordCount,
      indexNodeHash: s.hash,
      docMetadata: docMetadata.get(s.documentId) ?? null,
      ...(s.childChunks ? { childChunks: s.childChunks } : {}),
    }));
    return { hits, missing: [] };
  }

  async metadataFields(datasetIds: readonly string[], appId: string): Promise<{ fields: { name: string; type: string }[]; missing: string[] }> {
    const ids = [...new Set(datasetIds)];
    const rows = await this.#visible(ids, appId);
    const byName = new Map<string, string>();
    for (const list of (await this.#metadata.forDatasets(rows)).values()) {
      for (const f of list) if (!byName.has(f.name)) byName.set(f.name, f.type);
    }
    const seen = new Set(rows.map((r) => r.id));
    return { fields: [...byName].map(([name, type]) => ({ name, type })), missing: ids.filter((id) => !seen.has(id)) };
  }

  async describe(datasetIds: readonly string[], appId: string): Promise<{ datasets: DatasetSummary[]; missing: string[] }> {
    const ids = [...new Set(datasetIds)];
    const byId = new Map((await this.#visible(ids, appId)).map((r) => [r.id, r]));
    const datasets = ids.flatMap((id) => {
      const r = byId.get(id);
      return r ? [{ id, name: r.name, description: r.description }] : [];
    });
    return { datasets, missing: ids.filter((id) => !byId.has(id)) };
  }

  /** The datasets among `ids` that the app can see (those of its workspace). */
  async #visible(ids: readonly string[], appId: string): Promise<DatasetTable[]> {
    if (ids.length === 0) return [];
    const workspaceId = await this.#apps.workspaceOf(appId);
    if (workspaceId === undefined) return [];
    return this.#datasetRows.findMany(workspaceId, ids);
  }
}

/**
 * The node's conditions as the search's filter, checked as the Service API checks
 * `metadata_filtering_conditions` (an error names the field). Conditions a model extracted are
 * checked one by one and the bad ones dropped. No condition left: no filter.
 */
function toMetadataFilter(f: KnowledgeMetadataFilter): MetadataFilter | undefined {
  const at = 'metadata_filtering_conditions';
  if (f.source === 'manual') return parseMetadataFilter({ logical_operator: f.logical_operator, conditions: f.conditions }, at);
  const conditions = f.conditions.flatMap((c) => {
    try {
      return parseMetadataFilter({ logical_operator: f.logical_operator, conditions: [c] }, at)?.conditions ?? [];
    } catch {
      return [];
    }
  });
  return conditions.length > 0 ? { logicalOperator: f.logical_operator, conditions } : undefined;
}
