import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { renameSync, rmSync } from 'node:fs';
import path from 'node:path';
import { sql } from 'kysely';
import { restartServer, startServer, type TestServer } from '../helpers/server.js';
import { kbClient } from '../helpers/kb-client.js';
import { startEmbeddings, type EmbeddingsServer } from '../helpers/knowledge.js';

/** High-quality indexing through an OpenAI-compatible embeddings endpoint the test controls. */
let emb: EmbeddingsServer;
const servers: TestServer[] = [];

beforeAll(async () => {
  emb = await startEmbeddings();
});
afterAll(async () => {
  for (const s of servers) await s.close().catch(() => undefined);
  await emb?.close();
});

async function start(env: Record<string, string> = {}, prev?: TestServer): Promise<TestServer> {
  const base = { QUEUE_POLL_MS: '50', EMBEDDINGS_BASE_URL: emb.baseUrl, EMBEDDINGS_MODEL: 'test-embed', ...env };
  const s = prev ? await restartServer(prev, { env: base }) : await startServer({ env: base });
  servers.push(s);
  return s;
}

describe('atomic swap while re-indexing', () => {
  it('serves the old segments until the new ones are indexed, then only the new ones; a document mid-update cannot be updated again', async () => {
    const s = await start();
    const kb = kbClient(s, await s.datasetKey());
    const ds = await kb.dataset('swap', 'high_quality');
    const info = await kb.call('GET', `/datasets/${ds}`);
    expect(info.body).toMatchObject({ indexing_technique: 'high_quality', embedding_model: 'test-embed', embedding_model_provider: 'openai_api_compatible' });
    const c = await kb.form('POST', `/datasets/${ds}/document/create-by-file`, { name: 'a.txt', bytes: Buffer.from('old pricing is ten dollars\nold support hours are nine to five') }, {});
    await kb.settle(ds, c.body.batch);
    const id = c.body.document.id as string;
    const old = ['old pricing is ten dollars', 'old support hours are nine to five'];
    for (const method of ['keyword_search', 'semantic_search', 'hybrid_search']) {
      expect((await kb.retrieve(ds, 'pricing support', { search_method: method, top_k: 10 })).sort(), method).toEqual(old);
    }

    emb.mode = 'hold';
    const u = await kb.form('PATCH', `/datasets/${ds}/documents/${id}`, { name: 'b.txt', bytes: Buffer.from('new pricing is twenty dollars\nnew support hours are around the clock\nnew refunds within thirty days') }, {});
    expect(u.status).toBe(200);
    await emb.waitHeld();
    await kb.waitStatus(ds, u.body.batch, 'indexing');
    const st = await kb.call('GET', `/datasets/${ds}/documents/${u.body.batch}/indexing-status`);
    expect(st.body.data[0]).toMatchObject({ indexing_status: 'indexing', total_segments: 3, completed_segments: 0 });
    for (const method of ['keyword_search', 'semantic_search', 'hybrid_search']) {
      expect((await kb.retrieve(ds, 'pricing support refunds', { search_method: method, top_k: 10 })).sort(), method).toEqual(old);
    }
    const again = await kb.form('PATCH', `/datasets/${ds}/documents/${id}`, { name: 'c.txt', bytes: Buffer.from('x') }, {});
    expect(again.body).toEqual({ code: 'invalid_param', message: 'Document is not available', status: 400 });
    expect((await kb.call('GET', `/datasets/${ds}/documents/${id}`)).body.display_status).toBe('indexing');

    emb.release();
    expect(await kb.settle(ds, u.body.batch)).toMatchObject({ indexing_status: 'completed', completed_segments: 3, total_segments: 3 });
    const fresh = ['new pricing is twenty dollars', 'new refunds within thirty days', 'new support hours are around the clock'];
    for (const method of ['keyword_search', 'semantic_search', 'hybrid_search']) {
      expect((await kb.retrieve(ds, 'pricing support refunds', { search_method: method, top_k: 10 })).sort(), method).toEqual(fresh);
    }
    // No stale segment or vector survives the swap.
    const db = s.runtime.store.db;
    expect(Number((await db.selectFrom('segments').select((eb) => eb.fn.countAll<number>().as('n')).where('document_id', '=', id).executeTakeFirstOrThrow()).n)).toBe(3);
    // SQLite: the external-content FTS index matches the segments table exactly (throws otherwise).
    if (s.runtime.store.dialect.name === 'sqlite') await sql`INSERT INTO segments_fts (segments_fts, rank) VALUES ('integrity-check', 1)`.execute(db);
    expect(Number((await db.selectFrom('segment_embeddings').select((eb) => eb.fn.countAll<number>().as('n')).where('document_id', '=', id).executeTakeFirstOrThrow()).n)).toBe(3);
  });
});

describe('durable jobs', () => {
  it('a restart during indexing re-runs the job to completed', async () => {
    const s1 = await start();
    const kb1 = kbClient(s1, await s1.datasetKey());
    const ds = await kb1.dataset('restart', 'high_quality');
    emb.mode = 'hold';
    const c = await kb1.call('POST', `/datasets/${ds}/document/create-by-text`, { name: 'R', text: 'restart survives\nsecond line' });
    await emb.waitHeld();
    await kb1.waitStatus(ds, c.body.batch, 'indexing');
    const s2 = await start({}, s1);
    emb.release();
    const kb2 = kbClient(s2, await s2.datasetKey());
    expect(await kb2.settle(ds, c.body.batch)).toMatchObject({ indexing_status: 'completed', total_segments: 2, completed_segments: 2 });
    expect(await kb2.retrieve(ds, 'restart survives', { search_method: 'keyword_search' })).toEqual(['restart survives']);
  });

  it('a server whose database holds vectors restarts (the vector module loads before migrations)', async () => {
    const s1 = await start();
    const kb1 = kbClient(s1, await s1.datasetKey());
    const ds = await kb1.dataset('vectors-restart', 'high_quality');
    const c = await kb1.call('POST', `/datasets/${ds}/document/create-by-text`, { name: 'V', text: 'vectors survive restarts' });
    expect((await kb1.settle(ds, c.body.batch)).indexing_status).toBe('completed');
    const s2 = await start({}, s1);
    const kb2 = kbClient(s2, await s2.datasetKey());
    expect(await kb2.retrieve(ds, 'vectors survive', { search_method: 'semantic_search' })).toEqual(['vectors survive restarts']);
  });

  it('a job left running by a dead process is taken over when its lease expires', async () => {
    const s1 = await start({ QUEUE_WORKER: 'false' });
    const kb1 = kbClient(s1, await s1.datasetKey());
    const ds = await kb1.dataset('lease', 'economy');
    const c = await kb1.call('POST', `/datasets/${ds}/document/create-by-text`, { name: 'L', text: 'lease expiry recovers' });
    expect((await kb1.call('GET', `/datasets/${ds}/documents/${c.body.batch}/indexing-status`)).body.data[0].indexing_status).toBe('waiting');
    // What a process that died mid-job leaves behind: the job claimed, its lease run out.
    await s1.runtime.store.db.updateTable('jobs').set({ status: 'running', attempts: 1, locked_by: 'dead-worker', lease_until: Date.now() - 1 }).where('kind', '=', 'knowledge.index').execute();
    await s1.runtime.store.db.updateTable('indexing_runs').set({ status: 'indexing' }).execute();
    const s2 = await start({ QUEUE_LEASE_MS: '500' }, s1);
    const kb2 = kbClient(s2, await s2.datasetKey());
    expect(await kb2.settle(ds, c.body.batch)).toMatchObject({ indexing_status: 'completed', total_segments: 1 });
    // The document completes inside the job; the job row is marked done just after it.
    await vi.waitFor(async () => {
      const job = await s2.runtime.store.db.selectFrom('jobs').selectAll().where('kind', '=', 'knowledge.index').executeTakeFirstOrThrow();
      expect(job).toMatchObject({ status: 'done', attempts: 2 });
    }, { timeout: 5_000, interval: 20 });
  });

  it('a job that keeps failing ends the document in error with the reason, never stuck in indexing', async () => {
    const s = await start({ QUEUE_MAX_ATTEMPTS: '2', QUEUE_RETRY_DELAY_MS: '10' });
    const kb = kbClient(s, await s.datasetKey());
    const ds = await kb.dataset('failing', 'high_quality');
    emb.mode = 'fail';
    const c = await kb.call('POST', `/datasets/${ds}/document/create-by-text`, { name: 'F', text: 'never embedded' });
    const st = await kb.settle(ds, c.body.batch);
    emb.mode = 'answer';
    expect(st.indexing_status).toBe('error');
    expect(st.error).toBe('Indexing failed: embeddings endpoint answered 500: embedding upstream is down');
    const doc = await kb.call('GET', `/datasets/${ds}/documents/${c.body.document.id}`);
    expect(doc.body).toMatchObject({ indexing_status: 'error', display_status: 'error' });
    await vi.waitFor(async () => {
      const job = await s.runtime.store.db.selectFrom('jobs').selectAll().where('kind', '=', 'knowledge.index').executeTakeFirstOrThrow();
      expect(job).toMatchObject({ status: 'failed', attempts: 2 });
    }, { timeout: 5_000, interval: 20 });
    // A document in error can be replaced with a working file.
    const fix = await kb.form('PATCH', `/datasets/${ds}/documents/${c.body.document.id}`, { name: 'ok.txt', bytes: Buffer.from('embedded at last') }, {});
    expect(fix.status).toBe(200);
    expect((await kb.settle(ds, fix.body.batch)).indexing_status).toBe('completed');
  });
});

describe('infrastructure failures are retried; the document\'s own failures end it at once', () => {
  it('a stored file unreadable for a while is retried and indexed once it is back', async () => {
    const s1 = await start({ QUEUE_WORKER: 'false' });
    const kb1 = kbClient(s1, await s1.datasetKey());
    const ds = await kb1.dataset('flaky-storage', 'economy');
    const c = await kb1.form('POST', `/datasets/${ds}/document/create-by-file`, { name: 'back.txt', bytes: Buffer.from('the file came back') }, {});
    expect(c.status).toBe(200);
    const { blob_key: key } = await s1.runtime.store.db.selectFrom('upload_files').select('blob_key').executeTakeFirstOrThrow();
    const file = path.join(s1.dataDir, 'files', key);
    renameSync(file, `${file}.away`);
    // retries a second apart: the first failure is seen and the file put back long before the next
    const s2 = await start({ QUEUE_MAX_ATTEMPTS: '5', QUEUE_RETRY_DELAY_MS: '1000' }, s1);
    const db = s2.runtime.store.db;
    await vi.waitFor(async () => {
      const job = await db.selectFrom('jobs').selectAll().where('kind', '=', 'knowledge.index').executeTakeFirstOrThrow();
      expect(job).toMatchObject({ status: 'queued', attempts: 1, last_error: 'The document file is missing from storage.' });
    }, { timeout: 10_000, interval: 20 });
    const kb2 = kbClient(s2, await s2.datasetKey());
    expect((await kb2.call('GET', `/datasets/${ds}/documents/${c.body.batch}/indexing-status`)).body.data[0].indexing_status).not.toBe('error');
    renameSync(`${file}.away`, file);
    expect(await kb2.settle(ds, c.body.batch)).toMatchObject({ indexing_status: 'completed', total_segments: 1 });
    // done on a later attempt: the second, or a third when a loaded machine let a retry pass before the file came back
    await vi.waitFor(async () => {
      const job = await db.selectFrom('jobs').selectAll().where('kind', '=', 'knowledge.index').executeTakeFirstOrThrow();
      expect(job.status).toBe('done');
      expect(job.attempts).toBeGreaterThanOrEqual(2);
    }, { timeout: 5_000, interval: 20 });
  });

  it('an embedding upstream answering 5xx is retried, and the document indexes once it answers', async () => {
    const s = await start({ QUEUE_MAX_ATTEMPTS: '5', QUEUE_RETRY_DELAY_MS: '1000' });
    const kb = kbClient(s, await s.datasetKey());
    const ds = await kb.dataset('upstream-down', 'high_quality');
    emb.mode = 'fail';
    try {
      const c = await kb.call('POST', `/datasets/${ds}/document/create-by-text`, { name: 'U', text: 'embedded after the outage' });
      const db = s.runtime.store.db;
      await vi.waitFor(async () => {
        const job = await db.selectFrom('jobs').selectAll().where('kind', '=', 'knowledge.index').executeTakeFirstOrThrow();
        expect(job).toMatchObject({ status: 'queued', attempts: 1, last_error: 'embeddings endpoint answered 500: embedding upstream is down' });
      }, { timeout: 10_000, interval: 20 });
      emb.mode = 'answer';
      expect(await kb.settle(ds, c.body.batch)).toMatchObject({ indexing_status: 'completed', error: null });
      expect(await kb.retrieve(ds, 'outage', { search_method: 'semantic_search' })).toEqual(['embedded after the outage']);
    } finally {
      emb.mode = 'answer';
    }
  });

  it('a file that stays missing ends the document in error with the reason after the last attempt; an unparseable one after the first', async () => {
    const s1 = await start({ QUEUE_WORKER: 'false' });
    const kb1 = kbClient(s1, await s1.datasetKey());
    const ds = await kb1.dataset('gone', 'economy');
    const gone = await kb1.form('POST', `/datasets/${ds}/document/create-by-file`, { name: 'gone.txt', bytes: Buffer.from('never read') }, {});
    const { blob_key: key } = await s1.runtime.store.db.selectFrom('upload_files').select('blob_key').executeTakeFirstOrThrow();
    rmSync(path.join(s1.dataDir, 'files', key));
    const s2 = await start({ QUEUE_MAX_ATTEMPTS: '3', QUEUE_RETRY_DELAY_MS: '10' }, s1);
    const kb2 = kbClient(s2, await s2.datasetKey());
    expect(await kb2.settle(ds, gone.body.batch)).toMatchObject({ indexing_status: 'error', error: 'Indexing failed: The document file is missing from storage.' });
    const db = s2.runtime.store.db;
    const jobOf = async (runId: string) => (await db.selectFrom('jobs').selectAll().execute()).find((j) => JSON.parse(j.payload).runId === runId)!;
    await vi.waitFor(async () => expect(await jobOf(`${gone.body.document.id}:1`)).toMatchObject({ status: 'failed', attempts: 3 }), { timeout: 5_000, interval: 20 });

    const bad = await kb2.form('POST', `/datasets/${ds}/document/create-by-file`, { name: 'bad.pdf', bytes: Buffer.from('not a pdf at all') }, {});
    expect(bad.status).toBe(200);
    const st = await kb2.settle(ds, bad.body.batch);
    expect(st).toMatchObject({ indexing_status: 'error' });
    expect(st.error).toBe('The PDF could not be read: Invalid PDF structure.');
    await vi.waitFor(async () => expect(await jobOf(`${bad.body.document.id}:1`)).toMatchObject({ status: 'done', attempts: 1 }), { timeout: 5_000, interval: 20 });
  });
});

describe('built-in offline embeddings', () => {
  it('semantic search with the packaged model finds a paraphrase that shares no keyword', async () => {
    const s = await startServer({ env: { QUEUE_POLL_MS: '50' } });
    servers.push(s);
    const kb = kbClient(s, await s.datasetKey());
    const ds = await kb.dataset('offline', 'high_quality');
    expect((await kb.call('GET', `/datasets/${ds}`)).body).toMatchObject({ embedding_model: 'universal-sentence-encoder-lite', embedding_model_provider: 'dovetail' });
    const c = await kb.call('POST', `/datasets/${ds}/document/create-by-text`, {
      name: 'mixed',
      text: 'The cat sat on the mat and purred.\nStock markets fell sharply on Monday.\nThe recipe needs two cups of flour.',
    });
    expect((await kb.settle(ds, c.body.batch, 60_000)).indexing_status).toBe('completed');
    expect(await kb.retrieve(ds, 'kitten', { search_method: 'semantic_search', top_k: 1 })).toEqual(['The cat sat on the mat and purred.']);
    expect(await kb.retrieve(ds, 'kitten', { search_method: 'keyword_search', top_k: 1 })).toEqual([]);
    const r = await kb.call('POST', `/datasets/${ds}/retrieve`, { query: 'baking bread', retrieval_model: { search_method: 'hybrid_search', top_k: 3, score_threshold_enabled: true, score_threshold: 0.2 } });
    expect(r.body.records[0].segment.content).toBe('The recipe needs two cups of flour.');
    for (const rec of r.body.records) expect(rec.score).toBeGreaterThanOrEqual(0.2);
  }, 60_000);
});
