import Database from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { CompiledOnce } from '../../src/store/compiled-once.js';

interface Db {
  t: { id: string; a: string | null; b: number | undefined };
}

let db: Kysely<Db>;
beforeAll(async () => {
  db = new Kysely<Db>({ dialect: new SqliteDialect({ database: new Database(':memory:') }) });
  await db.schema.createTable('t').addColumn('id', 'text', (c) => c.primaryKey()).addColumn('a', 'text').addColumn('b', 'integer', (c) => c.defaultTo(7)).execute();
});
afterAll(() => db.destroy());

describe('CompiledOnce', () => {
  it('compiles a shape once and runs it again with new parameters', async () => {
    const once = new CompiledOnce();
    const compile = vi.fn();
    const insert = (row: Db['t']) =>
      once.run(db, 'insert t', () => {
        compile();
        return db.insertInto('t').values(row);
      }, Object.values(row));
    await insert({ id: '1', a: 'x', b: 1 });
    await insert({ id: '2', a: null, b: 2 });
    expect(compile).toHaveBeenCalledTimes(1);
    expect(await db.selectFrom('t').selectAll().orderBy('id').execute()).toEqual([
      { id: '1', a: 'x', b: 1 },
      { id: '2', a: null, b: 2 },
    ]);
  });

  it('keeps no SQL when the parameters were not given in the order the builder binds them', async () => {
    const once = new CompiledOnce();
    const compile = vi.fn();
    const update = (id: string, a: string) =>
      once.run(db, 'update t', () => {
        compile();
        return db.updateTable('t').set({ a }).where('id', '=', id);
      }, [id, a]); // wrong order: set value first, then the id
    await update('1', 'y');
    await update('2', 'z');
    expect(compile).toHaveBeenCalledTimes(2);
    expect((await db.selectFrom('t').select(['id', 'a']).orderBy('id').execute()).map((r) => r.a)).toEqual(['y', 'z']);
  });

  it('a call with an undefined value is compiled anew (Kysely leaves that column out)', async () => {
    const once = new CompiledOnce();
    const run = (row: { id: string; a: string; b?: number }) => once.run(db, 'insert t2', () => db.insertInto('t').values(row), Object.values(row));
    await run({ id: '3', a: 'p', b: 3 });
    await run({ id: '4', a: 'q', b: undefined });
    expect(await db.selectFrom('t').select(['id', 'b']).where('id', 'in', ['3', '4']).orderBy('id').execute()).toEqual([
      { id: '3', b: 3 },
      { id: '4', b: 7 },
    ]);
  });
});
