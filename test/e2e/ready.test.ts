import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { startServer, type TestServer } from '../helpers/server.js';
import { dropSchema, openStore } from '../../src/store/db.js';

let s: TestServer;
let origin: string;

beforeAll(async () => {
  s = await startServer();
  origin = s.api.replace(/\/v1$/, '');
});
afterAll(async () => {
  await s?.close();
});

describe('GET /health and GET /ready', () => {
  it('both answer 200 on a migrated, reachable database', async () => {
    expect(await (await fetch(`${origin}/health`)).json()).toEqual({ status: 'ok' });
    const r = await fetch(`${origin}/ready`);
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({ status: 'ready' });
  });

  it('/ready is 503 not_ready naming a migration that is not applied, and ready again once it is', async () => {
    const db = s.runtime.store.db;
    const { rows } = await sql<{ name: string; timestamp: string }>`select name, timestamp from kysely_migration order by name desc limit 1`.execute(db);
    const last = rows[0]!;
    await sql`delete from kysely_migration where name = ${last.name}`.execute(db);
    try {
      const r = await fetch(`${origin}/ready`);
      expect(r.status).toBe(503);
      expect(await r.json()).toEqual({ code: 'not_ready', message: `Not ready: migrations not applied: ${last.name}.`, status: 503 });
      // liveness is not readiness
      expect((await fetch(`${origin}/health`)).status).toBe(200);
    } finally {
      await sql`insert into kysely_migration (name, timestamp) values (${last.name}, ${last.timestamp})`.execute(db);
    }
    expect((await fetch(`${origin}/ready`)).status).toBe(200);
  });

  it.skipIf(!process.env.TEST_DATABASE_URL)('/ready stays 200 while other schemas of the database are created and dropped (other servers starting and stopping)', async () => {
    const pg = (await import('pg')).default;
    const admin = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
    await admin.connect();
    let churning = true;
    const churn = (async () => {
      for (let i = 0; churning; i++) {
        const name = `t_churn_${Math.random().toString(36).slice(2, 10)}`;
        await admin.query(`CREATE SCHEMA ${name}; CREATE TABLE ${name}.a (id serial primary key, x text); CREATE TABLE ${name}.b (id serial primary key, y text)`);
        // as test servers drop theirs: under the lock migrations take, so servers starting in other files are not disturbed
        await dropSchema(process.env.TEST_DATABASE_URL!, name);
      }
    })();
    try {
      const failures: string[] = [];
      for (let i = 0; i < 60; i++) {
        const r = await fetch(`${origin}/ready`);
        if (r.status !== 200) failures.push(`${r.status} ${await r.text()}`);
        else await r.body?.cancel();
      }
      expect(failures).toEqual([]);
    } finally {
      churning = false;
      await churn;
      await admin.end();
    }
  });

  it('a store whose database is gone reports why', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'dovetail-ready-'));
    try {
      const store = await openStore({ databaseUrl: undefined, databaseSchema: undefined, dataDir: dir });
      expect(await store.notReady()).toBeUndefined();
      await store.destroy();
      expect(await store.notReady()).toMatch(/^the database does not answer/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
