import { sql, type Kysely } from 'kysely';
import type { Database, Executor } from '../../store/schema.js';
import { vectorFromBase64, vectorToBase64 } from '../ingest/embedder.js';
import type { Hit } from './keyword-index.js';
import { DatasetStore } from '../dataset-store.js';


export interface VectorRow {
  readonly segmentId: string;
  readonly datasetId: string;
  readonly documentId: string;
  readonly vector: Float32Array;
}

/**
 * Vector storage and nearest-neighbour search over unit vectors (cosine). Every vector is also
 * kept in `segment_embeddings` (portable, the source of truth); an engine adapter may keep a
 * faster copy. Only segments of a document's active generation are returned.
 */
export interface VectorIndex {
  /** `sqlite-vec`, `pgvector` or `exact`. */
  readonly kind: string;
  init(): Promise<void>;
  add(db: Executor, model: string, rows: readonly VectorRow[]): Promise<void>;
  removeDocument(db: Executor, documentId: string, generation?: number): Promise<void>;
  removeOtherGenerations(db: Executor, documentId: string, keep: number): Promise<void>;
  /** Drops the vectors of these segments (a deleted segment, or one whose content changed). */
  removeSegments(db: Executor, segmentIds: readonly string[]): Promise<void>;
  search(datasetIds: readonly string[], vector: Float32Array, k: number): Promise<Hit[]>;
}

/** Writes the portable copy (`segment_embeddings`) every adapter keeps. */
export async function insertEmbeddings(db: Executor, model: string, rows: readonly VectorRow[]): Promise<void> {
  for (let i = 0; i < rows.length; i += 100) {
    await db
      .insertInto('segment_embeddings')
      .values(
        rows.slice(i, i + 100).map((r) => ({
          segment_id: r.segmentId,
          dataset_id: r.datasetId,
          document_id: r.documentId,
          model,
          dims: r.vector.length,
          embedding: vectorToBase64(r.vector),
        })),
      )
      .execute();
  }
}

export async function deleteEmbeddings(db: Executor, documentId: string, where: 'all' | { only: number } | { except: number }): Promise<void> {
  const cond = where === 'all' ? sql`` : 'only' in where ? sql` AND generation = ${where.only}` : sql` AND generation <> ${where.except}`;
  await sql`DELETE FROM segment_embeddings WHERE segment_id IN (SELECT id FROM segments WHERE document_id = ${documentId}${cond})`.execute(db);
}

export async function deleteSegmentEmbeddings(db: Executor, segmentIds: readonly string[]): Promise<void> {
  if (segmentIds.length > 0) await db.deleteFrom('segment_embeddings').where('segment_id', 'in', [...segmentIds]).execute();
}

/** Keeps only enabled hits whose segment is in its document's active generation. */
export async function activeOnly(db: Kysely<Database>, hits: Hit[]): Promise<Hit[]> {
  if (hits.length === 0) return hits;
  const rows = await db
    .selectFrom('segments as s')
    .innerJoin('documents as d', (j) => j.onRef('d.id', '=', 's.document_id').onRef('d.active_generation', '=', 's.generation'))
    .select('s.id')
    .where('s.id', 'in', hits.map((h) => h.segmentId))
    .where('s.enabled', '=', 1)
    .where('d.enabled', '=', 1)
    .where('d.archived', '=', 0)
    .execute();
  const ok = new Set(rows.map((r) => r.id));
  return hits.filter((h) => ok.has(h.segmentId));
}

/**
 * Exact cosine search among the served segments of `documentIds` (a metadata filter), read from the
 * portable `segment_embeddings`: the engine index cannot restrict its nearest neighbours to a set of
 * documents, so filtered searches scan the filtered documents' vectors instead.
 */
export async function searchAmongDocuments(db: Kysely<Database>, documentIds: readonly string[], vector: Float32Array, k: number): Promise<Hit[]> {
  const best: Hit[] = [];
  if (k <= 0) return best;
  const unique = [...new Set(documentIds)];
  for (let i = 0; i < unique.length; i += 500) {
    const rows = await db
      .selectFrom('segment_embeddings as e')
      .innerJoin('segments as s', 's.id', 'e.segment_id')
      .innerJoin('documents as d', (j) => j.onRef('d.id', '=', 's.document_id').onRef('d.active_generation', '=', 's.generation'))
      .select(['e.segment_id', 'e.dims', 'e.embedding'])
      .where('e.document_id', 'in', unique.slice(i, i + 500))
      .where('s.enabled', '=', 1)
      .where('d.enabled', '=', 1)
      .where('d.archived', '=', 0)
      .orderBy('e.segment_id')
      .execute();
    for (const r of rows) {
      if (r.dims !== vector.length) continue;
      const v = vectorFromBase64(r.embedding);
      let dot = 0;
      for (let j = 0; j < v.length; j++) dot += v[j]! * vector[j]!;
      keepBest(best, k, r.segment_id, dot);
    }
  }
  return best;
}

/**
 * Adds a hit to `best` (at most `k` hits, best first) where a stable sort by descending score would
 * put it, given hits arrive in their tie-breaking order: it goes after every hit scoring the same.
 */
export function keepBest(best: Hit[], k: number, segmentId: string, score: number): void {
  if (k <= 0 || (best.length >= k && !(score > best[best.length - 1]!.score))) return;
  let at = best.length;
  while (at > 0 && best[at - 1]!.score < score) at--;
  best.splice(at, 0, { segmentId, score });
  if (best.length > k) best.pop();
}

/**
 * Exact cosine search in process. Each dataset's active vectors are loaded once and kept until the
 * dataset's `index_version` changes (every swap and delete bumps it), so several instances stay
 * correct without messaging. Used on PostgreSQL where the pgvector extension cannot be created.
 */
export class ExactVectorIndex implements VectorIndex {
  readonly kind: string = 'exact';
  readonly #db: Kysely<Database>;
  readonly #datasets: DatasetStore;
  readonly #cache = new Map<string, { version: number; ids: string[]; dims: number; matrix: Float32Array }>();

  constructor(db: Kysely<Database>) {
    this.#db = db;
    this.#datasets = new DatasetStore(db);
  }

  async init(): Promise<void> {}

  add(db: Executor, model: string, rows: readonly VectorRow[]): Promise<void> {
    return insertEmbeddings(db, model, rows);
  }

  removeDocument(db: Executor, documentId: string, generation?: number): Promise<void> {
    return deleteEmbeddings(db, documentId, generation === undefined ? 'all' : { only: generation });
  }

  removeOtherGenerations(db: Executor, documentId: string, keep: number): Promise<void> {
    return deleteEmbeddings(db, documentId, { except: keep });
  }

  removeSegments(db: Executor, segmentIds: readonly string[]): Promise<void> {
    return deleteSegmentEmbeddings(db, segmentIds);
  }

  async #load(datasetId: string): Promise<{ ids: string[]; dims: number; matrix: Float32Array } | undefined> {
    const version = await this.#datasets.indexVersion(datasetId);
    if (version === undefined) return undefined;
    const hit = this.#cache.get(datasetId);
    if (hit && hit.version === version) return hit;
    const rows = await this.#db
      .selectFrom('segment_embeddings as e')
      .innerJoin('segments as s', 's.id', 'e.segment_id')
      .innerJoin('documents as d', (j) => j.onRef('d.id', '=', 's.document_id').onRef('d.active_generation', '=', 's.generation'))
      .select(['e.segment_id', 'e.dims', 'e.embedding'])
      .where('e.dataset_id', '=', datasetId)
      .where('s.enabled', '=', 1)
      .execute();
    const dims = rows[0]?.dims ?? 0;
    const matrix = new Float32Array(rows.length * dims);
    rows.forEach((r, i) => matrix.set(vectorFromBase64(r.embedding), i * dims));
    const entry = { version, ids: rows.map((r) => r.segment_id), dims, matrix };
    this.#cache.set(datasetId, entry);
    return entry;
  }

  async search(datasetIds: readonly string[], vector: Float32Array, k: number): Promise<Hit[]> {
    if (k <= 0) return [];
    // The k best in the order a stable sort by score would give (a later vector displaces an
    // earlier one only with a strictly higher score), without a hit object per vector.
    const best: Hit[] = [];
    for (const id of datasetIds) {
      const m = await this.#load(id);
      if (!m || m.dims !== vector.length) continue;
      const { matrix, dims, ids } = m;
      const tail = dims - (dims % 4);
      for (let i = 0; i < ids.length; i++) {
        // Four independent sums: the additions overlap instead of waiting on each other.
        let d0 = 0;
        let d1 = 0;
        let d2 = 0;
        let d3 = 0;
        const off = i * dims;
        for (let j = 0; j < tail; j += 4) {
          d0 += matrix[off + j]! * vector[j]!;
          d1 += matrix[off + j + 1]! * vector[j + 1]!;
          d2 += matrix[off + j + 2]! * vector[j + 2]!;
          d3 += matrix[off + j + 3]! * vector[j + 3]!;
        }
        for (let j = tail; j < dims; j++) d0 += matrix[off + j]! * vector[j]!;
        const dot = d0 + d1 + d2 + d3;
        if (best.length < k || dot > best[best.length - 1]!.score) keepBest(best, k, ids[i]!, dot);
      }
    }
    // The cache holds active vectors only, but a swap may land between load and now.
    return activeOnly(this.#db, best);
  }
}

/** How pgvector builds and searches its HNSW index; config, read by the dialect that builds the index. */
export interface VectorSearchOptions {
  /** HNSW `m` of a new index (`PGVECTOR_HNSW_M`). */
  readonly hnswM: number;
  /** HNSW `ef_construction` of a new index (`PGVECTOR_HNSW_EF_CONSTRUCTION`). */
  readonly hnswEfConstruction: number;
  /** The lowest `hnsw.ef_search` of a search (`PGVECTOR_EF_SEARCH`); it grows with the window. */
  readonly efSearch: number;
}

/** pgvector's own defaults. */
export const DEFAULT_VECTOR_SEARCH: VectorSearchOptions = { hnswM: 16, hnswEfConstruction: 64, efSearch: 40 };

/**
 * The per-dimension vector tables (`segment_vec_<dims>`) that sqlite-vec and pgvector both keep,
 * with the removals, which are the same SQL on either; each removal also drops the stored embeddings.
 */
export class DimensionTables extends Set<number> {
  async #removeWhere(db: Executor, cond: ReturnType<typeof sql>): Promise<void> {
    for (const dims of this) {
      await sql`DELETE FROM ${sql.raw(`segment_vec_${dims}`)} WHERE segment_id IN (SELECT id FROM segments WHERE ${cond})`.execute(db);
    }
  }

  async removeDocument(db: Executor, documentId: string, generation?: number): Promise<void> {
    const cond = generation === undefined ? sql`document_id = ${documentId}` : sql`document_id = ${documentId} AND generation = ${generation}`;
    await this.#removeWhere(db, cond);
    await deleteEmbeddings(db, documentId, generation === undefined ? 'all' : { only: generation });
  }

  async removeOtherGenerations(db: Executor, documentId: string, keep: number): Promise<void> {
    await this.#removeWhere(db, sql`document_id = ${documentId} AND generation <> ${keep}`);
    await deleteEmbeddings(db, documentId, { except: keep });
  }

  async removeSegments(db: Executor, segmentIds: readonly string[]): Promise<void> {
    if (segmentIds.length === 0) return;
    const ids = sql.join(segmentIds.map((id) => sql`${id}`));
    for (const dims of this) await sql`DELETE FROM ${sql.raw(`segment_vec_${dims}`)} WHERE segment_id IN (${ids})`.execute(db);
    await deleteSegmentEmbeddings(db, segmentIds);
  }
}
