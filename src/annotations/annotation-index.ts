import type { Kysely } from 'kysely';
import type { Clock } from '../infra/clock.js';
import { vectorFromBase64, vectorToBase64 } from '../knowledge/ingest/embedder.js';
import type { Database } from '../store/schema.js';
import type { EmbeddingModels } from './embedding-models.js';
import { AnnotationStore, type ReplySetting, type StoredAnnotation } from './annotation-store.js';

export type { ReplySetting };

/** The best annotation for a query. */
export interface AnnotationMatch {
  readonly id: string;
  readonly question: string;
  readonly content: string;
  readonly accountId: string | null;
  /** Cosine similarity of the query and the annotation's question. */
  readonly score: number;
}

/** Rounds of catch-up after a swap: each embeds what changed while the previous one ran. */
const SYNC_ROUNDS = 5;

/**
 * The annotations' embeddings (table `annotation_embeddings`): one row per annotation, made from
 * its question with the app's reply model. Every write path calls `sync`, which is idempotent:
 * it embeds what is missing or stale (other model, other question) and drops what has no
 * annotation, so enable jobs, edits and retries converge on the same rows. Search is exact cosine
 * over the app's rows (an app has few annotations).
 */
export class AnnotationIndex {
  readonly #db: Kysely<Database>;
  readonly #store: AnnotationStore;
  readonly #models: EmbeddingModels;
  readonly #clock: Clock;
  readonly #batch: number;
  /** Decoded vectors by annotation, model and question (`vectorKey`). */
  readonly #vectors = new Map<string, Float32Array>();

  constructor(db: Kysely<Database>, models: EmbeddingModels, clock: Clock, batchSize: number) {
    this.#db = db;
    this.#store = new AnnotationStore(db);
    this.#models = models;
    this.#clock = clock;
    this.#batch = batchSize;
  }

  async setting(appId: string): Promise<ReplySetting | undefined> {
    return this.#store.setting(appId);
  }

  /**
   * Enables reply with `setting`: embeds every annotation with its model, then in one transaction
   * writes the setting and the new rows, and runs `inTx` (the job's completion). Catches up after.
   */
  async enable(appId: string, setting: ReplySetting, inTx: (tx: Kysely<Database>) => Promise<void>, signal?: AbortSignal): Promise<void> {
    await this.#syncRound(appId, setting, signal, async (tx) => {
      await this.#store.saveSetting(tx, appId, setting, this.#clock.now());
      await inTx(tx);
    });
    await this.sync(appId, signal);
  }

  /** Disables reply: drops the setting and every embedding of the app in one transaction. */
  async disable(appId: string, inTx: (tx: Kysely<Database>) => Promise<void>): Promise<void> {
    await this.#db.transaction().execute(async (tx) => {
      await this.#store.deleteSetting(tx, appId);
      await this.#store.deleteEmbeddingsOfApp(tx, appId);
      await inTx(tx);
    });
  }

  /** Brings the app's embeddings in line with its annotations and setting (none without a setting). */
  async sync(appId: string, signal?: AbortSignal): Promise<void> {
    for (let i = 0; i < SYNC_ROUNDS; i++) {
      const s = await this.setting(appId);
      if (!s) {
        await this.#store.deleteEmbeddingsOfApp(this.#db, appId);
        return;
      }
      const changed = await this.#syncRound(appId, s, signal, async (tx) => {
        // The setting may have gone (disabled) or changed model while embedding: then write nothing.
        const now = await this.#store.setting(appId, tx);
        if (now?.model !== s.model) throw new SettingChanged();
      }).catch((err: unknown) => {
        if (err instanceof SettingChanged) return true;
        throw err;
      });
      if (!changed) return;
    }
  }

  /** One pass: embeds outside any transaction, then swaps in one. Returns whether anything changed. */
  async #syncRound(appId: string, s: ReplySetting, signal: AbortSignal | undefined, inTx: (tx: Kysely<Database>) => Promise<void>): Promise<boolean> {
    const embedder = this.#models.get(s.provider, s.model);
    const annotations = await this.#store.questions(appId);
    const existing = await this.#store.embeddingKeys(appId);
    const have = new Map(existing.map((e) => [e.annotationId, e]));
    const todo = annotations.filter((a) => {
      const e = have.get(a.id);
      return !e || e.model !== s.model || e.question !== a.question;
    });
    const live = new Set(annotations.map((a) => a.id));
    const orphans = existing.filter((e) => !live.has(e.annotationId)).map((e) => e.annotationId);
    const vectors: Float32Array[] = [];
    for (let i = 0; i < todo.length; i += this.#batch) {
      signal?.throwIfAborted();
      vectors.push(...(await embedder.embed(todo.slice(i, i + this.#batch).map((a) => a.question), signal)));
    }
    let changed = false;
    await this.#db.transaction().execute(async (tx) => {
      await inTx(tx);
      if (orphans.length) {
        await this.#store.deleteEmbeddings(tx, orphans);
        changed = true;
      }
      for (let i = 0; i < todo.length; i++) {
        const a = todo[i]!;
        // Only if the annotation still has the question that was embedded.
        if ((await this.#store.questionOf(tx, a.id)) !== a.question) continue;
        const v = vectors[i]!;
        await this.#store.saveEmbedding(tx, { annotationId: a.id, appId, model: s.model, question: a.question, dims: v.length, embedding: vectorToBase64(v) });
        changed = true;
      }
    });
    return changed;
  }

  /**
   * The annotation whose question is closest to `query`, when reply is enabled and its score
   * reaches the threshold (Dify's `score_threshold or 1`: a threshold of 0 counts as 1).
   */
  async match(appId: string, query: string, signal?: AbortSignal): Promise<AnnotationMatch | undefined> {
    const s = await this.setting(appId);
    if (!s) return undefined;
    const model = s.model;
    const rows = await this.#store.embedded(appId, model);
    if (rows.length === 0) return undefined;
    await this.#loadVectors(model, rows.filter((r) => !this.#vectors.has(vectorKey(r.id, model, r.question))).map((r) => r.id));
    const [q] = await this.#models.get(s.provider, model).embed([query], signal);
    if (!q) return undefined;
    let best: StoredAnnotation | undefined;
    let bestScore = -Infinity;
    for (const r of rows) {
      const v = this.#vectors.get(vectorKey(r.id, model, r.question));
      if (!v || v.length !== q.length) continue;
      let dot = 0;
      for (let i = 0; i < v.length; i++) dot += v[i]! * q[i]!;
      if (dot > bestScore) {
        best = r;
        bestScore = dot;
      }
    }
    // Float32 dot products of equal unit vectors land a hair under 1: compare at 6 decimals.
    bestScore = Math.min(1, Math.round(bestScore * 1e6) / 1e6);
    const threshold = s.scoreThreshold || 1;
    if (!best || bestScore < threshold) return undefined;
    return { id: best.id, question: best.question, content: best.answer, accountId: best.accountId, score: bestScore };
  }

  /** Reads and decodes the stored vectors of these annotations under `model` into the cache. */
  async #loadVectors(model: string, annotationIds: readonly string[]): Promise<void> {
    if (annotationIds.length === 0) return;
    const rows = await this.#store.embeddings(model, annotationIds);
    if (this.#vectors.size + rows.length > MAX_CACHED_VECTORS) this.#vectors.clear();
    for (const r of rows) this.#vectors.set(vectorKey(r.annotationId, model, r.question), vectorFromBase64(r.embedding));
  }
}

/** Decoded annotation vectors kept in memory at most (about 6 KB each at 1,536 dimensions). */
const MAX_CACHED_VECTORS = 20_000;

/** A vector's cache key: the vector of one question under one model never changes, so a cached one is right on every instance. */
function vectorKey(annotationId: string, model: string, question: string): string {
  return `${annotationId}\u0000${model}\u0000${question}`;
}

class SettingChanged extends Error {}
