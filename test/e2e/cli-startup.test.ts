import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Command } from 'commander';
import { PROJECT_ROOT } from '../helpers/fixtures.js';
import { freePort } from '../helpers/free-port.js';
import { buildCli } from '../../src/cli.js';

const exec = promisify(execFile);
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'dovetail-cli-start-'));
const env = { ...process.env, DOVETAIL_DATA_DIR: dataDir, DATABASE_URL: '', LOG_LEVEL: 'silent' };
const DIST = `${path.join(PROJECT_ROOT, 'dist')}/`;

const RECORD = path.join(PROJECT_ROOT, 'test', 'helpers', 'record-modules.mjs');
const BIN = path.join(PROJECT_ROOT, 'bin', 'dovetail.js');
const recordFile = () => path.join(dataDir, `modules-${Math.random().toString(36).slice(2)}.txt`);

/** The modules of dist/ and node_modules/ a CLI command loads (through a module loader hook), relative to those folders. */
async function modulesOf(...args: string[]): Promise<{ dist: string[]; packages: string[] }> {
  const out = recordFile();
  await exec(process.execPath, ['--import', RECORD, BIN, ...args], {
    env: { ...env, RECORD_MODULES_TO: out },
    cwd: dataDir,
  });
  return recorded(out);
}

/** `dovetail serve` (as `npm start` runs it) until `/health` answers 200: the modules it had loaded by then. */
async function modulesOfServe(): Promise<{ dist: string[]; packages: string[] }> {
  const out = recordFile();
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', RECORD, BIN, 'serve'], { env: { ...env, RECORD_MODULES_TO: out, PORT: String(port), HOST: '127.0.0.1' }, cwd: dataDir, stdio: 'ignore' });
  try {
    for (;;) {
      const status = await fetch(`http://127.0.0.1:${port}/health`).then((r) => r.status, () => 0);
      if (status === 200) break;
      if (child.exitCode !== null) throw new Error(`dovetail serve exited with ${child.exitCode}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    return recorded(out);
  } finally {
    child.kill('SIGTERM');
    if (child.exitCode === null) await new Promise((r) => child.once('exit', r));
  }
}

function recorded(out: string): { dist: string[]; packages: string[] } {
  const files = readFileSync(out, 'utf8').trim().split('\n').filter((u) => u.startsWith('file:') && !u.endsWith('.json')).map((u) => new URL(u).pathname);
  return {
    dist: files.filter((f) => f.startsWith(DIST)).map((f) => f.slice(DIST.length)),
    // a package's name (`@scope/name` for a scoped one) from the last node_modules/ of its path
    packages: [...new Set(files.filter((f) => f.includes('/node_modules/')).map((f) => f.split('/node_modules/').pop()!.split('/').slice(0, f.split('/node_modules/').pop()!.startsWith('@') ? 2 : 1).join('/')))],
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

/**
 * What `serve` must not load before a request needs it (docs/speed.md, "Start-up"): the model SDKs
 * and their HTTP client, the local embedding model, the code sandboxes' interpreters, the document
 * parsers, mail, MCP, the queue and bus clients (Redis is not configured here), PostgreSQL, Ajv (the
 * route validators compile on first use) and the libraries that only some requests use.
 */
const NOT_AT_START = [
  'openai', '@anthropic-ai/sdk', '@aws-sdk', '@smithy', '@energetic-ai', 'undici',
  'pyodide', 'quickjs-emscripten-core', '@jitl',
  'mammoth', 'unpdf', 'exceljs', 'cheerio', 'postal-mime', '@kenjiuno', 'papaparse', 'chardet', 'iconv-lite', 'webvtt-parser', 'dot-properties', 'jszip', 'yazl',
  'nodemailer', '@modelcontextprotocol', 'zod', 'bullmq', 'ioredis', 'pg',
  // (Ajv and fast-json-stringify do load, for /health's own response serializer; yaml for the example apps' seeding)
  'markdown-it', 'cron-parser', 'mathjs', '@opentelemetry/sdk-trace', '@opentelemetry/exporter-trace-otlp-http',
];

describe('the server loads only what answering needs', { timeout: 60_000 }, () => {
  it('serve answers /health without the model SDKs, parsers, sandboxes, mail, MCP, Redis, PostgreSQL or Ajv', async () => {
    const { dist, packages } = await modulesOfServe();
    // the recording saw the server start (ES modules and CommonJS alike)
    expect(dist).toContain('http/server.js');
    expect(packages).toEqual(expect.arrayContaining(['fastify', 'avvio', 'better-sqlite3']));
    // an entry is a package or, without a slash after its @, a whole scope
    expect(packages.filter((p) => NOT_AT_START.some((h) => p === h || p.startsWith(`${h}/`)))).toEqual([]);
    // nor the parts of Dovetail behind them
    expect(dist.filter((f) => /^(code\/sandbox\/(pyodide|quickjs)-worker|knowledge\/ingest\/parse\/(pdf|docx|xlsx|csv|html|epub|pptx|eml|msg|vtt|properties|text|decode)\.js)/.test(f))).toEqual([]);
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
