import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

/**
 * One `npm test` covers both storages: every test file runs on SQLite (the embedded default), and
 * when TEST_DATABASE_URL names a PostgreSQL database the files that start a server or touch a store
 * run again on it, in the same run and the same pool of workers (see docs/decisions.md, "Test
 * runs"). The files left out of the PostgreSQL project never open a database.
 */
const pgUrl = process.env.TEST_DATABASE_URL ?? '';

/** Test files that never open a database: their outcome cannot depend on the storage. */
const STORAGE_FREE = [
  'test/code/process-executor.test.ts',
  'test/code/sandbox-executor.test.ts',
  'test/engine/**',
  'test/infra/active-requests.test.ts',
  'test/infra/memory-bus.test.ts',
  'test/infra/redis-bus.test.ts',
  'test/knowledge/chunk.test.ts',
  'test/knowledge/qa-parse.test.ts',
  'test/knowledge/vector-top-k.test.ts',
  'test/llm/provider-table.test.ts',
  'test/llm/providers.test.ts',
  'test/security/js-sandbox.test.ts',
  'test/text/**',
  'test/tools/tool-warnings.test.ts',
  'test/unit/**',
];

/**
 * Most test time is spent waiting on sockets, child processes and timers, not on the CPU, so the
 * files run in more workers than the machine has cores (Vitest's default is cores - 1: one worker
 * on a 2-core machine). TEST_WORKERS overrides.
 */
const workers = Number(process.env.TEST_WORKERS) || Math.max(2, Math.min(4, availableParallelism() + 1));

export default defineConfig({
  test: {
    globalSetup: ['test/helpers/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    maxWorkers: workers,
    projects: [
      { extends: true, test: { name: 'sqlite', include: ['test/**/*.test.ts'], env: { TEST_DATABASE_URL: '' } } },
      ...(pgUrl
        ? [{ extends: true, test: { name: 'postgres', include: ['test/**/*.test.ts'], exclude: STORAGE_FREE, env: { TEST_DATABASE_URL: pgUrl } } }]
        : []),
    ],
  },
});
