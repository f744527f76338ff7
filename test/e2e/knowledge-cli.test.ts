import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.js';
import { PROJECT_ROOT } from '../helpers/fixtures.js';
import { kbClient } from '../helpers/kb-client.js';

const run = promisify(execFile);
let s: TestServer;

beforeAll(async () => {
  s = await startServer();
});
afterAll(async () => s?.close());

function cli(args: string[]) {
  const env: Record<string, string> = { ...(process.env as Record<string, string>), DOVETAIL_DATA_DIR: s.dataDir, LOG_LEVEL: 'silent' };
  delete env.DATABASE_URL;
  if (s.config.databaseUrl) Object.assign(env, { DATABASE_URL: s.config.databaseUrl, DATABASE_SCHEMA: s.config.databaseSchema ?? '' });
  return run(process.execPath, [path.join(PROJECT_ROOT, 'bin', 'dovetail.js'), ...args], { env, cwd: s.dataDir });
}

describe('dovetail dataset create', () => {
  it('creates a knowledge base the API then serves; a bad technique fails naming the option', async () => {
    const { stdout } = await cli(['dataset', 'create', '--name', 'From CLI', '--indexing-technique', 'high_quality', '--json']);
    const { dataset_id } = JSON.parse(stdout) as { dataset_id: string };
    expect(dataset_id).toMatch(/^[0-9a-f-]{36}$/);
    const kb = kbClient(s, await s.datasetKey());
    expect((await kb.call('GET', `/datasets/${dataset_id}`)).body).toMatchObject({ name: 'From CLI', indexing_technique: 'high_quality' });
    const bad = await cli(['dataset', 'create', '--name', 'x', '--indexing-technique', 'fast']).catch((e: { stderr: string; code: number }) => e);
    expect((bad as { code: number }).code).toBe(1);
    expect((bad as { stderr: string }).stderr).toMatch(/^database: .*\nerror: indexing_technique must be economy or high_quality\.\n$/);
  }, 90_000);
});
