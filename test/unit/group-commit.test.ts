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
}

let dir: string;
let db: Kysely<Db>;

beforeEach(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'dovetail-group-commit-'));
  db = new Kysely<Db>({ dialect: new SqliteDialect({ database: new Database(path.join(dir, 'db.sqlite')) }) });
  await db.schema.createTable('rows').addColumn('id', 'text', (c) => c.primaryKey()).addColumn('n', 'integer').execute();
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
});
