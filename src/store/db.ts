import { Kysely, Migrator, sql, type Migration } from 'kysely';
import type { Database } from './schema.js';
import { MIGRATION_NAMES } from './migrations/names.js';
import type { SearchDialect } from '../knowledge/index/search-dialect.js';
import type { OpenedDatabase, StoreCaps } from './opened.js';
import { openSqlite } from './sqlite/open.js';
import { SCHEMA_LOCK } from './postgres/schema-lock.js';

export type { StoreCaps };

export interface Store {
  readonly db: Kysely<Database>;
  readonly caps: StoreCaps;
  /** The keyword index, vector index and bulk segment writer of this database (see `SearchDialect`). */
  readonly dialect: SearchDialect;
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
  /** SQLite: MB of the file read through a memory map (default: sized to the machine, see defaultSqliteMmapMb). */
  readonly sqliteMmapMb?: number;
}

/** Opens the database named by the options and runs every pending migration. */
export async function openStore(opts: StoreOptions): Promise<Store> {
  const schema = opts.databaseUrl ? opts.databaseSchema : undefined;
  const opened = opts.databaseUrl
    ? await (await postgres()).openPostgres({ databaseUrl: opts.databaseUrl, databaseSchema: schema, databasePoolSize: opts.databasePoolSize })
    : openSqlite(opts.dataDir, { mmapMb: opts.sqliteMmapMb });
  const { db, caps, dialect } = opened;
  // Nothing to apply (every start but the first after an upgrade): no migrator, so no wait for the
  // schema lock that migrations and drops of other schemas in the same database hold.
  const applied = new Set(await appliedMigrations(opened, schema));
  if (MIGRATION_NAMES.some((name) => !applied.has(name))) await migrate(db, schema);
  return { db, caps, dialect, notReady: () => notReady(opened, schema), destroy: () => db.destroy() };
}

async function migrate(db: Kysely<Database>, schema: string | undefined): Promise<void> {
  const { migrations } = await import('./migrations/index.js');
  const migrator = migratorFor(db, schema, migrations);
  const { error, results } = await withSchemaLock(db, schema, () => migrator.migrateToLatest());
  if (error) {
    const failed = results?.find((r) => r.status === 'Error');
    throw new Error(`migration ${failed?.migrationName ?? '?'} failed: ${(error as Error).message}`, { cause: error });
  }
}

/** Why the store cannot serve: the database does not answer, or migrations are pending. */
async function notReady(opened: OpenedDatabase, schema: string | undefined): Promise<string | undefined> {
  try {
    await sql`select 1`.execute(opened.db);
  } catch (err) {
    return `the database does not answer (${(err as Error).message})`;
  }
  try {
    const applied = new Set(await appliedMigrations(opened, schema));
    const pending = MIGRATION_NAMES.filter((name) => !applied.has(name));
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
async function appliedMigrations({ db, migrationTableExists }: OpenedDatabase, schema: string | undefined): Promise<string[]> {
  if (!(await migrationTableExists())) return [];
  const table = schema ? sql.id(schema, 'kysely_migration') : sql.id('kysely_migration');
  const { rows } = await sql<{ name: string }>`select name from ${table}`.execute(db);
  return rows.map((r) => r.name);
}

function migratorFor(db: Kysely<Database>, schema: string | undefined, migrations: Record<string, Migration>): Migrator {
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

/**
 * PostgreSQL's driver (`pg`), loaded when a PostgreSQL store is first opened: an embedded (SQLite)
 * process never loads it (~70 ms of start-up).
 */
const postgres = () => import('./postgres/open.js');

/** Drops a PostgreSQL schema (tests). */
export async function dropSchema(databaseUrl: string, schema: string): Promise<void> {
  return (await postgres()).dropSchema(databaseUrl, schema);
}

export { sql };
