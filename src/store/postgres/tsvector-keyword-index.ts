import { sql, type Kysely } from 'kysely';
import type { Database } from '../schema.js';
import { queryTerms, type Hit, type KeywordIndex } from '../../knowledge/index/keyword-index.js';

/**
 * PostgreSQL full text: a GIN expression index over `to_tsvector('english', content)`, ranked by
 * ts_rank. PostgreSQL keeps the index in step with `segments` by itself, so every write is a no-op.
 */
export class TsvectorKeywordIndex implements KeywordIndex {
  readonly #db: Kysely<Database>;

  constructor(db: Kysely<Database>) {
    this.#db = db;
  }

  async init(): Promise<void> {
    await sql`CREATE INDEX IF NOT EXISTS segments_tsv ON segments USING GIN (to_tsvector('english', content))`.execute(this.#db);
  }

  async add(): Promise<void> {}
  async removeDocument(): Promise<void> {}
  async removeOtherGenerations(): Promise<void> {}
  async addSegments(): Promise<void> {}
  async removeSegments(): Promise<void> {}

  async search(datasetIds: readonly string[], query: string, limit: number, documentIds?: readonly string[]): Promise<Hit[]> {
    const terms = queryTerms(query);
    if (terms.length === 0 || datasetIds.length === 0 || documentIds?.length === 0) return [];
    const ids = sql.join(datasetIds.map((d) => sql`${d}`));
    const docs = JSON.stringify(documentIds ?? []);
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
