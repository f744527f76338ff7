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
import type { RerankClient } from './rerank-client.js';
import { ExternalRetrievalFailure, externalOf, type ExternalKnowledge, type ExternalKnowledgeClient } from '../external/external-knowledge.js';
import { rerankHits } from './rerank.js';

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
  readonly #reranker: RerankClient;
  readonly #external: ExternalKnowledgeClient;

  constructor(deps: { db: Kysely<Database>; apps: Pick<AppStore, 'workspaceOf'>; datasets: DatasetService; retrieval: RetrievalService; reranker: RerankClient; external: ExternalKnowledgeClient; hits: HitCounter; metadata: MetadataService; topKMax: number }) {
    this.#reranker = deps.reranker;
    this.#external = deps.external;
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

    const notes: string[] = [];
    const rerankAcross = opts.reranking?.enabled === true && rows.length > 1;
    const groups = new Map<string, { model: RetrievalModel; ids: string[] }>();
    const externals: { ds: DatasetTable; ext: ExternalKnowledge }[] = [];
    for (const ds of rows) {
      const ext = externalOf(ds);
      if (ext) {
        externals.push({ ds, ext });
        continue;
      }
      let own = this.#datasets.retrievalModel(ds);
      // A dataset's own rerank model that is not configured here: its hits keep their search order (noted).
      const r = own.rerank;
      if (r.enabled && r.mode === 'reranking_model') {
        const problem = r.model ? this.#reranker.problem(r.model.provider) : 'its retrieval_model.reranking_model names no rerank model';
        if (problem) {
          notes.push(`dataset ${ds.id}: reranking skipped (${problem})`);
          own = { ...own, rerank: { ...r, enabled: false } };
        }
      }
      const model: RetrievalModel = {
        ...own,
        topK: opts.topK ?? own.topK,
        // Reranked across datasets, the node's threshold applies to the reranked scores (as Dify), not to each search.
        ...(opts.scoreThreshold !== undefined && !rerankAcross
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
    const found: Candidate[] = [];
    for (const g of groups.values()) {
      signal?.throwIfAborted();
      for (const seg of await this.#retrieval.retrieve(g.ids, query, g.model, signal)) found.push({ content: seg.content, score: seg.score, seg });
    }
    const externalNotes: string[] = [];
    for (const { ds, ext } of externals) {
      signal?.throwIfAborted();
      // The node's threshold, or the dataset's own when the node's applies to reranked scores (as Dify).
      const threshold = opts.scoreThreshold !== undefined && !rerankAcross ? opts.scoreThreshold ?? 0 : ext.scoreThresholdEnabled ? ext.scoreThreshold : 0;
      try {
        // the node's metadata conditions go to the API as Dify's `metadata_condition`
        const mc = opts.metadataFilter ? { metadataCondition: { logical_operator: opts.metadataFilter.logical_operator, conditions: opts.metadataFilter.conditions } } : {};
        const records = await this.#external.retrieve(ext, query, { topK: opts.topK ?? ext.topK, scoreThreshold: threshold, ...mc }, signal);
        for (const r of records) found.push({ content: r.content, score: r.score, ext: externalHit(ds, r) });
      } catch (err) {
        // As Dify: an external API that does not answer with records gives none; process_data says why.
        if (!(err instanceof ExternalRetrievalFailure)) throw err;
        externalNotes.push(`dataset ${ds.id}: ${err.message}`);
      }
    }
    const topK = opts.topK ?? Math.max(...[...groups.values()].map((g) => g.model.topK), ...externals.map((e) => e.ext.topK));
    let ranked: Candidate[];
    if (opts.reranking && rerankAcross) {
      // As Dify: the hits of several datasets are reranked together (one dataset's own settings already ranked them).
      const threshold = opts.scoreThreshold ?? null;
      const out = await rerankHits(found, query, opts.reranking, { reranker: this.#reranker, ...(signal ? { signal } : {}) }, { topK, scoreThreshold: threshold });
      if (out.note) notes.push(out.note);
      ranked = out.hits;
    } else {
      ranked = found.sort((a, b) => b.score - a.score).slice(0, topK);
    }
    // As Dify: every segment the node returns gets one hit; the results report the count including it.
    const counted = new Map(countHits(this.#hits, ranked.flatMap((c) => (c.seg ? [{ ...c.seg, score: c.score }] : []))).map((s) => [s.segmentId, s]));
    const best = [...counted.values()];
    const sourceTypes = await this.#documents.sourceTypes(best.map((s) => s.documentId));
    const docMetadata = new Map<string, Readonly<Record<string, unknown>>>();
    for (const ds of rows) {
      const docIds = best.filter((s) => s.datasetId === ds.id).map((s) => s.documentId);
      if (docIds.length > 0) for (const [id, values] of await this.#metadata.docMetadataColumns(ds, docIds)) docMetadata.set(id, values);
    }
    const hits: KnowledgeHit[] = ranked.map((c) => {
      if (c.ext) return { ...c.ext, score: c.score };
      const s = counted.get(c.seg!.segmentId)!;
      return {
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
      };
    });
    return { hits, missing: [], ...(notes.length > 0 ? { rerankingNote: notes.join('; ') } : {}), ...(externalNotes.length > 0 ? { externalNote: externalNotes.join('; ') } : {}) };
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

/** A hit before ranking: one of the datasets' segments, or an external knowledge record. */
interface Candidate {
  readonly content: string;
  readonly score: number;
  readonly seg?: RetrievedSegment;
  readonly ext?: KnowledgeHit;
}

/** An external record as a node hit, as Dify's node reports one (`data_source_type: external`). */
function externalHit(ds: DatasetTable, r: { content: string; title: string; score: number; metadata: Readonly<Record<string, unknown>> | null }): KnowledgeHit {
  const docId = r.metadata?.document_id;
  return {
    datasetId: ds.id,
    datasetName: ds.name,
    documentId: typeof docId === 'string' ? docId : r.title,
    documentName: r.title,
    dataSourceType: 'external',
    segmentId: '',
    segmentPosition: 0,
    content: r.content,
    score: r.score,
    hitCount: 0,
    wordCount: r.content.length,
    indexNodeHash: '',
    docMetadata: r.metadata,
  };
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
