import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { restartServer, startServer, type TestServer } from '../helpers/server.js';
import { kbClient } from '../helpers/kb-client.js';
import { startEmbeddings, type EmbeddingsServer } from '../helpers/knowledge.js';

/**
 * Pause / resume of document indexing. Indexing batches (2 texts each) go to an embeddings
 * endpoint the test holds, so a pause lands at a known point.
 */
let emb: EmbeddingsServer;
const servers: TestServer[] = [];

beforeAll(async () => {
  emb = await startEmbeddings();
});
afterAll(async () => {
  for (const s of servers) await s.close().catch(() => undefined);
  await emb?.close();
});

const ENV = { QUEUE_POLL_MS: '50', EMBEDDINGS_BATCH_SIZE: '2' };
async function start(prev?: TestServer, extra: Record<string, string> = {}): Promise<TestServer> {
  const env = { ...ENV, EMBEDDINGS_BASE_URL: emb.baseUrl, EMBEDDINGS_MODEL: 'test-embed', ...extra };
  const s = prev ? await restartServer(prev, { env }) : await startServer({ env });
  servers.push(s);
  return s;
}

const LINES = ['alpha apples are red', 'bravo bananas are yellow', 'charlie cherries are dark', 'delta dates are sweet', 'echo elderberries are small', 'foxtrot figs are soft'];

describe('pause and resume document indexing', () => {
  it('stops between batches, reports paused durably (across a restart), resumes after the last committed batch', async () => {
    let s = await start();
    let kb = kbClient(s, await s.datasetKey());
    const ds = await kb.dataset('pause', 'high_quality');

    emb.mode = 'hold';
    const c = await kb.call('POST', `/datasets/${ds}/document/create-by-text`, { name: 'Fruit', text: LINES.join('\n') });
    expect(c.status).toBe(200);
    const id = c.body.document.id as string;
    const batch = c.body.batch as string;
    await emb.waitHeld(); // batch 1 (2 lines) at the embeddings endpoint
    emb.release();
    emb.mode = 'hold'; // batch 2 will be held
    await emb.waitHeld();
    const textsBefore = emb.texts;
    expect(textsBefore).toBe(2);

    const p = await patch(s, ds, id, 'pause');
    expect(p).toEqual({ status: 204, body: null });
    // The batch in flight is answered, but its execution no longer owns the run: nothing more is written.
    emb.release();
    const st = (await kb.call('GET', `/datasets/${ds}/documents/${batch}/indexing-status`)).body.data[0];
    expect(st).toMatchObject({ indexing_status: 'paused', completed_segments: 2, total_segments: 6, completed_at: null });
    expect(typeof st.paused_at).toBe('number');
    expect((await kb.call('GET', `/datasets/${ds}/documents/${id}`)).body).toMatchObject({ indexing_status: 'paused', display_status: 'paused' });
    // A paused document is not served, cannot be updated, and pausing it again is refused.
    expect(await kb.retrieve(ds, 'apples', { search_method: 'keyword_search' })).toEqual([]);
    expect((await kb.call('POST', `/datasets/${ds}/documents/${id}/update-by-text`, { name: 'Fruit', text: 'x' })).body.message).toBe('Document is not available');
    expect((await patch(s, ds, id, 'pause')).body).toEqual({ code: 'document_indexing', message: 'Cannot pause completed document.', status: 400 });

    // Durable: a restart keeps the pause, and no worker picks the run up.
    s = await start(s);
    kb = kbClient(s, await s.datasetKey());
    await new Promise((r) => setTimeout(r, 300)); // several queue polls
    expect((await kb.call('GET', `/datasets/${ds}/documents/${batch}/indexing-status`)).body.data[0]).toMatchObject({ indexing_status: 'paused', completed_segments: 2 });
    expect(emb.texts).toBe(textsBefore + 2); // only the answered in-flight batch, nothing after the pause

    const r = await patch(s, ds, id, 'resume');
    expect(r.status).toBe(204);
    const done = await kb.settle(ds, batch);
    expect(done).toMatchObject({ indexing_status: 'completed', completed_segments: 6, total_segments: 6, paused_at: null });
    // Resumed after the 2 committed lines: 4 more texts embedded, not 6.
    expect(emb.texts).toBe(textsBefore + 2 + 4);
    const rows = await s.runtime.store.db.selectFrom('segments').select(['position', 'content']).where('document_id', '=', id).orderBy('position').execute();
    expect(rows.map((x) => x.content)).toEqual(LINES);
    expect((await kb.retrieve(ds, 'apples figs', { search_method: 'keyword_search', top_k: 10 })).sort()).toEqual(['alpha apples are red', 'foxtrot figs are soft']);
    const doc = (await kb.call('GET', `/datasets/${ds}/documents/${id}`)).body;
    expect(doc).toMatchObject({ indexing_status: 'completed', display_status: 'available', word_count: LINES.join('').length });
    // Resuming a document that is not paused is refused.
    expect((await patch(s, ds, id, 'resume')).body).toEqual({ code: 'document_indexing', message: 'Document is not in paused status.', status: 400 });
    expect((await patch(s, ds, id, 'pause')).body.message).toBe('Cannot pause completed document.');
    expect((await patch(s, ds, '00000000-0000-0000-0000-000000000000', 'pause')).body).toMatchObject({ status: 404, message: 'Document not found.' });
  });

  it('parent-child documents resume after their last committed parent', async () => {
    const s = await start();
    const kb = kbClient(s, await s.datasetKey());
    const ds = await kb.dataset('pause-parents', 'high_quality');
    const text = [0, 2, 4].map((i) => `${LINES[i]}\n${LINES[i + 1]}`).join('\n\n');
    const rule = { mode: 'hierarchical', rules: { parent_mode: 'paragraph', segmentation: { separator: '\\n\\n', max_tokens: 200 }, subchunk_segmentation: { separator: '\\n', max_tokens: 50 } } };
    emb.mode = 'hold';
    const c = await kb.call('POST', `/datasets/${ds}/document/create-by-text`, { name: 'Fruit', text, doc_form: 'hierarchical_model', process_rule: rule });
    expect(c.status).toBe(200);
    const id = c.body.document.id as string;
    await emb.waitHeld(); // parent 1 (2 children)
    emb.release();
    emb.mode = 'hold';
    await emb.waitHeld(); // parent 2
    const before = emb.texts;
    expect((await patch(s, ds, id, 'pause')).status).toBe(204);
    emb.release();
    expect((await kb.call('GET', `/datasets/${ds}/documents/${c.body.batch}/indexing-status`)).body.data[0]).toMatchObject({ indexing_status: 'paused', completed_segments: 1, total_segments: 3 });
    expect((await patch(s, ds, id, 'resume')).status).toBe(204);
    expect(await kb.settle(ds, c.body.batch)).toMatchObject({ indexing_status: 'completed', completed_segments: 3 });
    expect(emb.texts).toBe(before + 2 + 4); // the in-flight batch, then parents 2 and 3 only
    const parents = await s.runtime.store.db.selectFrom('parent_chunks').select('position').where('document_id', '=', id).orderBy('position').execute();
    expect(parents.map((p) => p.position)).toEqual([1, 2, 3]);
    const r = await kb.call('POST', `/datasets/${ds}/retrieve`, { query: 'figs', retrieval_model: { search_method: 'keyword_search', top_k: 2 } });
    expect(r.body.records[0].segment.content).toBe(`${LINES[4]}\n${LINES[5]}`);
  });

  it('a document paused before any worker took it stays paused across a restart, then indexes in full', async () => {
    let s = await start(undefined, { QUEUE_WORKER: 'false' });
    let kb = kbClient(s, await s.datasetKey());
    const ds = await kb.dataset('pause-waiting', 'economy');
    const c = await kb.call('POST', `/datasets/${ds}/document/create-by-text`, { name: 'Fruit', text: LINES.join('\n') });
    const id = c.body.document.id as string;
    expect((await patch(s, ds, id, 'pause')).status).toBe(204);
    s = await start(s); // now with a worker, which finds the queued job and leaves the paused run alone
    kb = kbClient(s, await s.datasetKey());
    await new Promise((r) => setTimeout(r, 300));
    expect((await kb.call('GET', `/datasets/${ds}/documents/${c.body.batch}/indexing-status`)).body.data[0]).toMatchObject({ indexing_status: 'paused', completed_segments: 0, processing_started_at: null });
    expect((await patch(s, ds, id, 'resume')).status).toBe(204);
    expect(await kb.settle(ds, c.body.batch)).toMatchObject({ indexing_status: 'completed', completed_segments: 6 });
    expect(await kb.retrieve(ds, 'figs')).toEqual(['foxtrot figs are soft']);
  });
});

const keys = new Map<TestServer, string>();
async function keyOf(s: TestServer): Promise<string> {
  if (!keys.has(s)) keys.set(s, await s.datasetKey());
  return keys.get(s)!;
}

async function patch(s: TestServer, ds: string, id: string, what: 'pause' | 'resume') {
  const r = await fetch(`${s.api}/datasets/${ds}/documents/${id}/processing/${what}`, { method: 'PATCH', headers: { authorization: `Bearer ${await keyOf(s)}` } });
  const text = await r.text();
  return { status: r.status, body: text ? JSON.parse(text) : null };
}
