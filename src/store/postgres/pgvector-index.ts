import { sql, type Kysely } from 'kysely';
import type { Database, Executor } from '../schema.js';
import { vectorFromBase64 } from '../../knowledge/ingest/embedder.js';
import type { Hit } from '../../knowledge/index/keyword-index.js';
import { activeOnly, DEFAULT_VECTOR_SEARCH, DimensionTables, insertEmbeddings, type VectorIndex, type VectorRow, type VectorSearchOptions } from '../../knowledge/index/vector-index.js';


/** pgvector's largest `vector` an HNSW index takes; larger vectors are kept and searched without one. */
const HNSW_MAX_DIMS = 2000;
/** pgvector's largest `hnsw.ef_search`. */
const MAX_EF_SEARCH = 1000;
/** Rows of one backfill read and one insert. */
const BATCH = 200;

const quoteIdent = (name: string) => `"${name.replaceAll('"', '""')}"`;

/**
 * pgvector: a table per vector size (`segment_vec_<dims>`, created on first use) with an HNSW index
 * on cosine distance. The type and operators are named with the schema the extension lives in, so
 * a `DATABASE_SCHEMA` other than the extension's works. Like sqlite-vec, a KNN window is over-fetched
 * and narrowed to what is searchable (enabled segments of the active generation), and widened when
 * too few survive; `hnsw.ef_search` follows the window so the index looks at least that far.
 */
export class PgVectorIndex implements VectorIndex {
  readonly kind = 'pgvector';
  readonly #db: Kysely<Database>;
  readonly #ext: string;
  readonly #tables = new DimensionTables();
  readonly #options: VectorSearchOptions;

  /**
   * `extensionSchema`: where `CREATE EXTENSION vector` put the type (see `pgvectorSchema`);
   * `options`: the HNSW build parameters of a new index and the lowest `ef_search`.
   */
  constructor(db: Kysely<Database>, extensionSchema: string, options: VectorSearchOptions = DEFAULT_VECTOR_SEARCH) {
    this.#db = db;
    this.#ext = quoteIdent(extensionSchema);
    this.#options = options;
  }

  async init(): Promise<void> {
    const rows = await sql<{ name: string }>`SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema() AND table_name LIKE 'segment\\_vec\\_%'`.execute(this.#db);
    for (const r of rows.rows) {
      const dims = Number(r.name.slice('segment_vec_'.length));
      if (Number.isInteger(dims)) this.#tables.add(dims);
    }
    await this.#backfill();
  }

  /**
   * Copies into the pgvector tables the vectors only `segment_embeddings` holds (written while the
   * server ran without pgvector), a page at a time.
   */
  async #backfill(): Promise<void> {
    const sizes = await this.#db.selectFrom('segment_embeddings').select('dims').distinct().execute();
    for (const { dims } of sizes) {
      await this.#ensure(this.#db, dims);
      const table = sql.raw(`segment_vec_${dims}`);
      // Keyset pages over the primary key: one pass over the table, however many are missing.
      let after = '';
      for (;;) {
        const missing = await sql<{ segment_id: string; dataset_id: string; embedding: string }>`
          SELECT e.segment_id, e.dataset_id, e.embedding FROM segment_embeddings e
          WHERE e.segment_id > ${after} AND e.dims = ${dims} AND NOT EXISTS (SELECT 1 FROM ${table} v WHERE v.segment_id = e.segment_id)
          ORDER BY e.segment_id LIMIT ${BATCH}`.execute(this.#db);
        if (missing.rows.length === 0) break;
        await this.#insert(this.#db, dims, missing.rows.map((r) => ({ segmentId: r.segment_id, datasetId: r.dataset_id, vector: vectorFromBase64(r.embedding) })));
        after = missing.rows[missing.rows.length - 1]!.segment_id;
        if (missing.rows.length < BATCH) break;
      }
    }
  }

  async #ensure(db: Executor, dims: number): Promise<void> {
    if (this.#tables.has(dims)) return;
    const table = `segment_vec_${dims}`;
    try {
      await sql
        .raw(`CREATE TABLE IF NOT EXISTS ${table} (segment_id text PRIMARY KEY, dataset_id text NOT NULL, embedding ${this.#ext}.vector(${dims}) NOT NULL)`)
        .execute(db);
      await sql.raw(`CREATE INDEX IF NOT EXISTS ${table}_dataset ON ${table} (dataset_id)`).execute(db);
      if (dims <= HNSW_MAX_DIMS) {
        const { hnswM: m, hnswEfConstruction: efc } = this.#options;
        await sql.raw(`CREATE INDEX IF NOT EXISTS ${table}_hnsw ON ${table} USING hnsw (embedding ${this.#ext}.vector_cosine_ops) WITH (m = ${m}, ef_construction = ${efc})`).execute(db);
      }
    } catch (err) {
      // Another instance created it at the same moment (IF NOT EXISTS is not atomic in PostgreSQL).
      const exists = await sql<{ n: number }>`SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = ${table}`.execute(db);
      if (exists.rows[0]?.n !== 1) throw err;
    }
    this.#tables.add(dims);
  }

  async #insert(db: Executor, dims: number, rows: readonly Omit<VectorRow, 'documentId'>[]): Promise<void> {
    for (let i = 0; i < rows.length; i += BATCH) {
      const values = rows.slice(i, i + BATCH).map((r) => sql`(${r.segmentId}, ${r.datasetId}, ${`[${r.vector.join(',')}]`}::${sql.raw(`${this.#ext}.vector`)})`);
      await sql`INSERT INTO ${sql.raw(`segment_vec_${dims}`)} (segment_id, dataset_id, embedding) VALUES ${sql.join(values)}
        ON CONFLICT (segment_id) DO UPDATE SET dataset_id = excluded.dataset_id, embedding = excluded.embedding`.execute(db);
    }
  }

  async add(db: Executor, model: string, rows: readonly VectorRow[]): Promise<void> {
    if (rows.length === 0) return;
    await insertEmbeddings(db, model, rows);
    const dims = rows[0]!.vector.length;
    await this.#ensure(db, dims);
    await this.#insert(db, dims, rows);
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
    if (k <= 0 || datasetIds.length === 0 || !this.#tables.has(dims)) return [];
    const literal = `[${vector.join(',')}]`;
    const ext = sql.raw(this.#ext);
    const table = sql.raw(`segment_vec_${dims}`);
    const ids = sql.join([...datasetIds].map((id) => sql`${id}`));
    for (let window = Math.min(k * 4 + 20, MAX_EF_SEARCH); ; window = Math.min(window * 4, MAX_EF_SEARCH)) {
      const rows = await this.#db.transaction().execute(async (tx) => {
        await sql.raw(`SET LOCAL hnsw.ef_search = ${Math.min(MAX_EF_SEARCH, Math.max(this.#options.efSearch, window))}`).execute(tx);
        return (
          await sql<{ segment_id: string; distance: number }>`
            SELECT segment_id, embedding OPERATOR(${ext}.<=>) ${literal}::${ext}.vector AS distance FROM ${table}
            WHERE dataset_id IN (${ids}) ORDER BY distance LIMIT ${window}`.execute(tx)
        ).rows;
      });
      const hits = rows.map((r) => ({ segmentId: r.segment_id, score: 1 - Number(r.distance) }));
      const kept = await activeOnly(this.#db, hits);
      if (kept.length >= k || rows.length < window || window === MAX_EF_SEARCH) return kept.slice(0, k);
    }
  }
}

/**
 * The capability probe: creates the `vector` extension when it is not there (needs the right to),
 * and answers the schema it lives in, or undefined with the reason it cannot be had.
 */
export async function pgvectorSchema(db: Kysely<Database>): Promise<{ schema: string } | { reason: string }> {
  try {
    await sql`CREATE EXTENSION IF NOT EXISTS vector`.execute(db);
  } catch (err) {
    // Another instance may have created it meanwhile; otherwise it is not installed or not allowed.
    const found = await extensionSchema(db);
    if (found) return { schema: found };
    return { reason: (err as Error).message };
  }
  const schema = await extensionSchema(db);
  return schema ? { schema } : { reason: 'CREATE EXTENSION vector succeeded but the extension is not listed' };
}

async function extensionSchema(db: Kysely<Database>): Promise<string | undefined> {
  const r = await sql<{ nspname: string }>`SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'vector'`.execute(db);
  return r.rows[0]?.nspname;
}
