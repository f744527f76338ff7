import type { Kysely } from 'kysely';
import type { Database } from '../../store/schema.js';
import { invalidParam } from '../../infra/errors.js';
import type { Embedder } from '../ingest/embedder.js';
import type { Hit, KeywordIndex } from '../index/keyword-index.js';
import { searchAmongDocuments, type VectorIndex } from '../index/vector-index.js';
import type { MetadataService } from '../documents/metadata.js';
import type { RetrievalModel } from './retrieval-model.js';
import type { HitTable } from './hit-counter.js';
import { DatasetStore } from '../dataset-store.js';
import { SegmentStore } from '../documents/segment-store.js';
import { providerNotInitialize } from '../../llm/errors.js';
import type { RerankClient } from './rerank-client.js';
import { rerankHits } from './rerank.js';

/** A matched child chunk of a parent-child document. */
export interface RetrievedChild {
  readonly id: string;
  readonly content: string;
  /** 1-based position within its parent. */
  readonly position: number;
  readonly score: number;
}

export interface RetrievedSegment {
  readonly segmentId: string;
  readonly documentId: string;
  readonly datasetId: string;
  readonly documentName: string;
  readonly position: number;
  readonly content: string;
  readonly wordCount: number;
  readonly tokens: number;
  readonly hash: string;
  readonly hitCount: number;
  readonly createdAt: number;
  readonly completedAt: number | null;
  /** 0..1, higher is better. */
  readonly score: number;
  /** Where `segmentId` lives: a segment, or the parent chunk of the matched children. */
  readonly hitTable: HitTable;
  /** Parent-child documents: the matched children of this parent, best first. */
  readonly childChunks?: readonly RetrievedChild[];
  /** Q&A documents: the answer (`content` is the question). */
  readonly answer?: string | null;
}

/**
 * Searches knowledge bases. `keyword_search` / `full_text_search` use the keyword index,
 * `semantic_search` the vector index, `hybrid_search` both with weighted scores. Datasets indexed
 * `economy` have no vectors, so every method falls back to keyword search there (as in Dify).
 * The workflow node `knowledge-retrieval` calls `retrieve` directly.
 */
export class RetrievalService {
  readonly #db: Kysely<Database>;
  readonly #datasets: DatasetStore;
  readonly #embedder: Embedder;
  readonly #keyword: KeywordIndex;
  readonly #vectors: VectorIndex;
  readonly #maxQuery: number;
  readonly #metadata: MetadataService;
  readonly #reranker: RerankClient;

  constructor(db: Kysely<Database>, embedder: Embedder, keyword: KeywordIndex, vectors: VectorIndex, maxQueryChars: number, metadata: MetadataService, reranker: RerankClient) {
    this.#db = db;
    this.#reranker = reranker;
    this.#datasets = new DatasetStore(db);
    this.#metadata = metadata;
    this.#maxQuery = maxQueryChars;
    this.#embedder = embedder;
    this.#keyword = keyword;
    this.#vectors = vectors;
  }

  /**
   * The `topK` best segments of these datasets for `query`. A `retrieval_model` with a rerank model
   * (`reranking_enable`, `reranking_mode: reranking_model`) has it reorder what semantic, full-text
   * and hybrid search found, as Dify's retrieval service does; one whose provider is not configured
   * here is `provider_not_initialize`, a rerank server that fails `completion_request_error`.
   */
  async retrieve(datasetIds: readonly string[], query: string, model: RetrievalModel, signal?: AbortSignal): Promise<RetrievedSegment[]> {
    if (typeof query !== 'string' || query.trim() === '') throw invalidParam('query is required.');
    if (query.length > this.#maxQuery) throw invalidParam(`query must be at most ${this.#maxQuery} characters.`);
    if (datasetIds.length === 0) return [];
    const datasets = await this.#datasets.techniques(datasetIds);
    const semanticIds = datasets.filter((d) => d.indexingTechnique === 'high_quality').map((d) => d.id);
    const economyIds = datasets.filter((d) => d.indexingTechnique !== 'high_quality').map((d) => d.id);
    const k = model.topK;
    const method = model.searchMethod;
    // A metadata filter narrows every search to the documents that pass it (none: nothing found, as Dify).
    let only: string[] | undefined;
    if (model.metadataFilter && model.metadataFilter.conditions.length > 0) {
      only = [...(await this.#metadata.matchingDocuments(datasets.map((d) => d.id), model.metadataFilter))];
      if (only.length === 0) return [];
    }
    const vectorSearch = (ids: string[], vector: Float32Array, n: number) =>
      only ? searchAmongDocuments(this.#db, only, vector, n) : this.#vectors.search(ids, vector, n);
    let hits: Hit[] = [];
    if (economyIds.length) hits.push(...(await this.#keyword.search(economyIds, query, k, only)));
    if (semanticIds.length) {
      if (method === 'keyword_search' || method === 'full_text_search') {
        hits.push(...(await this.#keyword.search(semanticIds, query, k, only)));
      } else {
        // Hybrid: the keyword search runs while the query is being embedded (a model call).
        const keyword = method === 'hybrid_search' ? this.#keyword.search(semanticIds, query, k * 2, only) : undefined;
        // Settled here so a failed embedding call does not leave the keyword search's rejection unhandled.
        keyword?.catch(() => undefined);
        const [vector] = await this.#embedder.embed([query]);
        const semantic = await vectorSearch(semanticIds, vector!, method === 'hybrid_search' ? k * 2 : k);
        if (!keyword) hits.push(...semantic);
        else hits.push(...combine(semantic, await keyword, model));
      }
    }
    hits.sort((a, b) => b.score - a.score);
    const seen = new Set<string>();
    hits = hits.filter((h) => (seen.has(h.segmentId) ? false : (seen.add(h.segmentId), true)));
    const r = model.rerank;
    if (r.enabled && r.mode === 'reranking_model' && semanticIds.length > 0 && method !== 'keyword_search') {
      const problem = r.model ? this.#reranker.problem(r.model.provider) : 'retrieval_model.reranking_model names no rerank model';
      if (problem) throw providerNotInitialize(problem);
      const loaded = await this.#load(hits);
      const limits = { topK: k, scoreThreshold: model.scoreThresholdEnabled ? model.scoreThreshold : null };
      return (await rerankHits(loaded, query, r, { reranker: this.#reranker, ...(signal ? { signal } : {}) }, limits)).hits;
    }
    if (model.scoreThresholdEnabled) hits = hits.filter((h) => h.score >= model.scoreThreshold);
    hits = hits.slice(0, k);
    return this.#load(hits);
  }

  async #load(hits: Hit[]): Promise<RetrievedSegment[]> {
    if (hits.length === 0) return [];
    const rows = await this.#db
      .selectFrom('segments as s')
      .innerJoin('documents as d', (j) => j.onRef('d.id', '=', 's.document_id').onRef('d.active_generation', '=', 's.generation'))
      .select(['s.id', 's.document_id', 's.dataset_id', 'd.name', 's.position', 's.content', 's.word_count', 's.tokens', 's.hash', 's.hit_count', 's.created_at', 's.completed_at', 's.parent_id', 's.answer'])
      .where('s.id', 'in', hits.map((h) => h.segmentId))
      .execute();
    const byId = new Map(rows.map((r) => [r.id, r]));
    const parentIds = [...new Set(rows.map((r) => r.parent_id).filter((p): p is string => p !== null))];
    const parents = new Map(
      (await new SegmentStore(this.#db).parentsByIds(parentIds)).map((p) => [p.id, p]),
    );
    const out: RetrievedSegment[] = [];
    const grouped = new Map<string, RetrievedChild[]>();
    for (const h of hits) {
      const r = byId.get(h.segmentId);
      // A swap may have removed the segment between search and load: it is simply not returned.
      if (!r) continue;
      const score = Math.round(h.score * 1e6) / 1e6;
      if (r.parent_id !== null) {
        // Parent-child: the parent is returned once, at its best child's rank and score, with its
        // matched children (as Dify does).
        const p = parents.get(r.parent_id);
        if (!p) continue;
        const child = { id: r.id, content: r.content, position: r.position, score };
        const seen = grouped.get(p.id);
        if (seen) {
          seen.push(child);
          continue;
        }
        const children = [child];
        grouped.set(p.id, children);
        out.push({
          segmentId: p.id,
          documentId: p.document_id,
          datasetId: p.dataset_id,
          documentName: r.name,
          position: p.position,
          content: p.content,
          wordCount: p.word_count,
          tokens: p.tokens,
          hash: p.hash,
          hitCount: p.hit_count,
          createdAt: p.created_at,
          completedAt: p.completed_at,
          score,
          hitTable: 'parent_chunks',
          childChunks: children,
        });
        continue;
      }
      out.push({
        segmentId: r.id,
        documentId: r.document_id,
        datasetId: r.dataset_id,
        documentName: r.name,
        position: r.position,
        content: r.content,
        wordCount: r.word_count,
        tokens: r.tokens,
        hash: r.hash,
        hitCount: r.hit_count,
        createdAt: r.created_at,
        completedAt: r.completed_at,
        score,
        hitTable: 'segments',
        answer: r.answer,
      });
    }
    return out;
  }
}

/** Hybrid: weighted sum of the semantic score and the keyword score scaled to the best keyword hit. */
function combine(semantic: Hit[], keyword: Hit[], m: RetrievalModel): Hit[] {
  const top = Math.max(...keyword.map((h) => h.score), 0) || 1;
  const scores = new Map<string, number>();
  for (const h of semantic) scores.set(h.segmentId, m.vectorWeight * Math.max(0, h.score));
  for (const h of keyword) scores.set(h.segmentId, (scores.get(h.segmentId) ?? 0) + m.keywordWeight * (h.score / top));
  return [...scores].map(([segmentId, score]) => ({ segmentId, score }));
}
