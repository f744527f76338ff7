import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { defaultSqliteMmapMb } from '../../src/config/defaults.js';
import { openSqlite } from '../../src/store/sqlite/open.js';

/** SQLITE_MMAP_MB: how much of the embedded database is mapped into memory (it counts in RSS). */
describe('SQLITE_MMAP_MB', () => {
  const dirs: string[] = [];
  afterAll(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  const mmapOf = async (mmapMb: number | undefined): Promise<number> => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dovetail-mmap-'));
    dirs.push(dir);
    const opened = openSqlite(dir, { mmapMb });
    try {
      const { rows } = await sql<{ mmap_size: number }>`PRAGMA mmap_size`.execute(opened.db);
      return Number(rows[0]!.mmap_size);
    } finally {
      await opened.db.destroy();
    }
  };

  it('sets the mapping of the database file; 0 turns it off', async () => {
    expect(await mmapOf(8)).toBe(8 * 1024 * 1024);
    expect(await mmapOf(0)).toBe(0);
  });

  it('defaults to a thirty-second of the machine memory, between 16 and 256 MB', async () => {
    expect(defaultSqliteMmapMb(2 * 1024 ** 3)).toBe(64);
    expect(defaultSqliteMmapMb(64 * 1024 ** 3)).toBe(256);
    expect(defaultSqliteMmapMb(256 * 1024 ** 2)).toBe(16);
    expect(await mmapOf(undefined)).toBe(defaultSqliteMmapMb(os.totalmem()) * 1024 * 1024);
    expect(loadConfig({ DOVETAIL_DATA_DIR: dirs[0] ?? os.tmpdir() }).sqliteMmapMb).toBe(defaultSqliteMmapMb(os.totalmem()));
  });

  it('a value that is not a whole number of MB is refused, naming the setting', () => {
    expect(() => loadConfig({ SQLITE_MMAP_MB: 'lots' })).toThrow(/SQLITE_MMAP_MB/);
    expect(() => loadConfig({ SQLITE_MMAP_MB: '-1' })).toThrow(/SQLITE_MMAP_MB/);
  });
});
