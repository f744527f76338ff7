import { sql, type Kysely } from 'kysely';
import type SQLite from 'better-sqlite3';
import type { Database, Executor } from '../schema.js';
import { queryTerms, type Hit, type KeywordIndex, type KeywordRow } from '../../knowledge/index/keyword-index.js';


/**
 * SQLite FTS5 over segment content (porter stemming, BM25), as an external-content table: the
 * index reads text from `segments` by rowid instead of storing a copy, and its rows share the
 * segment rows' rowids, so deletes and joins go by rowid instead of scanning the FTS table.
 */
export class Fts5KeywordIndex implements KeywordIndex {
  readonly #db: Kysely<Database>;
  readonly #handle: SQLite.Database;
  #insert: SQLite.Statement | undefined;
  #insertRange: SQLite.Statement | undefined;

  /** `handle`: the one connection Kysely also uses, so its statements are part of an open transaction. */
  constructor(db: Kysely<Database>, handle: SQLite.Database) {
    this.#db = db;
    this.#handle = handle;
  }

  async init(): Promise<void> {
    await sql`CREATE VIRTUAL TABLE IF NOT EXISTS segments_fts USING fts5(content, dataset_id UNINDEXED, content='segments', content_rowid='rowid', tokenize='porter unicode61 remove_diacritics 2')`.execute(this.#db);
  }

  async add(_db: Executor, rows: readonly KeywordRow[]): Promise<void> {
    if (rows.length === 0) return;
    // Rows inserted together usually have consecutive rowids: one statement then copies them from
    // `segments` inside SQLite instead of handing every text back across the binding.
    const first = BigInt(rows[0]!.rowid);
    if (rows.every((r, i) => BigInt(r.rowid) === first + BigInt(i))) {
      this.#insertRange ??= this.#handle.prepare(
        'INSERT INTO segments_fts (rowid, content, dataset_id) SELECT rowid, content, dataset_id FROM segments WHERE rowid BETWEEN ? AND ?',
      );
      this.#insertRange.run(first, first + BigInt(rows.length - 1));
      return;
    }
    this.#insert ??= this.#handle.prepare('INSERT INTO segments_fts (rowid, content, dataset_id) VALUES (?, ?, ?)');
    for (const r of rows) this.#insert.run(r.rowid, r.content, r.datasetId);
  }

  async removeDocument(db: Executor, documentId: string, generation?: number): Promise<void> {
    const gen = generation === undefined ? sql`` : sql` AND generation = ${generation}`;
    // External-content FTS5 forgets rows through its 'delete' command, given the indexed values;
    // this must run before the `segments` rows go.
    await sql`INSERT INTO segments_fts (segments_fts, rowid, content, dataset_id) SELECT 'delete', rowid, content, dataset_id FROM segments WHERE document_id = ${documentId}${gen}`.execute(db);
  }

  async removeOtherGenerations(db: Executor, documentId: string, keep: number): Promise<void> {
    await sql`INSERT INTO segments_fts (segments_fts, rowid, content, dataset_id) SELECT 'delete', rowid, content, dataset_id FROM segments WHERE document_id = ${documentId} AND generation <> ${keep}`.execute(db);
  }

  async addSegments(db: Executor, segmentIds: readonly string[]): Promise<void> {
    if (segmentIds.length === 0) return;
    const ids = sql.join(segmentIds.map((id) => sql`${id}`));
    await sql`INSERT INTO segments_fts (rowid, content, dataset_id) SELECT rowid, content, dataset_id FROM segments WHERE id IN (${ids})`.execute(db);
  }

  async removeSegments(db: Executor, segmentIds: readonly string[]): Promise<void> {
    if (segmentIds.length === 0) return;
    const ids = sql.join(segmentIds.map((id) => sql`${id}`));
    await sql`INSERT INTO segments_fts (segments_fts, rowid, content, dataset_id) SELECT 'delete', rowid, content, dataset_id FROM segments WHERE id IN (${ids})`.execute(db);
  }

  async search(datasetIds: readonly string[], query: string, limit: number, documentIds?: readonly string[]): Promise<Hit[]> {
    const terms = queryTerms(query);
    if (terms.length === 0 || datasetIds.length === 0 || documentIds?.length === 0) return [];
    const ids = sql.join(datasetIds.map((d) => sql`${d}`));
    const docs = JSON.stringify(documentIds ?? []);
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
}
