import pg from 'pg';
import { Kysely, PostgresDialect, sql } from 'kysely';
import { ConfigError } from '../../config-error.js';
import { DEFAULT_DATABASE_POOL_SIZE } from '../../lib/setting-defaults.js';
import type { Logger } from '../../infra/logger.js';
import type { Database } from '../schema.js';
import type { SearchDialect } from '../../knowledge/index/search-dialect.js';
import type { OpenedDatabase } from '../opened.js';
import { ExactVectorIndex, type VectorSearchOptions } from '../../knowledge/index/vector-index.js';
import { TsvectorKeywordIndex } from './tsvector-keyword-index.js';
import { SCHEMA_LOCK } from './schema-lock.js';
import { PgVectorIndex, pgvectorSchema } from './pgvector-index.js';
import { PostgresSegmentWriter } from './segment-writer.js';

// int8 (bigint) columns hold epoch milliseconds and counters, well inside Number's exact range.
pg.types.setTypeParser(20, (v) => Number(v));
pg.types.setTypeParser(1700, (v) => Number(v));

export interface PostgresOptions {
  readonly databaseUrl: string;
  readonly databaseSchema: string | undefined;
  readonly databasePoolSize?: number;
}

/** Connects a pool to `databaseUrl` (creating `databaseSchema` when named) and answers the dialect. */
export async function openPostgres(opts: PostgresOptions): Promise<OpenedDatabase> {
  const schema = opts.databaseSchema;
  if (schema !== undefined && !/^[a-z_][a-z0-9_]*$/.test(schema)) {
    throw new ConfigError(`DATABASE_SCHEMA must be a lower-case SQL identifier, got "${schema}"`);
  }
  if (schema) {
    const admin = new pg.Client({ connectionString: opts.databaseUrl });
    await admin.connect();
    try {
      await admin.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
    } finally {
      await admin.end();
    }
  }
  const pool = new pg.Pool({
    connectionString: opts.databaseUrl,
    max: opts.databasePoolSize ?? DEFAULT_DATABASE_POOL_SIZE,
    ...(schema ? { options: `-c search_path=${schema}` } : {}),
  });
  // A connection the server ends (e.g. a run owner that stalled inside a transaction past its
  // limit, see RunJournal) must not crash the process: the error reaches the query that uses the
  // connection next, and the pool discards it on release.
  pool.on('error', () => undefined);
  pool.on('connect', (client) => client.on('error', () => undefined));
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  const qualified = schema ? `${schema}.kysely_migration` : 'kysely_migration';
  return {
    db,
    caps: { rowLocks: true },
    dialect: postgresSearch(db),
    migrationTableExists: async () => {
      const { rows } = await sql<{ t: string | null }>`select to_regclass(${qualified})::text as t`.execute(db);
      return Boolean(rows[0]?.t);
    },
  };
}

/**
 * tsvector, and pgvector (HNSW) where `CREATE EXTENSION vector` succeeds (the capability probe,
 * run once when the vector index is first asked for), else the exact in-process scan.
 */
function postgresSearch(db: Kysely<Database>): SearchDialect {
  let vectors: Promise<ExactVectorIndex | PgVectorIndex> | undefined;
  return {
    name: 'postgres',
    keywordIndex: () => new TsvectorKeywordIndex(db),
    vectorIndex: (logger: Logger, options?: VectorSearchOptions) =>
      (vectors ??= pgvectorSchema(db).then((probe) => {
        if ('schema' in probe) return new PgVectorIndex(db, probe.schema, options);
        logger.info(`pgvector is not available (${probe.reason}); vector search scans exactly in process`);
        return new ExactVectorIndex(db);
      })),
    segmentWriter: () => new PostgresSegmentWriter(),
  };
}

/** Drops a PostgreSQL schema (tests). */
export async function dropSchema(databaseUrl: string, schema: string): Promise<void> {
  const admin = new pg.Client({ connectionString: databaseUrl });
  await admin.connect();
  try {
    await admin.query('select pg_advisory_lock($1)', [SCHEMA_LOCK]);
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  } finally {
    await admin.end(); // ends the session, which releases the lock
  }
}

