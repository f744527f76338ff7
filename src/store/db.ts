import { mkdirSync } from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, Migrator, PostgresDialect, SqliteDialect, sql } from 'kysely';
import pg from 'pg';
import { ConfigError } from '../config-error.js';
import * as sqliteVec from 'sqlite-vec';
import type { Database } from './schema.js';
import { migrations } from './migrations/index.js';

/** What differs between the two storage engines, as capabilities rather than identities. */
export interface StoreCaps {
  /** `postgres` uses tsvector + pgvector; `sqlite` uses FTS5 + sqlite-vec. */
  readonly engine: 'sqlite' | 'postgres';
  /** Row locks (`SELECT … FOR UPDATE`) exist; SQLite serializes writers instead. */
  readonly rowLocks: boolean;
}

export interface Store {
  readonly db: Kysely<Database>;
  readonly caps: StoreCaps;
  /** The raw better-sqlite3 handle, when on SQLite (for FTS5 / sqlite-vec setup). */
  readonly sqlite: SQLite.Database | undefined;
  /**
   * `undefined` when the database answers and every migration this code knows is applied;
   * otherwise why not (for `GET /ready`). Never throws.
   */
  notReady(): Promise<string | undefined>;
  destroy(): Promise<void>;
}

export interface StoreOptions {
  readonly databaseUrl: string | undefined;
  readonly databaseSchema: string | undefined;
  readonly dataDir: string;
  /** PostgreSQL connections at most (default 10). */
  readonly databasePoolSize?: number;
}

// int8 (bigint) columns hold epoch milliseconds and counters, well inside Number's exact range.
pg.types.setTypeParser(20, (v) => Number(v));
pg.types.setTypeParser(1700, (v) => Number(v));

/** Opens the database named by the options and runs every pending migration. */
export async function openStore(opts: StoreOptions): Promise<Store> {
  let store: Store;
  if (opts.databaseUrl) {
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
      max: opts.databasePoolSize ?? 10,
      ...(schema ? { options: `-c search_path=${schema}` } : {}),
    });
    // A connection the server ends (e.g. a run owner that stalled inside a transaction past its
    // limit, see RunJournal) must not crash the process: the error reaches the query that uses the
    // connection next, and the pool discards it on release.
    pool.on('error', () => undefined);
    pool.on('connect', (client) => client.on('error', () => undefined));
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
    store = { db, caps: { engine: 'postgres', rowLocks: true }, sqlite: undefined, notReady: () => notReady(db, 'postgres', schema), destroy: () => db.destroy() };
  } else {
    mkdirSync(opts.dataDir, { recursive: true });
    const handle = new SQLite(path.join(opts.dataDir, 'dovetail.db'));
    handle.pragma('journal_mode = WAL');
    handle.pragma('synchronous = NORMAL');
    handle.pragma('busy_timeout = 5000');
    // Reads through a memory map instead of copying every page out of the pager: a sqlite-vec KNN
    // reads all of a dataset's vectors per query, which takes about half the time this way.
    handle.pragma('mmap_size = 268435456');
    handle.pragma('foreign_keys = ON');
    // SQLite's own lower() folds ASCII only; keyword filters (`lower(col) LIKE …`) compare with
    // JavaScript's lower case, as PostgreSQL's lower() does for any letter.
    handle.function('lower', { deterministic: true }, (v: unknown) => (typeof v === 'string' ? v.toLowerCase() : v === null ? null : String(v).toLowerCase()));
    // sqlite-vec before anything reads the schema: Kysely's migrator introspects every table, and a
    // `vec0` virtual table (created by the vector index) cannot be read without its module.
    sqliteVec.load(handle);
    const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: withStatementCache(handle) }) });
    store = { db, caps: { engine: 'sqlite', rowLocks: false }, sqlite: handle, notReady: () => notReady(db, 'sqlite', undefined), destroy: () => db.destroy() };
  }
  const schema = opts.databaseUrl ? opts.databaseSchema : undefined;
  // Nothing to apply (every start but the first after an upgrade): no migrator, so no wait for the
  // schema lock that migrations and drops of other schemas in the same database hold.
  const applied = new Set(await appliedMigrations(store.db, store.caps.engine, schema));
  if (Object.keys(migrations).some((name) => !applied.has(name))) await migrate(store.db, schema);
  return store;
}

async function migrate(db: Kysely<Database>, schema: string | undefined): Promise<void> {
  const migrator = migratorFor(db, schema);
  const { error, results } = await withSchemaLock(db, schema, () => migrator.migrateToLatest());
  if (error) {
    const failed = results?.find((r) => r.status === 'Error');
    throw new Error(`migration ${failed?.migrationName ?? '?'} failed: ${(error as Error).message}`, { cause: error });
  }
}

/** Why the store cannot serve: the database does not answer, or migrations are pending. */
async function notReady(db: Kysely<Database>, engine: 'postgres' | 'sqlite', schema: string | undefined): Promise<string | undefined> {
  try {
    await sql`select 1`.execute(db);
  } catch (err) {
    return `the database does not answer (${(err as Error).message})`;
  }
  try {
    const applied = new Set(await appliedMigrations(db, engine, schema));
    const pending = Object.keys(migrations).filter((name) => !applied.has(name));
    return pending.length > 0 ? `migrations not applied: ${pending.join(', ')}` : undefined;
  } catch (err) {
    return `the migration state cannot be read (${(err as Error).message})`;
  }
}

/**
 * Names in Kysely's migration table of this schema (none when it does not exist yet). Read
 * directly: the migrator's own `getMigrations` introspects the tables of every schema in the
 * database, which fails when another schema is dropped at that moment (a 503 from /ready while
 * another server on the same database shuts down) and grows with the number of schemas.
 */
async function appliedMigrations(db: Kysely<Database>, engine: 'postgres' | 'sqlite', schema: string | undefined): Promise<string[]> {
  if (engine === 'postgres') {
    const qualified = schema ? `${schema}.kysely_migration` : 'kysely_migration';
    const { rows } = await sql<{ t: string | null }>`select to_regclass(${qualified})::text as t`.execute(db);
    if (!rows[0]?.t) return [];
  } else {
    const { rows } = await sql<{ name: string }>`select name from sqlite_master where type = 'table' and name = 'kysely_migration'`.execute(db);
    if (rows.length === 0) return [];
  }
  const table = schema ? sql.id(schema, 'kysely_migration') : sql.id('kysely_migration');
  const { rows } = await sql<{ name: string }>`select name from ${table}`.execute(db);
  return rows.map((r) => r.name);
}

function migratorFor(db: Kysely<Database>, schema: string | undefined): Migrator {
  return new Migrator({
    db,
    provider: { getMigrations: async () => migrations },
    // Domains number their migrations independently; a later-numbered one may be applied first.
    allowUnorderedMigrations: true,
    // Kysely looks for its bookkeeping tables in every schema unless told which one; without this a
    // second schema in the same database (tests, side-by-side installs) skips creating them.
    ...(schema ? { migrationTableSchema: schema } : {}),
  });
}

/**
 * PostgreSQL advisory lock held while a schema is migrated or dropped. Kysely's migrator reads the
 * catalog of every schema in the database; a schema dropped at that moment (another test server
 * closing) fails the read with "schema … does not exist". Migrations and drops take turns.
 */
const SCHEMA_LOCK = 0x646f7665; // "dove"

async function withSchemaLock<T>(db: Kysely<Database>, schema: string | undefined, fn: () => Promise<T>): Promise<T> {
  if (!schema) return fn();
  return db.connection().execute(async (conn) => {
    await sql`select pg_advisory_lock(${SCHEMA_LOCK})`.execute(conn);
    try {
      return await fn();
    } finally {
      await sql`select pg_advisory_unlock(${SCHEMA_LOCK})`.execute(conn);
    }
  });
}

/** How many distinct SQL texts keep their prepared statement (the cache is emptied when full). */
const STATEMENT_CACHE_SIZE = 500;

/**
 * The SQLite handle as Kysely sees it, with `prepare` memoized by SQL text: Kysely prepares every
 * query anew, and compiling a statement costs more than running it. Reuse is safe because Kysely
 * runs each statement to completion synchronously (`all` / `run`) on the one connection; only its
 * streaming `iterate` could hold a statement open, and Dovetail does not stream queries.
 */
function withStatementCache(handle: SQLite.Database): SQLite.Database {
  const cache = new Map<string, SQLite.Statement>();
  const prepare = (text: string): SQLite.Statement => {
    let stmt = cache.get(text);
    if (!stmt) {
      stmt = handle.prepare(text);
      if (cache.size >= STATEMENT_CACHE_SIZE) cache.clear();
      cache.set(text, stmt);
    }
    return stmt;
  };
  return new Proxy(handle, {
    get(target, key) {
      if (key === 'prepare') return prepare;
      const v: unknown = Reflect.get(target, key, target);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
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

export { sql };
