/**
 * Bench: how long the CLI takes to answer `app list`, and the server to answer `/health` after it
 * is started, through tsx (the TypeScript sources compiled on every start, as before `dist/`) and
 * compiled (`bin/dovetail.js` → `dist/`), and the CPU the compiled server process (all its threads:
 * the warm sandbox and text workers start in the background) has used by the time `/health` answers.
 * Run `npm run build` first.
 */
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { freePort } from '../test/helpers/free-port.js';
import { fmt, median } from './lib.js';

const exec = promisify(execFile);
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const RUNS = 3;

const VARIANTS = {
  tsx: [path.join(ROOT, 'node_modules', 'tsx', 'dist', 'cli.mjs'), path.join(ROOT, 'src', 'cli.ts')],
  compiled: [path.join(ROOT, 'bin', 'dovetail.js')],
} as const;

async function appList(args: readonly string[], env: NodeJS.ProcessEnv): Promise<number> {
  const t0 = performance.now();
  await exec(process.execPath, [...args, 'app', 'list'], { env });
  return performance.now() - t0;
}

/** CPU time (user + system, ms) process `pid` has used so far, all threads. */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
}

/** Resident memory (MB) of process `pid`. */
function rssMb(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((l) => l.startsWith('VmRSS:'))!;
  return Number(line.split(/\s+/)[1]) / 1024;
}

/** `node -e 0`: what any Node.js process costs to start and end, the floor of both figures. */
async function nodeFloor(): Promise<number> {
  const t0 = performance.now();
  await exec(process.execPath, ['-e', '0']);
  return performance.now() - t0;
}

async function startToHealth(args: readonly string[], env: NodeJS.ProcessEnv): Promise<{ ms: number; cpu: number; rss: number }> {
  const port = await freePort();
  const t0 = performance.now();
  const child = spawn(process.execPath, [...args, 'serve'], { env: { ...env, PORT: String(port), HOST: '127.0.0.1' }, stdio: 'ignore' });
  try {
    for (;;) {
      const ok = await fetch(`http://127.0.0.1:${port}/health`).then((r) => r.ok, () => false);
      if (ok) {
        const ms = performance.now() - t0;
        const cpu = cpuMs(child.pid!);
        // idle resident memory: after the background warm-up a start schedules has had its moment
        await new Promise((r) => setTimeout(r, 1500));
        return { ms, cpu, rss: rssMb(child.pid!) };
      }
      if (child.exitCode !== null) throw new Error(`server exited ${child.exitCode}`);
      await new Promise((r) => setTimeout(r, 10));
    }
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
  }
}

export async function run(): Promise<void> {
  if (!existsSync(path.join(ROOT, 'dist', 'cli.js'))) throw new Error('dist/ is missing: npm run build');
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'dovetail-bench-cli-'));
  const env = { ...process.env, DOVETAIL_DATA_DIR: dataDir, DATABASE_URL: '', DOVETAIL_SEED_EXAMPLES: 'false', LOG_LEVEL: 'silent' };
  try {
    await exec(process.execPath, [...VARIANTS.compiled, '--init', 'migrate'], { env });
    type Figures = { list: number; start: number; cpu: number; rss: number };
    const out: Record<string, Figures> = {};
    for (const [name, args] of Object.entries(VARIANTS)) {
      const list: number[] = [];
      const start: number[] = [];
      const cpu: number[] = [];
      const rss: number[] = [];
      for (let i = 0; i < RUNS; i++) {
        list.push(await appList(args, env));
        const s = await startToHealth(args, env);
        start.push(s.ms);
        cpu.push(s.cpu);
        rss.push(s.rss);
      }
      out[name] = { list: median(list), start: median(start), cpu: median(cpu), rss: median(rss) };
    }
    const { tsx, compiled } = out as { tsx: Figures; compiled: Figures };
    process.stdout.write(`median of ${RUNS}, ms        tsx (before)   compiled (after)   ratio\n`);
    process.stdout.write(`CLI app list               ${fmt(tsx.list, 0).padStart(12)}   ${fmt(compiled.list, 0).padStart(16)}   ${(tsx.list / compiled.list).toFixed(2)}x\n`);
    process.stdout.write(`serve → /health answers    ${fmt(tsx.start, 0).padStart(12)}   ${fmt(compiled.start, 0).padStart(16)}   ${(tsx.start / compiled.start).toFixed(2)}x\n`);
    // (tsx runs the server in a child process of its own: only the compiled server's CPU is read)
    process.stdout.write(`  its CPU by then (all threads)   ${'–'.padStart(7)}   ${fmt(compiled.cpu, 0).padStart(16)}\n`);
    process.stdout.write(`  its RSS 1.5 s later, MB         ${'–'.padStart(7)}   ${fmt(compiled.rss, 0).padStart(16)}\n`);
    const floor: number[] = [];
    for (let i = 0; i < RUNS; i++) floor.push(await nodeFloor());
    process.stdout.write(`baseline: node -e 0        ${fmt(median(floor), 0).padStart(12)}\n`);
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}
