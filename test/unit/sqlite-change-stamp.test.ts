import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSqlite } from '../../src/store/sqlite/open.js';
import type { OpenedDatabase } from '../../src/store/opened.js';

const nextTurn = () => new Promise((r) => setImmediate(r));

describe("SQLite's change stamp", () => {
  let dir: string;
  let opened: OpenedDatabase;
  /** Another connection to the same file, as the CLI's process has. */
  let other: Database.Database;
  beforeAll(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'dovetail-stamp-'));
    opened = openSqlite(dir);
    other = new Database(path.join(dir, 'dovetail.db'));
    other.exec('create table t (x integer)');
  });
  afterAll(async () => {
    other.close();
    await opened.db.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  it("changes after another connection's commit, from the next event-loop turn", async () => {
    const stamp = opened.caps.changeStamp!;
    await nextTurn();
    const before = stamp();
    other.exec('insert into t values (1)');
    // read once per turn: the commit is seen from the next turn on
    expect(stamp()).toBe(before);
    await nextTurn();
    const after = stamp();
    expect(after).not.toBe(before);
    await nextTurn();
    expect(stamp()).toBe(after);
  });

  it("does not change for this connection's own commits", async () => {
    const stamp = opened.caps.changeStamp!;
    await nextTurn();
    const before = stamp();
    await opened.db.schema.createTable('own').addColumn('x', 'integer').execute();
    await nextTurn();
    expect(stamp()).toBe(before);
  });
});
