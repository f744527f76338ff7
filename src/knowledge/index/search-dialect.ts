import type { Transaction } from 'kysely';
import type { Database, SegmentTable } from '../../store/schema.js';
import type { Logger } from '../../infra/logger.js';
import type { KeywordIndex } from './keyword-index.js';
import type { VectorIndex, VectorSearchOptions } from './vector-index.js';

/** Bulk insert of segment rows, the indexer's hot path. */
export interface SegmentWriter {
  /**
   * Inserts inside the caller's transaction and answers each row's rowid where the dialect has one
   * (SQLite; 0 elsewhere), which the keyword index reuses.
   */
  insert(trx: Transaction<Database>, rows: readonly SegmentTable[]): Promise<(number | bigint)[]>;
}

/**
 * What a storage dialect supplies to knowledge: its keyword index, its vector index and its bulk
 * segment writer. Each store (`src/store/sqlite/`, `src/store/postgres/`) builds one from the
 * capabilities it probed when it opened; knowledge code sees only these ports.
 */
export interface SearchDialect {
  /** For logs and metrics: `sqlite` or `postgres`. */
  readonly name: 'sqlite' | 'postgres';
  keywordIndex(): KeywordIndex;
  /**
   * The best vector index the database carries (probed once; falls back to the exact scan),
   * with pgvector's HNSW `options` (its defaults when not given; the first call's are kept).
   */
  vectorIndex(logger: Logger, options?: VectorSearchOptions): Promise<VectorIndex>;
  segmentWriter(): SegmentWriter;
}
