import { sql, type Kysely } from 'kysely';
import type SQLite from 'better-sqlite3';
import type { Database, Executor } from '../schema.js';
import type { Hit } from '../../knowledge/index/keyword-index.js';
import { DimensionTables, insertEmbeddings, type VectorIndex, type VectorRow } from '../../knowledge/index/vector-index.js';


/**
 * sqlite-vec: a `vec0` virtual table per vector size, partitioned by dataset, cosine distance.
 * KNN over-fetches and then drops segments that are not in their document's active generation
 * (a re-index in progress keeps its new vectors beside the served ones until the swap).
 */
export class SqliteVecIndex implements VectorIndex {
  readonly kind = 'sqlite-vec';
  readonly #db: Kysely<Database>;
  readonly #handle: SQLite.Database;
  readonly #tables = new DimensionTables();
  readonly #knn = new Map<number, SQLite.Statement>();
  #active: SQLite.Statement | undefined;

  constructor(db: Kysely<Database>, handle: SQLite.Database) {
    this.#db = db;
    this.#handle = handle;
  }

  async init(): Promise<void> {
    // sqlite-vec is loaded into the handle when the store opens (see `openSqlite`).
    const rows = this.#handle.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'segment_vec_%'`).all() as { name: string }[];
    for (const r of rows) {
      const dims = Number(r.name.slice('segment_vec_'.length));
      if (Number.isInteger(dims)) this.#tables.add(dims);
    }
  }

  async #ensure(db: Executor, dims: number): Promise<void> {
    if (this.#tables.has(dims)) return;
    await sql
      .raw(`CREATE VIRTUAL TABLE IF NOT EXISTS segment_vec_${dims} USING vec0(segment_id text primary key, dataset_id text partition key, embedding float[${dims}] distance_metric=cosine)`)
      .execute(db);
    this.#tables.add(dims);
  }

  async add(db: Executor, model: string, rows: readonly VectorRow[]): Promise<void> {
    if (rows.length === 0) return;
    await insertEmbeddings(db, model, rows);
    const dims = rows[0]!.vector.length;
    await this.#ensure(db, dims);
    for (const r of rows) {
      await sql`INSERT INTO ${sql.raw(`segment_vec_${dims}`)} (segment_id, dataset_id, embedding) VALUES (${r.segmentId}, ${r.datasetId}, ${Buffer.from(r.vector.buffer, r.vector.byteOffset, r.vector.byteLength)})`.execute(db);
    }
  }

  removeDocument(db: Executor, documentId: string, generation?: number): Promise<void> {
    return this.#tables.removeDocument(db, documentId, generation);
  }

  removeOtherGenerations(db: Executor, documentId: string, keep: number): Promise<void> {
    return this.#tables.removeOtherGenerations(db, documentId, keep);
  }

  removeSegments(db: Executor, segmentIds: readonly string[]): Promise<void> {
    return this.#tables.removeSegments(db, segmentIds);
  }

  async search(datasetIds: readonly string[], vector: Float32Array, k: number): Promise<Hit[]> {
    const dims = vector.length;
    if (!this.#tables.has(dims)) return [];
    const blob = Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength);
    let knn = this.#knn.get(dims);
    if (!knn) {
      knn = this.#handle.prepare(`SELECT segment_id, distance FROM segment_vec_${dims} WHERE embedding MATCH ? AND k = ? AND dataset_id = ?`);
      this.#knn.set(dims, knn);
    }
    this.#active ??= this.#handle.prepare(
      `SELECT s.id AS id FROM segments s JOIN documents d ON d.id = s.document_id AND d.active_generation = s.generation
       WHERE s.id IN (SELECT value FROM json_each(?)) AND s.enabled = 1 AND d.enabled = 1 AND d.archived = 0`,
    );
    const [knnStmt, activeStmt] = [knn, this.#active];
    // Prepared once and run on the raw handle, but under Kysely's connection lock: the same view of
    // the database as a built query (never the inside of another request's open transaction).
    // A window of nearest neighbours, then what is searchable (enabled segments of the active
    // generation of enabled, unarchived documents). A window whose neighbours are mostly not
    // searchable is widened, up to sqlite-vec's largest k, until `k` hits are found or the
    // dataset's vectors run out.
    return this.#db.connection().execute(async () => {
      // The first window is small: sqlite-vec keeps its k best with a cost that grows with k (at
      // 10,000 vectors, k = 60 took a quarter longer than k = 10), and a window is rarely short.
      for (let window = Math.min(k * 2 + 5, MAX_KNN); ; window = Math.min(window * 4, MAX_KNN)) {
        const hits: Hit[] = [];
        let full = false;
        for (const id of datasetIds) {
          const rows = knnStmt.all(blob, window, id) as { segment_id: string; distance: number }[];
          if (rows.length === window) full = true;
          for (const r of rows) hits.push({ segmentId: r.segment_id, score: 1 - r.distance });
        }
        hits.sort((a, b) => b.score - a.score);
        const ok = hits.length ? new Set((activeStmt.all(JSON.stringify(hits.map((h) => h.segmentId))) as { id: string }[]).map((r) => r.id)) : new Set();
        const kept = hits.filter((h) => ok.has(h.segmentId));
        if (kept.length >= k || !full || window === MAX_KNN) return kept.slice(0, k);
      }
    });
  }
}

/** sqlite-vec's largest `k` in a KNN query. */
const MAX_KNN = 4096;
