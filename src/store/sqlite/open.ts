import { mkdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, SqliteDialect, sql } from 'kysely';
import * as sqliteVec from 'sqlite-vec';
import { ConfigError } from '../../config-error.js';
import { defaultSqliteMmapMb } from '../../lib/setting-defaults.js';
import type { Database } from '../schema.js';
import type { SearchDialect } from '../../knowledge/index/search-dialect.js';
import type { OpenedDatabase } from '../opened.js';
import { Fts5KeywordIndex } from './fts5-keyword-index.js';
import { SqliteVecIndex } from './sqlite-vec-index.js';
import { SqliteSegmentWriter } from './segment-writer.js';
import { perTurn } from '../../lib/per-turn.js';

/**
 * Opens (creating) `dovetail.db` in `dataDir`, probes FTS5, loads sqlite-vec, and answers the
 * dialect. `mmapMb`: how much of the file is read through a memory map (`SQLITE_MMAP_MB`).
 */
export function openSqlite(dataDir: string, opts: { mmapMb?: number } = {}): OpenedDatabase {
  const mmapMb = opts.mmapMb ?? defaultSqliteMmapMb(os.totalmem());
  mkdirSync(dataDir, { recursive: true });
  const handle = new SQLite(path.join(dataDir, 'dovetail.db'));
  handle.pragma('journal_mode = WAL');
  handle.pragma('synchronous = NORMAL');
  handle.pragma('busy_timeout = 5000');
  // Reads through a memory map instead of copying every page out of the pager: a sqlite-vec KNN
  // reads all of a dataset's vectors per query, which takes about half the time this way. The
  // mapped pages count in the process's RSS, hence a setting sized to the machine.
  handle.pragma(`mmap_size = ${Math.floor(mmapMb) * 1024 * 1024}`);
  handle.pragma('foreign_keys = ON');
  // SQLite's own lower() folds ASCII only; keyword filters (`lower(col) LIKE …`) compare with
  // JavaScript's lower case, as PostgreSQL's lower() does for any letter.
  handle.function('lower', { deterministic: true }, (v: unknown) => (typeof v === 'string' ? v.toLowerCase() : v === null ? null : String(v).toLowerCase()));
  // sqlite-vec before anything reads the schema: Kysely's migrator introspects every table, and a
  // `vec0` virtual table (created by the vector index) cannot be read without its module.
  sqliteVec.load(handle);
  // The capability probe: keyword search is FTS5 (better-sqlite3 builds it in; a system library may not).
  if (!hasFts5(handle)) {
    handle.close();
    throw new ConfigError('this SQLite build lacks FTS5, which keyword search needs; use the better-sqlite3 build Dovetail ships with, or PostgreSQL (DATABASE_URL)');
  }
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: withStatementCache(handle) }) });
  return {
    db,
    caps: { rowLocks: false, changeStamp: dataVersionPerTurn(handle) },
    dialect: sqliteSearch(db, handle),
    migrationTableExists: async () => {
      const { rows } = await sql`select 1 from sqlite_master where type = 'table' and name = 'kysely_migration'`.execute(db);
      return rows.length > 0;
    },
  };
}

/**
 * SQLite's `data_version`, bumped by every commit of another connection (this process has one), read
 * at most once per event-loop turn (`perTurn`): reading it opens a read transaction on the WAL (file
 * locks), and a burst of requests, each checking its key and app, read it twice per request. A commit
 * by another process is seen by every request that arrived after it, from the turn after the one that
 * read it.
 */
function dataVersionPerTurn(handle: SQLite.Database): () => number {
  const dataVersion = handle.prepare('PRAGMA data_version').pluck();
  const read = perTurn(() => dataVersion.get() as number);
  return () => read(undefined);
}

/** Whether this SQLite library was compiled with FTS5. */
function hasFts5(handle: SQLite.Database): boolean {
  const options = handle.pragma('compile_options') as { compile_options: string }[];
  return options.some((o) => o.compile_options === 'ENABLE_FTS5');
}

/** FTS5, sqlite-vec and prepared-statement inserts, on the one connection Kysely also uses. */
function sqliteSearch(db: Kysely<Database>, handle: SQLite.Database): SearchDialect {
  return {
    name: 'sqlite',
    keywordIndex: () => new Fts5KeywordIndex(db, handle),
    vectorIndex: async () => new SqliteVecIndex(db, handle),
    segmentWriter: () => new SqliteSegmentWriter(handle),
  };
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

