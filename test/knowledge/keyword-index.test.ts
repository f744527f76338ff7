import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { dropSchema, openStore, type Store } from '../../src/store/db.js';
import { describeKeywordIndexContract, type KeywordContractSubject } from './keyword-index.contract.js';

/** The keyword index contract on SQLite (FTS5) and PostgreSQL (tsvector, when TEST_DATABASE_URL is set). */

async function subjectOn(store: Store, rowids: KeywordContractSubject['rowids'], cleanup: () => Promise<void>): Promise<KeywordContractSubject> {
  const index = store.dialect.keywordIndex();
  await index.init();
  return {
    store,
    index,
    rowids,
    async close() {
      await store.destroy();
      await cleanup();
    },
  };
}

describeKeywordIndexContract('SQLite FTS5', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'dovetail-kw-'));
  const store = await openStore({ databaseUrl: undefined, databaseSchema: undefined, dataDir: dir });
  const rowids: KeywordContractSubject['rowids'] = async (db, ids) => {
    const { rows } = await sql<{ id: string; rid: number }>`SELECT id, rowid AS rid FROM segments WHERE id IN (${sql.join(ids.map((i) => sql`${i}`))})`.execute(db);
    const by = new Map(rows.map((r) => [r.id, r.rid]));
    return ids.map((i) => by.get(i)!);
  };
  return subjectOn(store, rowids, async () => rmSync(dir, { recursive: true, force: true }));
});

const pgUrl = process.env.TEST_DATABASE_URL;
if (pgUrl) {
  describeKeywordIndexContract('PostgreSQL tsvector', async () => {
    const schema = `t_${Math.random().toString(36).slice(2, 12)}`;
    const store = await openStore({ databaseUrl: pgUrl, databaseSchema: schema, dataDir: '.' });
    // PostgreSQL indexes rows by itself: the indexer hands the keyword index 0 for every rowid
    return subjectOn(store, async (_db, ids) => ids.map(() => 0), () => dropSchema(pgUrl, schema));
  });
} else process.stdout.write('[keyword-index] NOTICE: TEST_DATABASE_URL is not set; the PostgreSQL tsvector contract is skipped.\n');
