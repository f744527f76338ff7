import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Command } from 'commander';
import { PROJECT_ROOT } from '../helpers/fixtures.js';
import { buildCli } from '../../src/cli.js';

const exec = promisify(execFile);
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'dovetail-cli-start-'));
const env = { ...process.env, DOVETAIL_DATA_DIR: dataDir, DATABASE_URL: '', LOG_LEVEL: 'silent' };
const DIST = `${path.join(PROJECT_ROOT, 'dist')}/`;

/** The modules of dist/ and node_modules/ a CLI command loads (through a module loader hook), relative to those folders. */
async function modulesOf(...args: string[]): Promise<{ dist: string[]; packages: string[] }> {
  const out = path.join(dataDir, `modules-${Math.random().toString(36).slice(2)}.txt`);
  await exec(process.execPath, ['--import', path.join(PROJECT_ROOT, 'test', 'helpers', 'record-modules.mjs'), path.join(PROJECT_ROOT, 'bin', 'dovetail.js'), ...args], {
    env: { ...env, RECORD_MODULES_TO: out },
    cwd: dataDir,
  });
  const files = readFileSync(out, 'utf8').trim().split('\n').filter((u) => u.startsWith('file:')).map((u) => new URL(u).pathname);
  return {
    dist: files.filter((f) => f.startsWith(DIST)).map((f) => f.slice(DIST.length)),
    packages: [...new Set(files.filter((f) => f.includes('/node_modules/')).map((f) => f.split('/node_modules/').pop()!.split('/')[0]!))],
  };
}

beforeAll(async () => {
  await exec(process.execPath, [path.join(PROJECT_ROOT, 'bin', 'dovetail.js'), '--init', 'migrate'], { env, cwd: dataDir });
}, 60_000);
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

describe('a CLI command loads only what it uses', { timeout: 60_000 }, () => {
  it('--version and --help load the command definitions and commander, nothing else', async () => {
    for (const args of [['--version'], ['--help'], ['app', '--help']]) {
      const { dist, packages } = await modulesOf(...args);
      expect(dist.filter((f) => f !== 'cli.js' && !/^cli\/[a-z-]+-(commands|options)\.js$/.test(f)), args.join(' ')).toEqual([]);
      expect(packages).toEqual(['commander']);
    }
  });

  it('app list opens the database without the runtime, the engine, the HTTP server or the model providers', async () => {
    const { dist } = await modulesOf('app', 'list');
    expect(dist).toContain('store/db.js');
    expect(dist.filter((f) => /^(runtime\.js|engine\/|http\/|llm\/[a-z-]+-provider\.js|knowledge\/retrieval\/|code\/)/.test(f))).toEqual([]);
  });
});

/** Every command and subcommand of the program, with its path (`app import`). */
function commands(cmd: Command, prefix = ''): { path: string; cmd: Command }[] {
  return cmd.commands.flatMap((c) => {
    const p = `${prefix}${c.name()}`;
    return [{ path: p, cmd: c }, ...commands(c, `${p} `)];
  });
}

describe('help', () => {
  const all = commands(buildCli());

  it('every command has a description', () => {
    expect(all.length).toBeGreaterThan(20);
    expect(all.filter((c) => !c.cmd.description()).map((c) => c.path)).toEqual([]);
  });

  it('no option names its default in its description when commander prints the default too', () => {
    const doubled = all.flatMap((c) => c.cmd.options.filter((o) => o.defaultValue !== undefined && !Array.isArray(o.defaultValue) && /default/i.test(o.description)).map((o) => `${c.path} ${o.flags}`));
    expect(doubled).toEqual([]);
  });
});
