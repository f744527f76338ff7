import { existsSync } from 'node:fs';
import path from 'node:path';
import type { StoreOptions } from './db.js';
import { withoutPassword } from '../lib/url-password.js';

/** Where the store of these options lives, for people: the SQLite file, or the PostgreSQL URL (password hidden) and schema. */
export function describeDatabase(opts: StoreOptions): string {
  if (!opts.databaseUrl) return `SQLite ${sqlitePath(opts)} (DOVETAIL_DATA_DIR)`;
  const url = withoutPassword(opts.databaseUrl);
  return `PostgreSQL ${url}${opts.databaseSchema ? ` schema ${opts.databaseSchema}` : ''} (DATABASE_URL${opts.databaseSchema ? ', DATABASE_SCHEMA' : ''})`;
}

/** The SQLite file of these options. */
export function sqlitePath(opts: StoreOptions): string {
  return path.join(opts.dataDir, 'dovetail.db');
}

/**
 * Whether a Dovetail database already exists there (its migrations table, for PostgreSQL; the
 * file, for SQLite). Creates nothing. A PostgreSQL server that cannot be reached throws.
 */
export async function databaseExists(opts: StoreOptions): Promise<boolean> {
  if (!opts.databaseUrl) return existsSync(sqlitePath(opts));
  const { default: pg } = await import('pg'); // loaded only for PostgreSQL (see `openStore`)
  const client = new pg.Client({ connectionString: opts.databaseUrl });
  await client.connect();
  try {
    const r = await client.query(
      `select 1 from information_schema.tables where table_name = 'kysely_migration' and table_schema = coalesce($1, current_schema())`,
      [opts.databaseSchema ?? null],
    );
    return (r.rowCount ?? 0) > 0;
  } finally {
    await client.end();
  }
}
