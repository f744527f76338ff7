import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Kysely, SqliteDialect } from 'kysely';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { GroupCommit } from '../../src/store/group-commit.js';
import { noteArrival } from '../../src/infra/after-arrivals.js';

interface Db {
  rows: { id: string; n: number };
  others: { id: string };
}

let dir: string;
let db: Kysely<Db>;

beforeEach(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'dovetail-group-commit-'));
  db = new Kysely<Db>({ dialect: new SqliteDialect({ database: new Database(path.join(dir, 'db.sqlite')) }) });
  await db.schema.createTable('rows').addColumn('id', 'text', (c) => c.primaryKey()).addColumn('n', 'integer').execute();
  await db.schema.createTable('others').addColumn('id', 'text', (c) => c.primaryKey()).execute();
});
afterEach(async () => {
  await db.destroy();
  rmSync(dir, { recursive: true, force: true });
});

const insert = (id: string, n = 0) => async (tx: Kysely<Db>) => {
  await tx.insertInto('rows').values({ id, n }).execute();
};

describe('GroupCommit', () => {
  it('writes submitted in one turn of the event loop commit in one transaction', async () => {
    const group = new GroupCommit(db);
    const transactions = vi.spyOn(db, 'transaction');
    await Promise.all(Array.from({ length: 50 }, (_, i) => group.run(insert(`r${i}`))));
    expect(transactions).toHaveBeenCalledTimes(1);
    expect((await db.selectFrom('rows').select(db.fn.countAll().as('n')).executeTakeFirstOrThrow()).n).toBe(50);
  });

  it('writes submitted over turns in which requests keep arriving wait for the arrivals and commit together', async () => {
    const group = new GroupCommit(db);
    const transactions = vi.spyOn(db, 'transaction');
    const done: Promise<void>[] = [];
    for (let turn = 0; turn < 5; turn++) {
      done.push(group.run(insert(`r${turn}`)));
      noteArrival();
      await new Promise((r) => setImmediate(r));
    }
    await Promise.all(done);
    expect(transactions).toHaveBeenCalledTimes(1);
    expect((await db.selectFrom('rows').select(db.fn.countAll().as('n')).executeTakeFirstOrThrow()).n).toBe(5);
  });

  it('a failing write fails only its own caller; the others of its batch are committed', async () => {
    await db.insertInto('rows').values({ id: 'taken', n: 0 }).execute();
    const group = new GroupCommit(db);
    const results = await Promise.allSettled([group.run(insert('a')), group.run(insert('taken')), group.run(insert('b'))]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((results[1] as PromiseRejectedResult).reason).toBeInstanceOf(Error);
    const ids = (await db.selectFrom('rows').select('id').orderBy('id').execute()).map((r) => r.id);
    expect(ids).toEqual(['a', 'b', 'taken']);
  });

  it('writes submitted while a batch commits go in the next one, in order', async () => {
    const group = new GroupCommit(db, { maxBatch: 2 });
    const first = group.run(insert('x', 1));
    const later = first.then(() => group.run(async (tx) => void (await tx.updateTable('rows').set({ n: 2 }).where('id', '=', 'x').execute())));
    const others = [group.run(insert('y')), group.run(insert('z'))];
    await Promise.all([first, later, ...others]);
    expect(await db.selectFrom('rows').select(['id', 'n']).orderBy('id').execute()).toEqual([
      { id: 'x', n: 2 },
      { id: 'y', n: 0 },
      { id: 'z', n: 0 },
    ]);
  });

  it('rows given as inserts go in one multi-row INSERT per table, before the writes, and each caller settles with its own rows', async () => {
    const statements: string[] = [];
    const logged = new Kysely<Db>({
      dialect: new SqliteDialect({ database: new Database(path.join(dir, 'db.sqlite')) }),
      log: (e) => void statements.push(e.query.sql.split(' ').slice(0, 3).join(' ')),
    });
    try {
      const group = new GroupCommit(logged);
      await Promise.all([
        ...Array.from({ length: 30 }, (_, i) => group.insert([{ table: 'others', row: { id: `o${i}` } }, { table: 'rows', row: { id: `r${i}`, n: i } }])),
        group.insert([{ table: 'rows', row: { id: 'last', n: 0 } }], async (tx) => void (await tx.updateTable('rows').set({ n: 99 }).where('id', '=', 'r0').execute())),
      ]);
      expect(statements.filter((q) => q.startsWith('insert'))).toEqual(['insert into "others"', 'insert into "rows"']);
      expect(statements.filter((q) => q.startsWith('update'))).toHaveLength(1);
      expect((await db.selectFrom('rows').select(db.fn.countAll().as('n')).executeTakeFirstOrThrow()).n).toBe(31);
      expect((await db.selectFrom('others').select(db.fn.countAll().as('n')).executeTakeFirstOrThrow()).n).toBe(30);
      expect((await db.selectFrom('rows').select('n').where('id', '=', 'r0').executeTakeFirstOrThrow()).n).toBe(99);
    } finally {
      await logged.destroy();
    }
  });

  it('a bad row in a merged INSERT fails only its own caller, whose other rows are not kept either', async () => {
    await db.insertInto('rows').values({ id: 'taken', n: 0 }).execute();
    const group = new GroupCommit(db);
    const results = await Promise.allSettled(
      ['a', 'taken', 'b'].map((id) => group.insert([{ table: 'others', row: { id: `o-${id}` } }, { table: 'rows', row: { id, n: 1 } }])),
    );
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((await db.selectFrom('rows').select('id').orderBy('id').execute()).map((r) => r.id)).toEqual(['a', 'b', 'taken']);
    expect((await db.selectFrom('others').select('id').orderBy('id').execute()).map((r) => r.id)).toEqual(['o-a', 'o-b']);
  });
});
