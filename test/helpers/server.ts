import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { loadConfig, type Config } from '../../src/config.js';
import { createRuntime, type Runtime, type RuntimeOptions } from '../../src/runtime.js';
import { buildServer } from '../../src/http/server.js';
import { dropSchema } from '../../src/store/db.js';
import { createLogger, type Logger } from '../../src/infra/logger.js';
import type { Clock } from '../../src/infra/clock.js';
import { dropRedisKeys } from './redis-keys.js';
import { seedDatabase } from './db-template.js';

export { freePort } from './free-port.js';
export { dropRedisKeys };

export interface TestServer {
  readonly url: string;
  /** `url` + `/v1`. */
  readonly api: string;
  readonly runtime: Runtime;
  readonly app: FastifyInstance;
  readonly dataDir: string;
  readonly config: Config;
  /** Imports DSL YAML and returns the app id and a fresh app key. */
  importApp(yaml: string): Promise<{ appId: string; apiKey: string }>;
  datasetKey(): Promise<string>;
  /** Stops the server but keeps its data (for restart tests). */
  stop(): Promise<void>;
  close(): Promise<void>;
}

/** Which storage this test file runs on: PostgreSQL when TEST_DATABASE_URL is set, SQLite otherwise (read per call: a worker runs files of both projects' settings one after the other). */
export function testDialect(): 'postgres' | 'sqlite' {
  return process.env.TEST_DATABASE_URL ? 'postgres' : 'sqlite';
}

export interface StartOptions {
  readonly env?: Record<string, string>;
  /** Reuse the data dir / schema of an earlier server (restart tests). */
  readonly reuse?: { dataDir: string; schema: string | undefined };
  readonly overrides?: Partial<Config>;
  /** Ports handed to the runtime (model providers, Human Input gateway). */
  readonly runtime?: Omit<RuntimeOptions, 'logger'>;
  /** A controllable clock (timeouts, deadlines). */
  readonly clock?: Clock;
  /** The server's logger (default: silent, or `TEST_LOG_LEVEL`). */
  readonly logger?: Logger;
  /** Listen on this port (default: a free one); for settings that must name the server's own URL (`APP_WEB_URL`). */
  readonly port?: number;
}


/** Starts the real server on a free port with its own SQLite file or PostgreSQL schema. */
export async function startServer(opts: StartOptions = {}): Promise<TestServer> {
  const dataDir = opts.reuse?.dataDir ?? mkdtempSync(path.join(os.tmpdir(), 'dovetail-test-'));
  const pgUrl = process.env.TEST_DATABASE_URL;
  const schema = opts.reuse?.schema ?? (pgUrl ? `t_${Math.random().toString(36).slice(2, 12)}` : undefined);
  // TEST_QUEUE=bullmq runs every test server's jobs on BullMQ (TEST_REDIS_URL), unless a test picks its own QUEUE.
  const onBullmq = process.env.TEST_QUEUE === 'bullmq' && process.env.TEST_REDIS_URL && opts.env?.QUEUE === undefined && opts.env?.REDIS_URL === undefined;
  const env = onBullmq ? { ...opts.env, QUEUE: 'bullmq', REDIS_URL: process.env.TEST_REDIS_URL! } : opts.env;
  const config = loadConfig(
    {
      DOVETAIL_DATA_DIR: dataDir,
      DOVETAIL_CONFIG: undefined as unknown as string,
      // the test run's shared snapshot folder (vitest.config.ts)
      ...(process.env.CODE_PYTHON_SNAPSHOT_DIR ? { CODE_PYTHON_SNAPSHOT_DIR: process.env.CODE_PYTHON_SNAPSHOT_DIR } : {}),
      ...(pgUrl ? { DATABASE_URL: pgUrl, DATABASE_SCHEMA: schema } : {}),
      // Each test database is a deployment of its own: servers on one database share a Redis prefix
      // (their bus and BullMQ jobs), servers of other test files never see them.
      ...(env?.REDIS_URL ? { REDIS_KEY_PREFIX: `dovetail-test-${path.basename(dataDir)}-${schema ?? 'sqlite'}:` } : {}),
      ...env,
    },
    { port: 0, host: '127.0.0.1', logLevel: 'silent', seedExamples: false, ...opts.overrides },
  );
  // A new server starts on a copy of a migrated database (db-template.ts) instead of migrating.
  if (!opts.reuse && config.databaseUrl === (pgUrl || undefined) && config.databaseSchema === schema) await seedDatabase(dataDir, config.databaseUrl, config.databaseSchema);
  const runtime = await createRuntime(config, { ...opts.runtime, logger: opts.logger ?? createLogger(process.env.TEST_LOG_LEVEL ?? 'silent'), ...(opts.clock ? { clock: opts.clock } : {}) });
  const app = await buildServer(runtime);
  await app.listen({ port: opts.port ?? 0, host: '127.0.0.1' });
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  const url = `http://127.0.0.1:${port}`;
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await app.close();
    await runtime.close();
  };
  return {
    url,
    api: `${url}/v1`,
    runtime,
    app,
    dataDir,
    config,
    async importApp(yaml) {
      const a = await runtime.apps.importDsl(yaml);
      const { apiKey } = await runtime.keys.create('app', a.workspaceId, a.id);
      return { appId: a.id, apiKey };
    },
    async datasetKey() {
      return (await runtime.keys.create('dataset', await runtime.apps.workspaceId(), null)).apiKey;
    },
    stop,
    async close() {
      await stop();
      if (pgUrl && schema) await dropSchema(pgUrl, schema);
      rmSync(dataDir, { recursive: true, force: true });
      // The test's own Redis keys (BullMQ jobs) go with its database.
      if (config.redisUrl && config.redisKeyPrefix.startsWith('dovetail-test-')) await dropRedisKeys(config.redisUrl, config.redisKeyPrefix);
    },
  };
}


/** Restarts a stopped server on the same data. */
export async function restartServer(prev: TestServer, opts: Omit<StartOptions, 'reuse'> = {}): Promise<TestServer> {
  await prev.stop();
  return startServer({ ...opts, reuse: { dataDir: prev.dataDir, schema: prev.config.databaseSchema } });
}

/** A clock tests move by hand; starts at the real time. */
export class ManualClock implements Clock {
  #t = Date.now();
  now(): number {
    return this.#t;
  }
  advance(ms: number): void {
    this.#t += ms;
  }
}
