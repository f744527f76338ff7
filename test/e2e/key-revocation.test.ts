import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { example, PROJECT_ROOT } from '../helpers/fixtures.js';
import { startServer, type TestServer } from '../helpers/server.js';

const exec = promisify(execFile);
const pgUrl = process.env.TEST_DATABASE_URL;
const redisUrl = process.env.TEST_REDIS_URL;

function cliEnv(s: TestServer, extra: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = { ...(process.env as Record<string, string>), DOVETAIL_DATA_DIR: s.dataDir, LOG_LEVEL: 'silent', DATABASE_URL: '', REDIS_URL: '', ...extra };
  if (s.config.databaseUrl) Object.assign(env, { DATABASE_URL: s.config.databaseUrl, DATABASE_SCHEMA: s.config.databaseSchema ?? '' });
  delete env.DOVETAIL_CONFIG;
  return env;
}

async function revoke(s: TestServer, keyId: string, extra: Record<string, string> = {}): Promise<void> {
  const r = await exec(process.execPath, [path.join(PROJECT_ROOT, 'bin', 'dovetail.js'), 'key', 'revoke', keyId, '--json'], { env: cliEnv(s, extra), cwd: s.dataDir });
  expect(JSON.parse(r.stdout)).toEqual({ id: keyId, revoked: true });
}

/** One authenticated call; its status. */
async function status(s: TestServer, key: string): Promise<number> {
  return (await fetch(`${s.api}/info`, { headers: { authorization: `Bearer ${key}` } })).status;
}

describe('a revoked key stops working at once', { timeout: 120_000 }, () => {
  it('on one instance without a shared bus (the CLI is another process)', async () => {
    const s = await startServer();
    try {
      const { apiKey } = await s.importApp(example('completion-writer.yml'));
      expect([await status(s, apiKey), await status(s, apiKey)]).toEqual([200, 200]);
      const keyId = (await s.runtime.keys.list())[0]!.id;
      if (s.runtime.store.caps.changeStamp) {
        // SQLite: the key is cached while no other process commits; a row changed on the server's
        // own connection behind the cache's back is not seen (so the cache is real)
        const row = await s.runtime.store.db.selectFrom('api_keys').selectAll().where('id', '=', keyId).executeTakeFirstOrThrow();
        await s.runtime.store.db.deleteFrom('api_keys').where('id', '=', keyId).execute();
        expect(await status(s, apiKey)).toBe(200);
        await s.runtime.store.db.insertInto('api_keys').values(row).execute();
      }
      await revoke(s, keyId);
      expect(await status(s, apiKey)).toBe(401);
    } finally {
      await s.close();
    }
  });

  describe.skipIf(!pgUrl || !redisUrl)('on two instances sharing PostgreSQL and Redis', () => {
    let a: TestServer;
    let b: TestServer;
    beforeAll(async () => {
      a = await startServer({ env: { REDIS_URL: redisUrl! } });
      b = await startServer({ env: { REDIS_URL: redisUrl! }, reuse: { dataDir: a.dataDir, schema: a.config.databaseSchema } });
    });
    afterAll(async () => {
      await b?.stop();
      await a?.close();
    });

    it('both instances cache the key, and both refuse it once `key revoke` returns', async () => {
      const { apiKey } = await a.importApp(example('completion-writer.yml'));
      const keyId = (await a.runtime.keys.list())[0]!.id;
      for (const s of [a, b]) expect([await status(s, apiKey), await status(s, apiKey)]).toEqual([200, 200]);
      // the cache is real: with the row gone behind the instances' backs (no announcement), the key still works
      const row = await a.runtime.store.db.selectFrom('api_keys').selectAll().where('id', '=', keyId).executeTakeFirstOrThrow();
      await a.runtime.store.db.deleteFrom('api_keys').where('id', '=', keyId).execute();
      expect(await status(b, apiKey)).toBe(200);
      await a.runtime.store.db.insertInto('api_keys').values(row).execute();

      await revoke(a, keyId, { REDIS_URL: redisUrl!, REDIS_KEY_PREFIX: a.config.redisKeyPrefix });
      expect(await status(a, apiKey)).toBe(401);
      expect(await status(b, apiKey)).toBe(401);
    });
  });
});
