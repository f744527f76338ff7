import { afterAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PROJECT_ROOT } from '../helpers/fixtures.js';
import { freePort } from '../helpers/free-port.js';

const dataDir = mkdtempSync(path.join(os.tmpdir(), 'dovetail-startup-log-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

/** `dovetail serve` with only `env` (no provider variable of this machine's), until it listens; then SIGTERM. Its stdout (the log). */
async function startAndStop(env: Record<string, string>): Promise<string> {
  const port = await freePort();
  const child = spawn(process.execPath, [path.join(PROJECT_ROOT, 'bin', 'dovetail.js'), 'serve'], {
    env: { PATH: process.env.PATH ?? '', HOME: dataDir, DOVETAIL_DATA_DIR: dataDir, PORT: String(port), HOST: '127.0.0.1', DOVETAIL_SEED_EXAMPLES: 'false', LOG_LEVEL: 'info', ...env },
    cwd: dataDir,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const exit = new Promise((resolve) => child.once('exit', resolve));
  await new Promise<void>((resolve, reject) => {
    child.stderr.on('data', (d: Buffer) => {
      err += d.toString();
      if (err.includes('Dovetail is listening')) resolve();
    });
    void exit.then(() => reject(new Error(`serve exited before listening: ${err}`)));
  });
  child.kill('SIGTERM');
  await exit;
  return out;
}

describe('start-up log', { timeout: 120_000 }, () => {
  it('one line names the settings file and the model providers it sets up (JSON when stdout is not a terminal)', async () => {
    // not ./dovetail.yaml of the working directory: the second start has no settings file
    const file = path.join(dataDir, 'settings.yaml');
    writeFileSync(file, 'providers:\n  yi:\n    protocol: openai\n    base_url: http://127.0.0.1:9/v1\n    api_key: k\n  moonshot:\n    protocol: openai\n');
    const log = await startAndStop({ DOVETAIL_CONFIG: file, DEEPSEEK_API_KEY: 'k' });
    const lines = log.trim().split('\n').map((l) => JSON.parse(l) as { msg: string; settingsFile?: string; providers?: string[] });
    const settings = lines.filter((l) => l.settingsFile !== undefined);
    expect(settings).toHaveLength(1);
    // moonshot is added without its key: not set up
    expect(settings[0]).toMatchObject({ settingsFile: file, providers: ['deepseek', 'yi'] });
    expect(settings[0]!.msg).toBe(`settings: ${file}; model providers: deepseek, yi`);

    const none = await startAndStop({});
    const line = none.trim().split('\n').map((l) => JSON.parse(l) as { msg: string; settingsFile?: string | null }).find((l) => 'settingsFile' in l);
    expect(line).toMatchObject({ settingsFile: null, providers: [], msg: 'settings: environment only (no dovetail.yaml); model providers: none configured (only the built-in mock model answers)' });
  });
});
