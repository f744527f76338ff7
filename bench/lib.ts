import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { loadConfig, type Config } from '../src/config.js';
import { createRuntime, type Runtime, type RuntimeOptions } from '../src/runtime.js';
import { buildServer } from '../src/http/server.js';
import { createLogger } from '../src/infra/logger.js';
import { SERVER_NODE_FLAGS } from '../src/cli/node-flags.js';
import type { FastifyInstance } from 'fastify';

/**
 * The Node flags a bench starts a compiled server process with: `npm start`'s (SERVER_NODE_FLAGS),
 * or none with `BENCH_SERVER_FLAGS=0`, to measure without them.
 */
export const BENCH_SERVER_FLAGS: readonly string[] = process.env.BENCH_SERVER_FLAGS === '0' ? [] : SERVER_NODE_FLAGS;
/** BENCH_SERVER_FLAGS as a bench prints them. */
export const benchServerFlagsNote = BENCH_SERVER_FLAGS.length > 0 ? BENCH_SERVER_FLAGS.join(' ') : 'none (BENCH_SERVER_FLAGS=0)';

export interface BenchServer {
  readonly url: string;
  readonly runtime: Runtime;
  readonly app: FastifyInstance;
  close(): Promise<void>;
}

/** The real server on a free port over a fresh SQLite file (or DATABASE_URL when set). */
export async function benchServer(env: Record<string, string> = {}, overrides: Partial<Config> = {}, ports: Omit<RuntimeOptions, 'logger'> = {}): Promise<BenchServer> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'dovetail-bench-'));
  const config = loadConfig({ DOVETAIL_DATA_DIR: dataDir, ...env }, { logLevel: 'silent', seedExamples: false, ...overrides });
  const runtime = await createRuntime(config, { ...ports, logger: createLogger('silent') });
  const app = await buildServer(runtime);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const addr = app.server.address();
  const url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  return {
    url,
    runtime,
    app,
    async close() {
      await app.close();
      await runtime.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export interface LoadResult {
  readonly rps: number;
  readonly p99: number;
  readonly p50: number;
}

/** Drives a URL with autocannon over loopback for `seconds`. */
export async function load(url: string, headers: Record<string, string>, seconds = 5, connections = 20): Promise<LoadResult> {
  const r = await autocannon({ url, headers, duration: seconds, connections });
  if (r.non2xx > 0) throw new Error(`${url}: ${r.non2xx} non-2xx responses`);
  return { rps: r.requests.average, p99: r.latency.p99, p50: r.latency.p50 };
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
}

export function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]!;
}

export function fmt(n: number, digits = 2): string {
  return n.toFixed(digits);
}

/** Milliseconds of each of `n` calls of `f(i)` after `warmup` untimed ones (i counts from 0 over all). */
export async function timed(n: number, warmup: number, f: (i: number) => Promise<void>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n + warmup; i++) {
    const t = performance.now();
    await f(i);
    if (i >= warmup) out.push(performance.now() - t);
  }
  return out;
}

/** Like `timed` for two calls taken in turn each round (neither gains from running first or alone). */
export async function timedPair(n: number, warmup: number, a: () => Promise<void>, b: () => Promise<void>): Promise<[number[], number[]]> {
  const out: [number[], number[]] = [[], []];
  for (let i = 0; i < n + warmup; i++) {
    for (const [j, f] of [a, b].entries()) {
      const t = performance.now();
      await f();
      if (i >= warmup) out[j]!.push(performance.now() - t);
    }
  }
  return out;
}

/** The API key of a new app imported from `dsl` on the bench server. */
export async function benchAppKey(s: BenchServer, dsl: string): Promise<string> {
  const a = await s.runtime.apps.importDsl(dsl);
  return (await s.runtime.keys.create('app', a.workspaceId, a.id)).apiKey;
}
