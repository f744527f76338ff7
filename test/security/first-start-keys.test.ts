import { afterAll, describe, expect, it } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PROJECT_ROOT } from '../helpers/fixtures.js';
import { dropSchema } from '../../src/store/db.js';

const pgUrl = process.env.TEST_DATABASE_URL;
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'dovetail-first-start-'));
const schema = pgUrl ? `t_fs_${Math.random().toString(36).slice(2, 10)}` : undefined;
let child: ChildProcess | undefined;

afterAll(async () => {
  if (child && child.exitCode === null) {
    const exited = new Promise((r) => child!.once('exit', r));
    child.kill('SIGTERM');
    await exited;
  }
  if (pgUrl && schema) await dropSchema(pgUrl, schema);
  rmSync(dataDir, { recursive: true, force: true });
});

describe('the keys printed at first start', { timeout: 120_000 }, () => {
  it('go to the terminal (stderr, plain text) and never into the JSON log on stdout', async () => {
    child = spawn(process.execPath, [path.join(PROJECT_ROOT, 'bin', 'dovetail.js'), 'serve'], {
      cwd: dataDir,
      env: {
        ...process.env,
        DOVETAIL_DATA_DIR: dataDir,
        PORT: '0',
        HOST: '127.0.0.1',
        LOG_LEVEL: 'info',
        DOVETAIL_SEED_EXAMPLES: 'true',
        ...(pgUrl ? { DATABASE_URL: pgUrl, DATABASE_SCHEMA: schema } : { DATABASE_URL: '' }),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (c) => (stdout += c));
    const url = await new Promise<string>((resolve, reject) => {
      child!.stderr!.on('data', (c) => {
        stderr += c;
        const m = /listening on (http:\/\/\S+)\/v1/.exec(stderr);
        if (m) resolve(m[1]!);
      });
      child!.once('exit', (code) => reject(new Error(`serve exited with ${code}: ${stderr}`)));
    });
    // 1. The keys are on stderr, as plain text.
    const keys = [...stderr.matchAll(/\bapp-[A-Za-z0-9_-]{16,}/g)].map((m) => m[0]);
    expect(keys.length).toBeGreaterThan(0);
    // 2. A request with one of them is logged on stdout, as JSON, without the key.
    const r = await fetch(`${url}/v1/parameters?api_key=${keys[0]}`, { headers: { authorization: `Bearer ${keys[0]}` } });
    expect(r.status).toBe(200);
    await new Promise<void>((resolve) => {
      const check = () => (stdout.includes('"msg":"request"') ? resolve() : setTimeout(check, 20));
      check();
    });
    const lines = stdout.split('\n').filter(Boolean);
    for (const line of lines) expect(() => JSON.parse(line), line).not.toThrow();
    for (const key of keys) expect(stdout).not.toContain(key);
  });
});
