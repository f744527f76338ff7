/**
 * Bench: how long a one-shot CLI command takes, start to exit, against `node -e 0` (a Node process
 * that loads nothing) measured in the same run: `dovetail --version` (the command definitions
 * only) and `dovetail app list` (those, the settings and the database; not the runtime). Wall time
 * and CPU time (user + system: what a busy machine makes wait). The goal (issue 41): both at most
 * 300 ms on an idle machine. Runs the compiled `bin/dovetail.js`; `npm run build` first.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { fmt, median } from './lib.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const BIN = path.join(ROOT, 'bin', 'dovetail.js');
const RUNS = Number(process.env.BENCH_CLI_RUNS ?? 9);

/** One process to its exit: wall ms and CPU ms (its resource usage as Node reports it for a child). */
function once(args: readonly string[], env: NodeJS.ProcessEnv): Promise<{ wall: number; cpu: number }> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(process.execPath, args, { env, stdio: 'ignore' });
    child.once('error', reject);
    child.once('exit', (code) => {
      const wall = performance.now() - t0;
      if (code !== 0) return reject(new Error(`${args.join(' ')} exited ${code}`));
      resolve({ wall, cpu: cpuOfLastChild() });
    });
  });
}

let lastChildCpu = 0;
/** CPU ms the children waited for have used since the previous call (Linux: /proc; NaN elsewhere). */
function cpuOfLastChild(): number {
  const total = childrenCpuMs();
  const d = total - lastChildCpu;
  lastChildCpu = total;
  return d;
}

/** CPU ms of this process's waited-for children (fields 16 and 17 of /proc/self/stat: cutime, cstime). */
function childrenCpuMs(): number {
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    const f = stat.split(') ')[1]!.split(' ');
    return ((Number(f[13]) + Number(f[14])) * 1000) / 100;
  } catch {
    return Number.NaN;
  }
}

export async function run(): Promise<void> {
  if (!existsSync(path.join(ROOT, 'dist', 'cli.js'))) throw new Error('dist/ is missing: npm run build');
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'dovetail-bench-cli-cmd-'));
  const env = { ...process.env, DOVETAIL_DATA_DIR: dataDir, DATABASE_URL: '', DOVETAIL_SEED_EXAMPLES: 'false', LOG_LEVEL: 'silent' };
  try {
    await once([BIN, '--init', 'migrate'], env);
    const cases: [string, string[]][] = [
      ['node -e 0 (baseline)', ['-e', '0']],
      ['dovetail --version', [BIN, '--version']],
      ['dovetail app list', [BIN, 'app', 'list']],
    ];
    cpuOfLastChild();
    const rows: [string, number, number][] = [];
    for (const [name, args] of cases) {
      const wall: number[] = [];
      const cpu: number[] = [];
      for (let i = 0; i < RUNS; i++) {
        const r = await once(args, env);
        wall.push(r.wall);
        cpu.push(r.cpu);
      }
      rows.push([name, median(wall), median(cpu)]);
    }
    const base = rows[0]!;
    process.stdout.write(`median of ${RUNS}, ms          wall    CPU    wall over baseline\n`);
    for (const [name, wall, cpu] of rows) {
      process.stdout.write(`${name.padEnd(24)} ${fmt(wall, 0).padStart(7)} ${fmt(cpu, 0).padStart(6)}    ${name === base[0] ? '' : `+${fmt(wall - base[1], 0)}`}\n`);
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}
