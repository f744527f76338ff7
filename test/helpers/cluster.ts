/**
 * Dovetail processes started through the bin (`dovetail serve --role …`), as an operator starts
 * them, on one shared database (and Redis, and bucket when the environment names them): the
 * building blocks of the role and multi-process tests. A process can be killed with any signal
 * (SIGKILL for crash tests) and restarted on the same data.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PROJECT_ROOT } from './fixtures.js';
import { dropSchema } from '../../src/store/db.js';

export type Role = 'api' | 'worker' | 'all';

/** Where every process of a cluster keeps its data: one data dir, one SQLite file or PostgreSQL schema. */
export interface SharedData {
  readonly dataDir: string;
  /** Set on PostgreSQL. */
  readonly databaseUrl: string | undefined;
  readonly schema: string | undefined;
  /** The environment every process of the cluster gets (database, Redis, storage, upstreams). */
  readonly env: Record<string, string>;
  /** Drops the schema and deletes the data dir. */
  remove(): Promise<void>;
}

/**
 * A fresh data dir and (when TEST_DATABASE_URL is set) schema; `env` is added to every process
 * started on it (REDIS_URL, STORAGE_TYPE=s3 and the S3_* settings, OPENAI_BASE_URL, QUEUE_POLL_MS…).
 */
export function sharedData(env: Record<string, string> = {}): SharedData {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'dovetail-cluster-'));
  const databaseUrl = process.env.TEST_DATABASE_URL || undefined;
  const schema = databaseUrl ? `t_cl_${Math.random().toString(36).slice(2, 10)}` : undefined;
  const base: Record<string, string> = {
    DOVETAIL_DATA_DIR: dataDir,
    DOVETAIL_SEED_EXAMPLES: 'false',
    HOST: '127.0.0.1',
    PORT: '0',
    LOG_LEVEL: 'warn',
    // several processes per test on a PostgreSQL that other test files share (100 connections)
    ...(databaseUrl ? { DATABASE_URL: databaseUrl, DATABASE_SCHEMA: schema!, DATABASE_POOL_SIZE: '4' } : { DATABASE_URL: '' }),
  };
  return {
    dataDir,
    databaseUrl,
    schema,
    env: { ...base, ...env },
    async remove() {
      if (databaseUrl && schema) await dropSchema(databaseUrl, schema);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Processes started here and still running: killed when this test process exits (a failed or timed-out test). */
const RUNNING = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of RUNNING) c.kill('SIGKILL');
});

/** The environment of a child process: this process's, less what would point it elsewhere, plus `env`. */
function childEnv(env: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = { ...(process.env as Record<string, string>) };
  for (const k of ['DOVETAIL_CONFIG', 'DOVETAIL_ROLE', 'QUEUE_WORKER', 'npm_lifecycle_event', 'REDIS_URL', 'STORAGE_TYPE']) delete out[k];
  return { ...out, ...env };
}

/** Runs a one-shot CLI command on the shared data (`--init` creates the database); resolves with stdout. */
export async function cliOn(data: SharedData, args: string[], env: Record<string, string> = {}): Promise<string> {
  const child = spawn(process.execPath, [path.join(PROJECT_ROOT, 'bin', 'dovetail.js'), ...args], { env: childEnv({ ...data.env, LOG_LEVEL: 'silent', ...env }), cwd: data.dataDir, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  if (code !== 0) throw new Error(`dovetail ${args.join(' ')} exited ${code}: ${stderr}`);
  return stdout;
}

export interface RoleProcess {
  readonly role: Role;
  readonly url: string;
  /** `url` + `/v1`. */
  readonly api: string;
  readonly pid: number;
  /** stderr so far (the address line, warnings). */
  stderr(): string;
  /** stdout so far (the JSON log lines). */
  stdout(): string;
  alive(): boolean;
  /** The exit code or signal name, once it exited. */
  readonly exit: Promise<string>;
  /** Sends `signal` (SIGKILL for a crash) and waits for the exit. */
  kill(signal?: NodeJS.Signals): Promise<string>;
  /** SIGTERM (graceful shutdown), SIGKILL after 10 s; waits for the exit. */
  close(): Promise<void>;
}

/**
 * Starts `dovetail serve --role <role>` (or, for `worker` with `shorthand`, `dovetail worker`) on
 * `data`, with `env` on top; resolves once it prints its address.
 */
export async function startRole(data: SharedData, role: Role, opts: { env?: Record<string, string>; shorthand?: boolean } = {}): Promise<RoleProcess> {
  const args = opts.shorthand && role === 'worker' ? ['worker'] : ['serve', '--role', role];
  const child: ChildProcess = spawn(process.execPath, [path.join(PROJECT_ROOT, 'bin', 'dovetail.js'), ...args], {
    env: childEnv({ ...data.env, ...opts.env }),
    cwd: data.dataDir,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  let stdout = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  let exited = false;
  RUNNING.add(child);
  const exit = new Promise<string>((resolve) =>
    child.once('exit', (code, signal) => {
      exited = true;
      RUNNING.delete(child);
      resolve(signal ?? String(code));
    }),
  );
  const url = await new Promise<string>((resolve, reject) => {
    child.stderr!.on('data', (d: Buffer) => {
      stderr += d.toString();
      const m = /listening on (http:\/\/\S+)\/v1/.exec(stderr);
      if (m) resolve(m[1]!);
    });
    void exit.then((how) => reject(new Error(`dovetail ${args.join(' ')} exited (${how}) before listening: ${stderr}`)));
  });
  const kill = async (signal: NodeJS.Signals = 'SIGTERM') => {
    if (!exited) child.kill(signal);
    return exit;
  };
  return {
    role,
    url,
    api: `${url}/v1`,
    pid: child.pid!,
    stderr: () => stderr,
    stdout: () => stdout,
    alive: () => !exited,
    exit,
    kill,
    async close() {
      const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await kill('SIGTERM');
      clearTimeout(t);
    },
  };
}

/** `apis` api-role and `workers` worker-role processes on one shared data (see `sharedData`). */
export interface Cluster {
  readonly data: SharedData;
  readonly apis: RoleProcess[];
  readonly workers: RoleProcess[];
  /** Starts one more process of `role` (after a kill, or to scale out). */
  add(role: Role, env?: Record<string, string>): Promise<RoleProcess>;
  /** Stops every process that is still alive; the data stays (call `data.remove()`). */
  stop(): Promise<void>;
}

export async function startCluster(data: SharedData, counts: { apis: number; workers: number }, env: Record<string, string> = {}): Promise<Cluster> {
  const apis: RoleProcess[] = [];
  const workers: RoleProcess[] = [];
  let n = 0;
  const add = async (role: Role, extra: Record<string, string> = {}) => {
    // On a shared database each process gets a data dir of its own, as on separate machines:
    // nothing can pass between them through the local disk.
    const own: Record<string, string> = {};
    if (data.databaseUrl) {
      own.DOVETAIL_DATA_DIR = path.join(data.dataDir, `${role}-${++n}`);
      mkdirSync(own.DOVETAIL_DATA_DIR, { recursive: true });
    }
    const p = await startRole(data, role, { env: { ...own, ...env, ...extra } });
    (role === 'worker' ? workers : apis).push(p);
    return p;
  };
  const cluster: Cluster = {
    data,
    apis,
    workers,
    add,
    async stop() {
      await Promise.all([...apis, ...workers].filter((p) => p.alive()).map((p) => p.close()));
    },
  };
  try {
    // one after the other: the first applies the migrations, the others find them applied
    for (let i = 0; i < counts.apis; i++) await add('api');
    for (let i = 0; i < counts.workers; i++) await add('worker');
  } catch (err) {
    await cluster.stop();
    throw err;
  }
  return cluster;
}
