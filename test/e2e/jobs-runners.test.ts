import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { PROJECT_ROOT } from '../helpers/fixtures.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { kbClient } from '../helpers/kb-client.js';

/**
 * The whole server on each queue runner: documents are indexed through the queue (their jobs
 * enqueued inside the upload's transaction, so through the outbox on BullMQ), and `dovetail jobs
 * list --failed` / `jobs retry` (the compiled bin) see and revive a dead job of the server.
 */
const exec = promisify(execFile);
const redisUrl = process.env.TEST_REDIS_URL;
if (!redisUrl) process.stdout.write('[jobs-runners] NOTICE: TEST_REDIS_URL is not set; the server on BullMQ is not tested (embedded only).\n');

const runners = [{ runner: 'embedded' as const }, ...(redisUrl ? [{ runner: 'bullmq' as const }] : [])];

describe.each(runners)('the server on the $runner queue', ({ runner }) => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startServer({ env: { QUEUE_POLL_MS: '50', QUEUE_MAX_ATTEMPTS: '2', QUEUE_RETRY_DELAY_MS: '10', ...(runner === 'bullmq' ? { REDIS_URL: redisUrl! } : { QUEUE: 'embedded' }) } });
  });
  afterAll(async () => {
    await s?.close();
  });

  async function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    const env: Record<string, string> = { ...(process.env as Record<string, string>), DOVETAIL_DATA_DIR: s.dataDir, LOG_LEVEL: 'silent', DATABASE_URL: '', REDIS_URL: '', QUEUE: runner };
    if (s.config.databaseUrl) Object.assign(env, { DATABASE_URL: s.config.databaseUrl, DATABASE_SCHEMA: s.config.databaseSchema ?? '' });
    if (runner === 'bullmq') Object.assign(env, { REDIS_URL: redisUrl!, REDIS_KEY_PREFIX: s.config.redisKeyPrefix });
    delete env.DOVETAIL_CONFIG;
    try {
      const r = await exec(process.execPath, [path.join(PROJECT_ROOT, 'bin', 'dovetail.js'), ...args], { env, cwd: s.dataDir });
      return { code: 0, stdout: r.stdout, stderr: r.stderr };
    } catch (err) {
      const e = err as { code: number; stdout: string; stderr: string };
      return { code: e.code, stdout: e.stdout, stderr: e.stderr };
    }
  }

  it('uses the runner QUEUE names', () => {
    expect(s.config.queue.runner).toBe(runner);
  });

  it('indexes an uploaded document through the queue', async () => {
    const kb = kbClient(s, await s.datasetKey());
    const ds = await kb.dataset(`jobs-${runner}`);
    const c = await kb.form('POST', `/datasets/${ds}/document/create-by-file`, { name: 'a.txt', bytes: Buffer.from('the queue carries this document\nto its index') }, {});
    expect(c.status).toBe(200);
    expect(await kb.settle(ds, c.body.batch)).toMatchObject({ indexing_status: 'completed' });
    const inTable = await s.runtime.store.db.selectFrom('jobs').select('id').where('kind', '=', 'knowledge.index').execute();
    // The embedded runner keeps jobs in the database; BullMQ keeps them in Redis (and the outbox is drained).
    expect(inTable.length).toBe(runner === 'embedded' ? 1 : 0);
    expect(await s.runtime.store.db.selectFrom('job_outbox').select('id').execute()).toEqual([]);
  });

  it('`jobs list --failed` shows a dead job with its error; `jobs retry` runs it again', async () => {
    let calls = 0;
    const kind = `test.dead-${runner}`;
    s.runtime.queue.register(kind, {
      run: async () => {
        calls++;
        if (calls <= 2) throw new Error(`upstream refused (call ${calls})`);
      },
    });
    const id = await s.runtime.queue.enqueue(kind, { n: 1 });
    await vi.waitFor(async () => expect((await s.runtime.queue.list({ failedOnly: true })).map((j) => j.id)).toContain(id), { timeout: 60_000, interval: 50 });

    const listed = await cli('jobs', 'list', '--failed', '--json');
    expect(listed.code, listed.stderr).toBe(0);
    const dead = (JSON.parse(listed.stdout) as Array<Record<string, unknown>>).find((j) => j.id === id);
    expect(dead).toMatchObject({ kind, status: 'failed', attempts: 2, max_attempts: 2, last_error: 'upstream refused (call 2)' });
    const text = await cli('jobs', 'list', '--failed');
    expect(text.stdout).toContain(`${id}  failed`);

    expect((await cli('jobs', 'retry', 'no-such-job')).stderr).toContain('no failed job with id no-such-job');
    const retried = await cli('jobs', 'retry', id, '--json');
    expect(retried.code, retried.stderr).toBe(0);
    expect(JSON.parse(retried.stdout)).toEqual({ id, retried: true });
    await vi.waitFor(() => expect(calls).toBe(3), { timeout: 20_000, interval: 50 });
    await vi.waitFor(async () => {
      const all = JSON.parse((await cli('jobs', 'list', '--json')).stdout) as Array<Record<string, unknown>>;
      expect(all.find((j) => j.id === id)).toMatchObject({ status: 'done' });
    }, { timeout: 20_000, interval: 200 });
    expect((await cli('jobs', 'list', '--limit', 'x')).stderr).toContain('--limit must be an integer');
    // bounded waits (the dead job's two attempts and back-off: up to 60 s on a loaded host, where a CI
    // run once missed 20 s) and six CLI processes: more than the default test timeout
  }, 120_000);
});
