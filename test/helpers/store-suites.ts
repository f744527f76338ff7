import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { dropSchema, openStore, type Store } from '../../src/store/db.js';
import { seedPostgres, seedSqlite } from './db-template.js';

/** A migrated store and how to throw it away. */
export interface OpenedStore {
  readonly store: Store;
  close(): Promise<void>;
}

/**
 * Calls `suite` once per storage this run has: SQLite in a temporary directory always, and
 * PostgreSQL in a schema of its own when `TEST_DATABASE_URL` is set (a notice names `name` otherwise).
 */
export function onEachStore(name: string, suite: (label: string, open: () => Promise<OpenedStore>) => void): void {
  suite('SQLite', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), `dovetail-${name}-`));
    await seedSqlite(dir);
    const store = await openStore({ databaseUrl: undefined, databaseSchema: undefined, dataDir: dir });
    return { store, close: async () => { await store.destroy(); rmSync(dir, { recursive: true, force: true }); } };
  });
  const pgUrl = process.env.TEST_DATABASE_URL;
  if (pgUrl) {
    suite('PostgreSQL', async () => {
      const schema = `t_${Math.random().toString(36).slice(2, 12)}`;
      await seedPostgres(pgUrl, schema);
      const store = await openStore({ databaseUrl: pgUrl, databaseSchema: schema, dataDir: '.' });
      return { store, close: async () => { await store.destroy(); await dropSchema(pgUrl, schema); } };
    });
  } else process.stdout.write(`[${name}] NOTICE: TEST_DATABASE_URL is not set; the PostgreSQL suite is skipped.\n`);
}
