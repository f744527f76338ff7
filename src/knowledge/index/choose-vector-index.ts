import type { Store } from '../../store/db.js';
import type { Logger } from '../../infra/logger.js';
import { PgVectorIndex, pgvectorSchema } from './pgvector-index.js';
import { ExactVectorIndex, SqliteVecIndex, type VectorIndex } from './vector-index.js';

/**
 * The vector index the store can carry, chosen at start-up: sqlite-vec on SQLite; on PostgreSQL
 * pgvector (HNSW) where `CREATE EXTENSION vector` succeeds, else the exact in-process scan.
 */
export async function chooseVectorIndex(store: Store, logger: Logger): Promise<VectorIndex> {
  if (store.sqlite) return new SqliteVecIndex(store.db, store.sqlite);
  const probe = await pgvectorSchema(store.db);
  if ('schema' in probe) return new PgVectorIndex(store.db, probe.schema);
  logger.info(`pgvector is not available (${probe.reason}); vector search scans exactly in process`);
  return new ExactVectorIndex(store.db);
}
