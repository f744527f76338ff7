import os, { availableParallelism } from 'node:os';
import path from 'node:path';
import { defineConfig } from 'vitest/config';

/**
 * One `npm test` covers both storages: every test file runs on SQLite (the embedded default), and
 * when TEST_DATABASE_URL names a PostgreSQL database the files that start a server or touch a store
 * run again on it, in the same run and the same pool of workers (see docs/decisions.md, "Test
 * runs"). The files left out of the PostgreSQL project never open a database.
 */
const pgUrl = process.env.TEST_DATABASE_URL ?? '';

/**
 * One folder for the Python sandbox's interpreter snapshot (CODE_PYTHON_SNAPSHOT_DIR) for every test
 * server, in-process or child: the first python3 worker of a run (or of an earlier run) boots CPython
 * and writes it, every later one restores it, as the workers of one deployment do.
 */
const pythonSnapshotDir = process.env.CODE_PYTHON_SNAPSHOT_DIR || path.join(os.tmpdir(), 'dovetail-test-python-snapshots');

/**
 * Files the `postgres` project leaves out. Most never open a database (the engine, tokenizer,
 * chunker, provider tables, executors). The others open one only to start a server, and what they
 * test cannot depend on the storage: the sandboxes, the browser pages, the HTTP hardening (slow
 * clients, malformed requests, SSRF, stalls), the tools' and providers' wire formats, and import
 * warnings. Everything that reads or writes runs, messages, documents, jobs, forms, keys or apps
 * runs on both. `startup-log` starts `dovetail serve` with an environment of its own (no
 * DATABASE_URL: SQLite on either project); `slow-stream-readers` bounds what a stream holds for a
 * client that does not read (the HTTP layer, as `slow-clients`; the run log is paged the same way
 * on both, see test/unit/event-reader.test.ts).
 */
const NOT_ON_POSTGRES = [
  'test/code/**',
  'test/engine/**',
  'test/text/**',
  'test/unit/**',
  'test/llm/**',
  'test/infra/active-requests.test.ts',
  'test/infra/memory-bus.test.ts',
  'test/infra/redis-bus.test.ts',
  'test/infra/disk-blobs.test.ts',
  'test/infra/s3-blobs.test.ts',
  'test/knowledge/chunk.test.ts',
  'test/knowledge/qa-parse.test.ts',
  'test/knowledge/vector-top-k.test.ts',
  'test/knowledge/remove-urls-emails.test.ts',
  'test/moderation/moderation-units.test.ts',
  'test/infra/disk-blobs-slow-open.test.ts',
  'test/e2e/startup-log.test.ts',
  'test/security/slow-stream-readers.test.ts',
  'test/security/js-sandbox.test.ts',
  'test/security/python-sandbox-isolation.test.ts',
  'test/security/template-sandbox.test.ts',
  'test/security/slow-clients.test.ts',
  'test/security/token-stall.test.ts',
  'test/security/ssrf-and-slow-upstreams.test.ts',
  'test/security/bad-input-sweep.test.ts',
  'test/security/wire-edges.test.ts',
  'test/security/upload-crash.test.ts',
  'test/security/secret-env.test.ts',
  'test/tools/builtin-tools.test.ts',
  'test/tools/mcp-tools.test.ts',
  'test/tools/openapi-tools.test.ts',
  'test/tools/openapi-parser.test.ts',
  'test/tools/tool-warnings.test.ts',
  'test/e2e/api-docs-browser.test.ts',
  'test/e2e/form-page-browser.test.ts',
  'test/e2e/web-app-pages.test.ts',
  'test/e2e/web-chat-browser.test.ts',
  'test/e2e/web-runner-browser.test.ts',
  'test/e2e/openapi-description.test.ts',
  'test/e2e/import-warnings.test.ts',
  'test/e2e/model-providers.test.ts',
  'test/e2e/tracing.test.ts',
  'test/e2e/iteration-parallel.test.ts',
  'test/e2e/loop-iteration-code-nodes.test.ts',
  'test/e2e/production-install.test.ts',
];

/**
 * Most test time is spent waiting on sockets, child processes and timers, not on the CPU, so the
 * files run in more workers than the machine has cores (Vitest's default is cores - 1: one worker
 * on a 2-core machine). TEST_WORKERS overrides. Workers are not isolated per file: a worker imports
 * the server's modules once and runs file after file (each file still starts its own servers, on
 * their own SQLite file or PostgreSQL schema); that halves the suite's CPU time.
 */
const workers = Number(process.env.TEST_WORKERS) || Math.max(2, Math.min(4, availableParallelism() + 1));

export default defineConfig({
  test: {
    globalSetup: ['test/helpers/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    isolate: false,
    // No global retry (docs/decisions.md, "Test runs"): a flaky test is fixed, or marked on its own
    // with `{ retry: 1 }` and a comment giving the reason.
    retry: 0,
    maxWorkers: workers,
    projects: [
      { extends: true, test: { name: 'sqlite', include: ['test/**/*.test.ts'], env: { TEST_DATABASE_URL: '', CODE_PYTHON_SNAPSHOT_DIR: pythonSnapshotDir } } },
      ...(pgUrl
        ? [{ extends: true, test: { name: 'postgres', include: ['test/**/*.test.ts'], exclude: NOT_ON_POSTGRES, env: { TEST_DATABASE_URL: pgUrl, CODE_PYTHON_SNAPSHOT_DIR: pythonSnapshotDir } } }]
        : []),
    ],
  },
});
