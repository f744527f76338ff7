/**
 * Issue 14, "Poison indexing job": a 200,000-character document with no whitespace made one
 * `indexing-status` poll take 33 s; 2 MB hung the server, and after every restart the job ran
 * again and hung it again (`attempts 4, max_attempts 3`). Splitting and counting are now linear
 * and run on a worker thread; a job past its attempts is failed for good and its document ends in
 * `error` with the reason.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, testDialect, type TestServer } from '../helpers/server.js';
import { spawnServer, type ServerProcess } from '../helpers/server-process.js';
import { watchHealth, type HealthWatch } from '../helpers/health-watch.js';

/** Letters with no whitespace at all, not repeating (no cache helps): one pre-tokenizer piece. */
function letters(n: number, seed: number): string {
  let x = seed;
  const out = new Array<string>(n);
  for (let i = 0; i < n; i++) {
    x = (x * 1103515245 + 12345) & 0x7fffffff;
    out[i] = String.fromCharCode(97 + (x % 26));
  }
  return out.join('');
}

const headers = (key: string) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' });

async function createDataset(api: string, key: string): Promise<string> {
  const r = await fetch(`${api}/datasets`, { method: 'POST', headers: headers(key), body: JSON.stringify({ name: `kb-${Math.random()}`, indexing_technique: 'economy' }) });
  return ((await r.json()) as { id: string }).id;
}

async function createDocument(api: string, key: string, datasetId: string, text: string): Promise<{ id: string; batch: string }> {
  const r = await fetch(`${api}/datasets/${datasetId}/document/create-by-text`, {
    method: 'POST',
    headers: headers(key),
    body: JSON.stringify({ name: 'poison.txt', text, indexing_technique: 'economy', process_rule: { mode: 'automatic' } }),
  });
  expect(r.status).toBe(200);
  const body = (await r.json()) as { document: { id: string }; batch: string };
  return { id: body.document.id, batch: body.batch };
}

// Chunking and counting are the same code on either storage: the large inputs run on SQLite only.
describe.skipIf(testDialect() === 'postgres')('documents with no whitespace', () => {
  let prep: TestServer;
  let server: ServerProcess;
  let key: string;
  let health: HealthWatch;

  beforeAll(async () => {
    prep = await startServer();
    key = await prep.datasetKey();
    await prep.stop();
    server = await spawnServer(prep, { QUEUE_POLL_MS: '50' });
    health = watchHealth(server.url);
  }, 180_000);

  afterAll(async () => {
    const report = await health?.stop();
    await server?.close();
    await prep?.close();
    expect(report.failures).toEqual([]);
    expect(report.probes).toBeGreaterThan(10);
  }, 180_000);

  for (const [label, size] of [['200,000 characters', 200_000], ['2 MB', 2 * 1024 * 1024]] as const) {
    it(`${label}: indexed to completion while every indexing-status poll and /health answer`, async () => {
      const ds = await createDataset(server.api, key);
      const doc = await createDocument(server.api, key, ds, letters(size, size));
      let status = '';
      let last: Record<string, unknown> = {};
      for (let i = 0; i < 1200 && status !== 'completed' && status !== 'error'; i++) {
        const r = await fetch(`${server.api}/datasets/${ds}/documents/${doc.batch}/indexing-status`, { headers: headers(key) });
        expect(r.status).toBe(200);
        last = ((await r.json()) as { data: Record<string, unknown>[] }).data[0]!;
        status = String(last.indexing_status);
        if (status !== 'completed') await new Promise((res) => setTimeout(res, 100));
      }
      expect(last).toMatchObject({ indexing_status: 'completed', error: null });
      expect(Number(last.total_segments)).toBeGreaterThan(size / 4000);
      const d = (await (await fetch(`${server.api}/datasets/${ds}/documents/${doc.id}`, { headers: headers(key) })).json()) as Record<string, unknown>;
      expect(Number(d.word_count)).toBeGreaterThanOrEqual(size); // chunk overlap counts twice, as Dify
      expect(Number(d.tokens)).toBeGreaterThan(size / 8);
    }, 240_000);
  }
});

describe('a job whose attempts were used up by workers that died', () => {
  it('is failed for good on the next start, its document ends in error with the reason, and no later start runs it again', async () => {
    // 1. A document accepted by a server with no queue worker: its job is queued.
    const first = await startServer({ env: { QUEUE_WORKER: 'false' } });
    const key = await first.datasetKey();
    const ds = await createDataset(first.api, key);
    const doc = await createDocument(first.api, key, ds, 'some text that would index fine');
    const db = first.runtime.store.db;
    const job = await db.selectFrom('jobs').selectAll().where('kind', '=', 'knowledge.index').executeTakeFirstOrThrow();
    // 2. As the issue found it: taken by a worker that hung and was killed on its last attempt (and
    //    once more), mid-split, its lease long expired.
    const past = Date.now() - 3_600_000;
    await db.updateTable('jobs').set({ status: 'running', attempts: 4, max_attempts: 3, lease_until: past, locked_by: 'dead-worker', last_error: null }).where('id', '=', job.id).execute();
    await db.updateTable('indexing_runs').set({ status: 'splitting', owner: 'dead-execution' }).where('document_id', '=', doc.id).execute();
    await db.updateTable('documents').set({ indexing_status: 'splitting' }).where('id', '=', doc.id).execute();
    await first.stop();

    // 3. The next start fails it instead of running it again.
    let server = await spawnServer(first, { QUEUE_POLL_MS: '50' });
    try {
      let d: Record<string, unknown> = {};
      for (let i = 0; i < 200 && d.indexing_status !== 'error'; i++) {
        d = (await (await fetch(`${server.api}/datasets/${ds}/documents/${doc.id}`, { headers: headers(key) })).json()) as Record<string, unknown>;
        if (d.indexing_status !== 'error') await new Promise((res) => setTimeout(res, 50));
      }
      expect(d.indexing_status).toBe('error');
      expect(String(d.error)).toMatch(/^Indexing failed: .*stopped responding/);
      const status = (await (await fetch(`${server.api}/datasets/${ds}/documents/${doc.batch}/indexing-status`, { headers: headers(key) })).json()) as { data: Record<string, unknown>[] };
      expect(status.data[0]).toMatchObject({ indexing_status: 'error', error: d.error });
    } finally {
      await server.close();
    }

    // 4. Another start leaves it alone: the job stays failed with the same attempts.
    server = await spawnServer(first, { QUEUE_POLL_MS: '50' });
    try {
      await new Promise((res) => setTimeout(res, 500));
      const d = (await (await fetch(`${server.api}/datasets/${ds}/documents/${doc.id}`, { headers: headers(key) })).json()) as Record<string, unknown>;
      expect(d.indexing_status).toBe('error');
    } finally {
      await server.close();
    }
    const check = await startServer({ reuse: { dataDir: first.dataDir, schema: first.config.databaseSchema }, env: { QUEUE_WORKER: 'false' } });
    try {
      const row = await check.runtime.store.db.selectFrom('jobs').selectAll().where('id', '=', job.id).executeTakeFirstOrThrow();
      expect(row).toMatchObject({ status: 'failed', attempts: 5 });
      expect(row.last_error).toMatch(/stopped responding/);
    } finally {
      await check.close();
    }
  }, 120_000);
});
