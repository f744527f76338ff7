import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, unlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { afterAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../helpers/fixtures.js';
import { freePort } from '../helpers/free-port.js';
import { PRODUCTION_INSTALL, ROLE_COMMANDS } from '../helpers/production-install.js';

/**
 * The production install of docs/deployment.md, run for real in a clean copy of the repository's
 * tracked files: the build stage, `npm ci --omit=dev` from npm's cache (offline), then `npm start`'s
 * command and GET /health. The install compiles better-sqlite3 and takes minutes on a busy machine,
 * so it runs only with TEST_PRODUCTION_INSTALL=1 (run it before a release; CI leaves it out to stay
 * well under 15 minutes); without, it is skipped with a notice.
 * The Dockerfile and docker-compose.yml checks below always run.
 */
const RUN_INSTALL = process.env.TEST_PRODUCTION_INSTALL === '1';
if (!RUN_INSTALL) {
  process.stderr.write('[dovetail tests] NOTICE: the production install (npm ci --omit=dev in a clean copy, minutes) is skipped; set TEST_PRODUCTION_INSTALL=1 to run it.\n');
}

const words = (cmd: string): string[] => cmd.trim().split(/\s+/);

/** Runs one documented command (`npm ci`, `npm run build`, …) in `cwd`; throws with its output when it fails. */
function runCommand(cmd: string, cwd: string, env: NodeJS.ProcessEnv, extra: string[] = []): string {
  const [bin, ...args] = words(cmd);
  const r = spawnSync(bin!, [...args, ...extra], { cwd, env, encoding: 'utf8', timeout: 15 * 60_000 });
  const out = `${r.stdout}${r.stderr}`;
  if (r.status !== 0) throw new Error(`\`${cmd}\` exited ${r.status ?? r.signal}:\n${out.slice(-4000)}`);
  return out;
}

describe.skipIf(!RUN_INSTALL)('the production install in a clean directory', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'dovetail-prod-install-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }), 120_000);

  it('builds, installs without the dev dependencies, starts with npm start\'s command and answers /health', async () => {
    // a clean copy: the files git tracks (and new ones it would), as they are in the working tree
    const files = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: PROJECT_ROOT, encoding: 'utf8' }).split('\0').filter(Boolean);
    for (const f of files) {
      const from = path.join(PROJECT_ROOT, f);
      if (!existsSync(from)) continue;
      mkdirSync(path.dirname(path.join(dir, f)), { recursive: true });
      copyFileSync(from, path.join(dir, f));
    }
    expect(existsSync(path.join(dir, 'dist'))).toBe(false);
    const env = { PATH: process.env.PATH, HOME: process.env.HOME ?? os.homedir() };

    // The build stage. Its `npm ci` (every dependency) is stood in for by this checkout's
    // node_modules, which that command made; `npm run build` runs as documented.
    expect(PRODUCTION_INSTALL.build[0]).toBe('npm ci');
    symlinkSync(path.join(PROJECT_ROOT, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
    for (const cmd of PRODUCTION_INSTALL.build.slice(1)) runCommand(cmd, dir, env);
    unlinkSync(path.join(dir, 'node_modules'));
    expect(existsSync(path.join(dir, 'dist', 'cli.js'))).toBe(true);

    // The runtime install, from npm's cache (the network may be closed to the test).
    let installOutput = '';
    for (const cmd of PRODUCTION_INSTALL.install) installOutput += runCommand(cmd, dir, env, ['--offline', '--no-audit', '--no-fund']);
    expect(installOutput).toContain('using the dist/ already built');
    expect(existsSync(path.join(dir, 'node_modules', 'typescript'))).toBe(false);
    expect(existsSync(path.join(dir, 'node_modules', 'fastify'))).toBe(true);

    const port = await freePort();
    const [bin, ...args] = PRODUCTION_INSTALL.start;
    const child = spawn(bin === 'node' ? process.execPath : bin, args, {
      cwd: dir,
      env: { ...env, PORT: String(port), HOST: '127.0.0.1', DOVETAIL_DATA_DIR: path.join(dir, 'data') },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<string>((resolve) => child.once('exit', (code, signal) => resolve(String(signal ?? code))));
    try {
      await Promise.race([
        new Promise<void>((resolve) => {
          const check = () => (/Dovetail is listening/.test(out) ? resolve() : setTimeout(check, 100));
          check();
        }),
        exited.then((how) => {
          throw new Error(`the server exited (${how}) before listening:\n${out}`);
        }),
      ]);
      const res = await fetch(`http://127.0.0.1:${port}/health`);
      expect(res.status).toBe(200);
      // the example apps came from examples/ beside dist/
      expect(out).toContain('Imported the example apps');
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
  }, 20 * 60_000);
});

/** The instructions of one stage of a Dockerfile: `FROM … AS name` opens a stage; continuation lines joined. */
function dockerStages(text: string): Map<string, { instr: string; args: string }[]> {
  const lines = text.replace(/\\\n/g, ' ').split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));
  const stages = new Map<string, { instr: string; args: string }[]>();
  let current: { instr: string; args: string }[] = [];
  for (const line of lines) {
    const m = /^(\w+)\s+(.*)$/.exec(line);
    if (!m) continue;
    const instr = m[1]!.toUpperCase();
    if (instr === 'FROM') {
      current = [];
      stages.set(/\sAS\s+(\S+)/i.exec(m[2]!)?.[1] ?? `stage${stages.size}`, current);
    }
    current.push({ instr, args: m[2]!.trim() });
  }
  return stages;
}

/** The `npm …` commands of a stage's RUN lines (each `&&` part), in order. */
const npmRuns = (stage: { instr: string; args: string }[]): string[] =>
  stage.filter((i) => i.instr === 'RUN').flatMap((i) => i.args.split('&&').map((c) => c.trim().replace(/\s+/g, ' '))).filter((c) => c.startsWith('npm '));

describe('the Dockerfile and docker-compose.yml', () => {
  const dockerfile = readFileSync(path.join(PROJECT_ROOT, 'Dockerfile'), 'utf8');
  const stages = dockerStages(dockerfile);

  it('builds and installs with the commands the production-install test runs', () => {
    expect([...stages.keys()]).toEqual(['build', 'deps', 'runtime']);
    expect(npmRuns(stages.get('build')!)).toEqual(PRODUCTION_INSTALL.build);
    expect(npmRuns(stages.get('deps')!)).toEqual(PRODUCTION_INSTALL.install);
    // the runtime install sits beside the dist/ of the build stage, as in the test
    const deps = stages.get('deps')!;
    const copyDist = deps.findIndex((i) => i.instr === 'COPY' && /--from=build\s+\S*dist/.test(i.args));
    const install = deps.findIndex((i) => i.instr === 'RUN' && i.args.includes(PRODUCTION_INSTALL.install[0]));
    expect(copyDist).toBeGreaterThanOrEqual(0);
    expect(copyDist).toBeLessThan(install);
    expect(npmRuns(stages.get('runtime')!)).toEqual([]);
  });

  it('starts with npm start\'s command, as a user that is not root, with a health check', () => {
    const runtime = stages.get('runtime')!;
    const cmd = runtime.filter((i) => i.instr === 'CMD').at(-1)!;
    expect(JSON.parse(cmd.args)).toEqual(PRODUCTION_INSTALL.start);
    const pkg = JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    expect(pkg.scripts.start).toBe(`exec ${PRODUCTION_INSTALL.start.join(' ')}`);
    const user = runtime.filter((i) => i.instr === 'USER').at(-1)?.args;
    expect(user).toBeDefined();
    expect(['root', '0']).not.toContain(user);
    const health = runtime.find((i) => i.instr === 'HEALTHCHECK');
    expect(health?.args).toContain('/health');
  });

  it('runs the api and worker roles with the documented commands on PostgreSQL with pgvector, Redis and S3', () => {
    const compose = parseYaml(readFileSync(path.join(PROJECT_ROOT, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
      services: Record<string, { command?: string[]; image?: string; environment?: Record<string, string> }>;
    };
    const { api, worker, postgres } = compose.services;
    expect(api!.command).toEqual(ROLE_COMMANDS.api);
    expect(worker!.command).toEqual(ROLE_COMMANDS.worker);
    expect(postgres!.image).toMatch(/pgvector/);
    for (const s of [api!, worker!]) {
      expect(s.environment!.DATABASE_URL).toMatch(/^postgres:\/\/.*@postgres:5432\//);
      expect(s.environment!.REDIS_URL).toBe('redis://redis:6379');
      expect(s.environment!.STORAGE_TYPE).toBe('s3');
    }
    // the commands are the ones docs/deployment.md documents
    const doc = readFileSync(path.join(PROJECT_ROOT, 'docs/deployment.md'), 'utf8');
    for (const cmd of [...PRODUCTION_INSTALL.build, ...PRODUCTION_INSTALL.install, ROLE_COMMANDS.api.join(' '), ROLE_COMMANDS.worker.join(' ')]) {
      expect(doc, cmd).toContain(cmd);
    }
  });
});
