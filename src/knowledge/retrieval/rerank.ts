import { contentTerms, queryTerms } from '../index/keyword-index.js';
import type { RerankClient } from './rerank-client.js';

export const RERANK_MODES = ['reranking_model', 'weighted_score'] as const;
export type RerankMode = (typeof RERANK_MODES)[number];

/**
 * Dify's reranking settings (`reranking_enable`, `reranking_mode`, `reranking_model`, `weights`),
 * as a knowledge-retrieval node, a dataset's `retrieval_model` or a `/retrieve` request give them.
 */
export interface RerankConfig {
  readonly enabled: boolean;
  readonly mode: RerankMode;
  /** `reranking_mode: reranking_model`: the provider (DSL name or plugin id) and model; null when none is named. */
  readonly model: { readonly provider: string; readonly model: string } | null;
  /** `reranking_mode: weighted_score`: the vector and keyword weights (Dify's defaults 0.7 / 0.3 when absent). */
  readonly weights: { readonly vector: number; readonly keyword: number } | null;
}

export const RERANK_OFF: RerankConfig = { enabled: false, mode: 'reranking_model', model: null, weights: null };

export interface RerankDeps {
  readonly reranker: Pick<RerankClient, 'rerank' | 'problem'>;
  readonly signal?: AbortSignal;
}

/** How many hits to keep and the lowest score kept (null: no threshold). */
export interface RerankLimits {
  readonly topK: number;
  readonly scoreThreshold: number | null;
}

export interface RerankOutcome<H> {
  /** Best first, at most `topK`, each with its new score. */
  readonly hits: H[];
  /** Set when reranking was asked for but could not run (no rerank model): what happened instead. */
  readonly note: string | null;
}

/** Reranking off (Dify's `calculate_vector_score`): by score, the threshold applied, the `topK` best. */
export function orderByScore<H extends { readonly score: number }>(hits: readonly H[], limits: RerankLimits): H[] {
  const t = limits.scoreThreshold;
  return [...hits].filter((h) => t === null || h.score >= t).sort((a, b) => b.score - a.score).slice(0, limits.topK);
}

/**
 * The keyword half of Dify's weighted score (`WeightRerankRunner._calculate_keyword_score`): the
 * cosine of the query's and each text's TF-IDF vectors over the distinct content words of these
 * texts, IDF `ln((1 + N) / (1 + df)) + 1`. Linear in the total length of the texts.
 */
export function keywordScores(query: string, texts: readonly string[]): number[] {
  const docs = texts.map(contentTerms);
  const df = new Map<string, number>();
  for (const d of docs) for (const w of d) df.set(w, (df.get(w) ?? 0) + 1);
  const n = docs.length;
  const idf = (w: string) => {
    const c = df.get(w);
    return c === undefined ? 0 : Math.log((1 + n) / (1 + c)) + 1;
  };
  const q = new Map(queryTerms(query).map((w) => [w, idf(w)]));
  const qNorm = Math.sqrt([...q.values()].reduce((s, v) => s + v * v, 0));
  return docs.map((d) => {
    let dot = 0;
    let norm = 0;
    for (const w of d) {
      const v = idf(w);
      norm += v * v;
      const qv = q.get(w);
      if (qv !== undefined) dot += qv * v;
    }
    const denominator = qNorm * Math.sqrt(norm);
    return denominator === 0 ? 0 : dot / denominator;
  });
}

/**
 * Reranks knowledge hits as Dify's `DataPostProcessor` does. `reranking_model`: the rerank model
 * scores every hit's content against the query and its order and scores replace the search's;
 * `weighted_score`: `vector_weight × search score + keyword_weight × keyword score`. Either way the
 * score threshold then applies and the `topK` best are kept. Reranking off, or a rerank model that
 * is not named or not configured here: ordered by score as Dify does with reranking off, and
 * `note` says why. A rerank server that fails throws `RerankInvokeError`.
 *
 * Hits are any objects with `content` and `score` (a segment, a node's hit, an external record);
 * they come back as copies with the new score.
 */
export async function rerankHits<H extends { readonly content: string; readonly score: number }>(
  hits: readonly H[],
  query: string,
  config: RerankConfig,
  deps: RerankDeps,
  limits: RerankLimits,
): Promise<RerankOutcome<H>> {
  if (!config.enabled) return { hits: orderByScore(hits, limits), note: null };
  const t = limits.scoreThreshold;
  if (config.mode === 'weighted_score') {
    const w = config.weights ?? { vector: 0.7, keyword: 0.3 };
    const keyword = keywordScores(query, hits.map((h) => h.content));
    const scored = hits.map((h, i) => ({ ...h, score: round(w.vector * h.score + w.keyword * keyword[i]!) }));
    return { hits: scored.filter((h) => t === null || h.score >= t).sort((a, b) => b.score - a.score).slice(0, limits.topK), note: null };
  }
  const fallback = (why: string): RerankOutcome<H> => ({ hits: orderByScore(hits, limits), note: `reranking skipped (${why}); hits ordered by their retrieval score, as with reranking off` });
  if (!config.model || config.model.provider === '' || config.model.model === '') return fallback('reranking_model names no rerank model');
  const problem = deps.reranker.problem(config.model.provider);
  if (problem) return fallback(problem);
  if (hits.length === 0) return { hits: [], note: null };
  const ranked = await deps.reranker.rerank(config.model.provider, config.model.model, query, hits.map((h) => h.content), limits.topK, deps.signal);
  const out: H[] = [];
  const seen = new Set<number>();
  for (const r of ranked) {
    if (seen.has(r.index) || (t !== null && r.score < t)) continue;
    seen.add(r.index);
    out.push({ ...hits[r.index]!, score: round(r.score) });
  }
  return { hits: out.sort((a, b) => b.score - a.score).slice(0, limits.topK), note: null };
}

function round(x: number): number {
  return Math.round(x * 1e6) / 1e6;
}
