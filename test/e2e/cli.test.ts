import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { PROJECT_ROOT } from '../helpers/fixtures.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { dropSchema } from '../../src/store/db.js';

const exec = promisify(execFile);
const pgUrl = process.env.TEST_DATABASE_URL;
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'dovetail-cli-'));
const schema = pgUrl ? `t_cli_${Math.random().toString(36).slice(2, 10)}` : undefined;
const env = {
  ...process.env,
  DOVETAIL_DATA_DIR: dataDir,
  LOG_LEVEL: 'silent',
  ...(pgUrl ? { DATABASE_URL: pgUrl, DATABASE_SCHEMA: schema } : { DATABASE_URL: '' }),
};

async function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await exec(process.execPath, [path.join(PROJECT_ROOT, 'bin', 'dovetail.js'), ...args], { env, cwd: dataDir });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

afterAll(async () => {
  if (pgUrl && schema) await dropSchema(pgUrl, schema);
  rmSync(dataDir, { recursive: true, force: true });
});

describe('dovetail CLI', { timeout: 120_000 }, () => {
  let imported: { app_id: string; mode: string; name: string; api_key: string };

  beforeAll(async () => {
    const refused = await cli('app', 'import', path.join(PROJECT_ROOT, 'examples', 'completion-writer.yml'), '--json');
    expect(refused.code).toBe(1);
    // with --json the failure is one JSON document on stdout as well
    expect(JSON.parse(refused.stdout)).toMatchObject({ code: 'invalid_param', message: expect.stringMatching(/^no Dovetail database at /), exit_code: 1 });
    expect(refused.stderr).toMatch(/^error: no Dovetail database at .*DATABASE_URL \/ DOVETAIL_DATA_DIR.*--init/m);
    const r = await cli('--init', 'app', 'import', path.join(PROJECT_ROOT, 'examples', 'completion-writer.yml'), '--json');
    expect(r.stderr).toMatch(pgUrl ? /^database: PostgreSQL postgres:\/\/.* schema t_cli_\w+ \(DATABASE_URL, DATABASE_SCHEMA\)\n$/ : /^database: SQLite .*dovetail\.db \(DOVETAIL_DATA_DIR\)\n$/);
    expect(r.code).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    imported = JSON.parse(lines[0]!);
  }, 120_000);

  it('app import --json prints exactly one JSON object', () => {
    expect(Object.keys(imported).sort()).toEqual(['api_key', 'app_id', 'mode', 'name', 'warnings']);
    expect(imported.mode).toBe('completion');
    expect(imported.api_key).toMatch(/^app-/);
  });

  it('key create --app and --dataset; key list shows no secret; the server accepts the keys', async () => {
    const a = await cli('key', 'create', '--app', imported.app_id, '--json');
    expect(a.code).toBe(0);
    const appKey = JSON.parse(a.stdout).api_key as string;
    expect(appKey).toMatch(/^app-/);
    const d = await cli('key', 'create', '--dataset', '--json');
    expect(JSON.parse(d.stdout).api_key).toMatch(/^dataset-/);
    const list = await cli('key', 'list', '--json');
    const keys = JSON.parse(list.stdout) as { id: string; type: string }[];
    expect(keys).toHaveLength(3);
    expect(list.stdout).not.toContain(appKey);

    const s: TestServer = await startServer({ reuse: { dataDir, schema } });
    try {
      const r = await fetch(`${s.api}/info`, { headers: { authorization: `Bearer ${appKey}` } });
      expect(r.status).toBe(200);
      expect((await r.json()).name).toBe(imported.name);
    } finally {
      await s.stop();
    }

    const revoke = await cli('key', 'revoke', keys[0]!.id);
    expect(revoke.code).toBe(0);
    expect(JSON.parse((await cli('key', 'list', '--json')).stdout)).toHaveLength(2);
  });

  it('a bad DSL file prints one line naming the problem and exits non-zero', async () => {
    const bad = path.join(dataDir, 'bad.yml');
    writeFileSync(bad, 'app:\n  mode: spaceship\n  name: x\n');
    const r = await cli('app', 'import', bad);
    expect(r.code).not.toBe(0);
    expect(r.stderr.trim().split('\n')).toHaveLength(2);
    expect(r.stderr.trim().split('\n')[1]).toContain('app.mode must be one of');
  });

  it('a missing file and bad arguments exit non-zero with one line', async () => {
    const r = await cli('app', 'import', path.join(dataDir, 'nope.yml'));
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^error: cannot read .*nope\.yml: ENOENT\n$/);
    const k = await cli('key', 'create');
    expect(k.code).toBe(1);
    expect(k.stderr).toBe('error: key create needs exactly one of --app APP_ID or --dataset\n');
    const u = await cli('key', 'create', '--app', 'no-such-app');
    expect(u.stderr).toMatch(/^database: .*\nerror: no app with id no-such-app\n$/);
  });
});
