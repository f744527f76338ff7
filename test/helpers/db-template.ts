import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { inject } from 'vitest';
import { dropSchema, openStore } from '../../src/store/db.js';

/**
 * A new test database starts as a copy of one the real migrations made, instead of running every
 * migration again: migrating was about half of an in-process server's start on SQLite, and more on
 * PostgreSQL, where migrations also take turns under one lock (src/store/postgres/schema-lock.ts).
 * The template is made once per test process by `openStore` (the migrations as a server runs them),
 * so the copy is what the migrations make; a server started on it finds every migration applied.
 * Tests of the migrations themselves (ready.test.ts, the token-hash tests, `dovetail migrate`,
 * servers in child processes) still run them: on databases of their own, or by deleting a row of
 * `kysely_migration` and restarting.
 */
let sqliteFile: Promise<string> | undefined;

function sqliteTemplate(): Promise<string> {
  sqliteFile ??= (async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dovetail-template-'));
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    const store = await openStore({ databaseUrl: undefined, databaseSchema: undefined, dataDir: dir });
    // Closing the only connection checkpoints the WAL into the file and removes it: one file to copy.
    await store.destroy();
    return path.join(dir, 'dovetail.db');
  })();
  return sqliteFile;
}

/** Puts a migrated, empty `dovetail.db` into `dataDir` unless it already holds one. */
export async function seedSqlite(dataDir: string): Promise<void> {
  const target = path.join(dataDir, 'dovetail.db');
  if (existsSync(target)) return;
  const source = await sqliteTemplate();
  mkdirSync(dataDir, { recursive: true });
  copyFileSync(source, target);
}

/**
 * PostgreSQL: a schema migrated by `openStore` and dumped by `pg_dump` (schema, and the rows of
 * `kysely_migration`), the dump's SQL with the schema's name as a placeholder. Made once per test
 * run by the global setup (`makePostgresTemplate`, handed to the workers with `provide`), else once
 * per process. `undefined` when it cannot be made (no `pg_dump`, or one of another major version
 * than the server's): every server then migrates its own schema.
 */
const PLACEHOLDER = 'dovetail_template_schema_name';
const pgDumps = new Map<string, Promise<string | undefined>>();

export async function makePostgresTemplate(databaseUrl: string): Promise<string | undefined> {
  const schema = `t_tpl_${Math.random().toString(36).slice(2, 12)}`;
  const store = await openStore({ databaseUrl, databaseSchema: schema, dataDir: '.' });
  await store.destroy();
  try {
    const { stdout } = await promisify(execFile)('pg_dump', ['--no-owner', '--no-privileges', '--inserts', '--schema', schema, databaseUrl], { maxBuffer: 16 * 1024 * 1024 });
    // psql's meta-commands (`\restrict …` of newer pg_dump versions) are not SQL
    const sqlText = stdout.split('\n').filter((line) => !line.startsWith('\\')).join('\n');
    if (!sqlText.includes(`CREATE SCHEMA ${schema};`)) return undefined;
    return sqlText.replaceAll(schema, PLACEHOLDER);
  } catch {
    return undefined;
  } finally {
    await dropSchema(databaseUrl, schema);
  }
}

function postgresTemplate(databaseUrl: string): Promise<string | undefined> {
  let dump = pgDumps.get(databaseUrl);
  if (!dump) {
    const provided = databaseUrl === process.env.TEST_DATABASE_URL ? inject('postgresTemplate') : undefined;
    dump = provided !== undefined ? Promise.resolve(provided || undefined) : makePostgresTemplate(databaseUrl);
    pgDumps.set(databaseUrl, dump);
  }
  return dump;
}

declare module 'vitest' {
  export interface ProvidedContext {
    /** The PostgreSQL template's SQL (`makePostgresTemplate`), or '' when the global setup made none. */
    postgresTemplate: string;
  }
}

/** Creates `schema` in `databaseUrl` as a copy of the migrated template (nothing when there is none: the server migrates it). */
export async function seedPostgres(databaseUrl: string, schema: string): Promise<void> {
  const dump = await postgresTemplate(databaseUrl);
  if (!dump) return;
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    // one simple query: every statement of the dump in one implicit transaction, one round trip
    await client.query(dump.replaceAll(PLACEHOLDER, schema));
  } finally {
    await client.end();
  }
}

/** Seeds a new test database (SQLite file in `dataDir`, or PostgreSQL `schema`) from the template. */
export async function seedDatabase(dataDir: string, databaseUrl: string | undefined, schema: string | undefined): Promise<void> {
  if (databaseUrl && schema) await seedPostgres(databaseUrl, schema);
  else if (!databaseUrl) await seedSqlite(dataDir);
}
