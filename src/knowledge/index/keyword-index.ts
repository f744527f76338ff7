import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database } from '../../store/schema.js';
import type { Store } from '../../store/db.js';
import type SQLite from 'better-sqlite3';

export interface Hit {
  readonly segmentId: string;
  /** 0..1, higher is better. */
  readonly score: number;
}

type Db = Kysely<Database> | Transaction<Database>;

/** English function words, dropped from keyword queries (Dify extracts keywords the same way). */
const STOPWORDS = new Set(
  'a an and are as at be been but by can could did do does for from had has have he her his how i if in into is it its me my no not of on or our she so than that the their them then there these they this those to too us was we were what when where which who why will with would you your'.split(' '),
);

/**
 * The words of a query: letters and digits only, so they are safe inside FTS5 / tsquery syntax;
 * stop words are dropped unless the query has nothing else.
 */
export function queryTerms(query: string): string[] {
  const words = [...new Set(query.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [])];
  const content = words.filter((w) => !STOPWORDS.has(w));
  return (content.length > 0 ? content : words).slice(0, 32);
}

/**
 * Full-text index over segment content: SQLite FTS5 (porter stemming, BM25) or a PostgreSQL GIN
 * expression index over `to_tsvector('english', content)` (ts_rank). Only segments of a
 * document's active generation are ever returned.
 */
export class KeywordIndex {
  readonly #db: Kysely<Database>;
  readonly #engine: Store['caps']['engine'];
  readonly #sqlite: SQLite.Database | undefined;
  #insert: SQLite.Statement | undefined;
  #insertRange: SQLite.Statement | undefined;

  constructor(store: Store) {
    this.#db = store.db;
    this.#engine = store.caps.engine;
    this.#sqlite = store.sqlite;
  }

  async init(): Promise<void> {
    if (this.#engine === 'sqlite') {
      // External content: the index reads text from `segments` by rowid instead of storing a copy.
      await sql`CREATE VIRTUAL TABLE IF NOT EXISTS segments_fts USING fts5(content, dataset_id UNINDEXED, content='segments', content_rowid='rowid', tokenize='porter unicode61 remove_diacritics 2')`.execute(this.#db);
    } else {
      await sql`CREATE INDEX IF NOT EXISTS segments_tsv ON segments USING GIN (to_tsvector('english', content))`.execute(this.#db);
    }
  }

  /**
   * Adds segments (already inserted in `segments`) inside the caller's transaction. PostgreSQL
   * indexes them by itself; on SQLite a prepared statement on the one connection Kysely also uses
   * (so it is part of the open transaction). The FTS row shares the segment row's rowid, so deletes
   * and joins go by rowid instead of scanning the FTS table.
   */
  async add(_db: Db, rows: readonly { rowid: number | bigint; id: string; datasetId: string; content: string }[]): Promise<void> {
    if (!this.#sqlite || rows.length === 0) return;
    // Rows inserted together usually have consecutive rowids: one statement then copies them from
    // `segments` inside SQLite instead of handing every text back across the binding.
    const first = BigInt(rows[0]!.rowid);
    if (rows.every((r, i) => BigInt(r.rowid) === first + BigInt(i))) {
      this.#insertRange ??= this.#sqlite.prepare(
        'INSERT INTO segments_fts (rowid, content, dataset_id) SELECT rowid, content, dataset_id FROM segments WHERE rowid BETWEEN ? AND ?',
      );
      this.#insertRange.run(first, first + BigInt(rows.length - 1));
      return;
    }
    this.#insert ??= this.#sqlite.prepare('INSERT INTO segments_fts (rowid, content, dataset_id) VALUES (?, ?, ?)');
    for (const r of rows) this.#insert.run(r.rowid, r.content, r.datasetId);
  }

  async removeDocument(db: Db, documentId: string, generation?: number): Promise<void> {
    if (this.#engine !== 'sqlite') return;
    const gen = generation === undefined ? sql`` : sql` AND generation = ${generation}`;
    // External-content FTS5 forgets rows through its 'delete' command, given the indexed values;
    // this must run before the `segments` rows go.
    await sql`INSERT INTO segments_fts (segments_fts, rowid, content, dataset_id) SELECT 'delete', rowid, content, dataset_id FROM segments WHERE document_id = ${documentId}${gen}`.execute(db);
  }

  async removeOtherGenerations(db: Db, documentId: string, keep: number): Promise<void> {
    if (this.#engine !== 'sqlite') return;
    await sql`INSERT INTO segments_fts (segments_fts, rowid, content, dataset_id) SELECT 'delete', rowid, content, dataset_id FROM segments WHERE document_id = ${documentId} AND generation <> ${keep}`.execute(db);
  }

  /**
   * Indexes segments already in `segments` by id, inside the caller's transaction (a segment
   * created or whose content changed through the segment API). PostgreSQL indexes rows by itself.
   */
  async addSegments(db: Db, segmentIds: readonly string[]): Promise<void> {
    if (this.#engine !== 'sqlite' || segmentIds.length === 0) return;
    const ids = sql.join(segmentIds.map((id) => sql`${id}`));
    await sql`INSERT INTO segments_fts (rowid, content, dataset_id) SELECT rowid, content, dataset_id FROM segments WHERE id IN (${ids})`.execute(db);
  }

  /**
   * Forgets segments by id, inside the caller's transaction; must run while their `segments` rows
   * still hold the indexed content (before a delete or a content change).
   */
  async removeSegments(db: Db, segmentIds: readonly string[]): Promise<void> {
    if (this.#engine !== 'sqlite' || segmentIds.length === 0) return;
    const ids = sql.join(segmentIds.map((id) => sql`${id}`));
    await sql`INSERT INTO segments_fts (segments_fts, rowid, content, dataset_id) SELECT 'delete', rowid, content, dataset_id FROM segments WHERE id IN (${ids})`.execute(db);
  }

  /** The `limit` best keyword hits in these datasets, among the segments of `documentIds` when given (a metadata filter). */
  async search(datasetIds: readonly string[], query: string, limit: number, documentIds?: readonly string[]): Promise<Hit[]> {
    const terms = queryTerms(query);
    if (terms.length === 0 || datasetIds.length === 0 || documentIds?.length === 0) return [];
    const ids = sql.join(datasetIds.map((d) => sql`${d}`));
    const docs = JSON.stringify(documentIds ?? []);
    if (this.#engine === 'sqlite') {
      const match = terms.map((t) => `"${t}"`).join(' OR ');
      // Rank inside FTS5 first (a window of the best matches), then keep what is searchable: enabled
      // segments of the active generation of enabled, unarchived documents (of `documentIds` when
      // given). A window whose matches are mostly not searchable (a re-index's second copy, disabled
      // segments or documents, a metadata filter) is widened until `limit` hits are found or the
      // matches run out.
      const inDocs = documentIds ? sql`AND s.document_id IN (SELECT value FROM json_each(${docs}))` : sql``;
      for (let window = limit * 3 + 20; ; window *= 4) {
        const { rows } = await sql<{ id: string; rank: number; ok: number }>`
          SELECT s.id AS id, f.rank AS rank, (d.id IS NOT NULL AND s.enabled = 1 ${inDocs}) AS ok
          FROM (SELECT rowid AS rid, rank FROM segments_fts WHERE segments_fts MATCH ${match} AND dataset_id IN (${ids}) ORDER BY rank LIMIT ${window}) f
          JOIN segments s ON s.rowid = f.rid
          LEFT JOIN documents d ON d.id = s.document_id AND d.active_generation = s.generation AND d.enabled = 1 AND d.archived = 0
          ORDER BY f.rank`.execute(this.#db);
        const hits = rows.filter((r) => r.ok);
        if (hits.length >= limit || rows.length < window) {
          // bm25() is negative, lower is better; map it onto 0..1.
          return hits.slice(0, limit).map((r) => ({ segmentId: r.id, score: -r.rank / (1 - r.rank) }));
        }
      }
    }
    const tsq = terms.join(' | ');
    const docFilter = documentIds ? sql`AND s.document_id IN (SELECT jsonb_array_elements_text(${docs}::jsonb))` : sql``;
    const { rows } = await sql<{ id: string; rank: number }>`
      SELECT s.id AS id, ts_rank(to_tsvector('english', s.content), q, 32) AS rank
      FROM segments s
      JOIN documents d ON d.id = s.document_id AND d.active_generation = s.generation AND d.enabled = 1 AND d.archived = 0,
      to_tsquery('english', ${tsq}) q
      WHERE to_tsvector('english', s.content) @@ q AND s.dataset_id IN (${ids}) AND s.enabled = 1 ${docFilter}
      ORDER BY rank DESC LIMIT ${limit}`.execute(this.#db);
    return rows.map((r) => ({ segmentId: r.id, score: Number(r.rank) }));
  }
}
