import type { Kysely } from 'kysely';
import type { Database } from '../store/schema.js';
import { invalidParam } from '../infra/errors.js';
import type { Embedder } from './embedder.js';
import type { Hit, KeywordIndex } from './index/keyword-index.js';
import type { VectorIndex } from './index/vector-index.js';
import type { RetrievalModel } from './retrieval-model.js';

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
}

/**
 * Searches knowledge bases. `keyword_search` / `full_text_search` use the keyword index,
 * `semantic_search` the vector index, `hybrid_search` both with weighted scores. Datasets indexed
 * `economy` have no vectors, so every method falls back to keyword search there (as in Dify).
 * The workflow node `knowledge-retrieval` calls `retrieve` directly.
 */
export class RetrievalService {
  readonly #db: Kysely<Database>;
  readonly #embedder: Embedder;
  readonly #keyword: KeywordIndex;
  readonly #vectors: VectorIndex;
  readonly #maxQuery: number;

  constructor(db: Kysely<Database>, embedder: Embedder, keyword: KeywordIndex, vectors: VectorIndex, maxQueryChars: number) {
    this.#db = db;
    this.#maxQuery = maxQueryChars;
    this.#embedder = embedder;
    this.#keyword = keyword;
    this.#vectors = vectors;
  }

  async retrieve(datasetIds: readonly string[], query: string, model: RetrievalModel): Promise<RetrievedSegment[]> {
    if (typeof query !== 'string' || query.trim() === '') throw invalidParam('query is required.');
    if (query.length > this.#maxQuery) throw invalidParam(`query must be at most ${this.#maxQuery} characters.`);
    if (datasetIds.length === 0) return [];
    const datasets = await this.#db.selectFrom('datasets').select(['id', 'indexing_technique']).where('id', 'in', datasetIds).execute();
    const semanticIds = datasets.filter((d) => d.indexing_technique === 'high_quality').map((d) => d.id);
    const economyIds = datasets.filter((d) => d.indexing_technique !== 'high_quality').map((d) => d.id);
    const k = model.topK;
    const method = model.searchMethod;
    let hits: Hit[] = [];
    if (economyIds.length) hits.push(...(await this.#keyword.search(economyIds, query, k)));
    if (semanticIds.length) {
      if (method === 'keyword_search' || method === 'full_text_search') {
        hits.push(...(await this.#keyword.search(semanticIds, query, k)));
      } else {
        const [vector] = await this.#embedder.embed([query]);
        const semantic = await this.#vectors.search(semanticIds, vector!, method === 'hybrid_search' ? k * 2 : k);
        if (method === 'semantic_search') hits.push(...semantic);
        else hits.push(...combine(semantic, await this.#keyword.search(semanticIds, query, k * 2), model));
      }
    }
    hits.sort((a, b) => b.score - a.score);
    const seen = new Set<string>();
    hits = hits.filter((h) => (seen.has(h.segmentId) ? false : (seen.add(h.segmentId), true)));
    if (model.scoreThresholdEnabled) hits = hits.filter((h) => h.score >= model.scoreThreshold);
    hits = hits.slice(0, k);
    return this.#load(hits);
  }

  async #load(hits: Hit[]): Promise<RetrievedSegment[]> {
    if (hits.length === 0) return [];
    const rows = await this.#db
      .selectFrom('segments as s')
      .innerJoin('documents as d', (j) => j.onRef('d.id', '=', 's.document_id').onRef('d.active_generation', '=', 's.generation'))
      .select(['s.id', 's.document_id', 's.dataset_id', 'd.name', 's.position', 's.content', 's.word_count', 's.tokens', 's.hash', 's.hit_count', 's.created_at', 's.completed_at'])
      .where('s.id', 'in', hits.map((h) => h.segmentId))
      .execute();
    const byId = new Map(rows.map((r) => [r.id, r]));
    const out: RetrievedSegment[] = [];
    for (const h of hits) {
      const r = byId.get(h.segmentId);
      // A swap may have removed the segment between search and load: it is simply not returned.
      if (!r) continue;
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
        score: Math.round(h.score * 1e6) / 1e6,
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
