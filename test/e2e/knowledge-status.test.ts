import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.js';
import { kbClient } from '../helpers/kb-client.js';
import { startEmbeddings, type EmbeddingsServer } from '../helpers/knowledge.js';
import { validateResponse } from '../helpers/openapi.js';

let s: TestServer;
let emb: EmbeddingsServer;
let kb: ReturnType<typeof kbClient>;

beforeAll(async () => {
  emb = await startEmbeddings();
  s = await startServer({ env: { QUEUE_POLL_MS: '50', EMBEDDINGS_BASE_URL: emb.baseUrl, EMBEDDINGS_MODEL: 'test-embed', KNOWLEDGE_STATUS_BATCH_MAX: '3' } });
  kb = kbClient(s, await s.datasetKey());
});
afterAll(async () => {
  await s?.close();
  await emb?.close();
});

async function doc(ds: string, name: string, text: string): Promise<string> {
  const r = await kb.call('POST', `/datasets/${ds}/document/create-by-text`, { name, text });
  expect(r.status).toBe(200);
  await kb.settle(ds, r.body.batch);
  return r.body.document.id;
}

const status = (ds: string, action: string, ids: unknown) => kb.call('PATCH', `/datasets/${ds}/documents/status/${action}`, ids === undefined ? {} : { document_ids: ids });
const get = async (ds: string, id: string) => (await kb.call('GET', `/datasets/${ds}/documents/${id}`)).body;

describe('PATCH /datasets/{id}/documents/status/{action}', () => {
  it('disable / enable / archive / un_archive take documents out of retrieval and back', async () => {
    const ds = await kb.dataset('status');
    const a = await doc(ds, 'A', 'Remote work is allowed on Fridays.');
    const b = await doc(ds, 'B', 'Remote villages bake bread.');

    const off = await status(ds, 'disable', [a, b]);
    expect(off.status).toBe(200);
    validateResponse('/datasets/{dataset_id}/documents/status/{action}', 'patch', 200, off.body);
    expect(off.body).toEqual({ result: 'success' });
    const da = await get(ds, a);
    expect(da).toMatchObject({ enabled: false, display_status: 'disabled', indexing_status: 'completed' });
    expect(typeof da.disabled_at).toBe('number');
    expect(typeof da.disabled_by).toBe('string');
    expect(await kb.retrieve(ds, 'remote')).toEqual([]);

    // Already in the state: left alone (still 200); unknown ids are skipped.
    expect((await status(ds, 'disable', [a, '00000000-0000-0000-0000-000000000000'])).body).toEqual({ result: 'success' });
    expect((await get(ds, a)).disabled_at).toBe(da.disabled_at);

    expect((await status(ds, 'enable', [a])).status).toBe(200);
    expect(await get(ds, a)).toMatchObject({ enabled: true, disabled_at: null, disabled_by: null, display_status: 'available' });
    expect(await kb.retrieve(ds, 'remote')).toEqual(['Remote work is allowed on Fridays.']);

    expect((await status(ds, 'archive', [a])).status).toBe(200);
    expect(await get(ds, a)).toMatchObject({ archived: true, display_status: 'archived' });
    expect(await kb.retrieve(ds, 'remote')).toEqual([]);
    expect((await status(ds, 'un_archive', [a, b])).status).toBe(200);
    expect(await get(ds, a)).toMatchObject({ archived: false, display_status: 'available' });
    expect(await kb.retrieve(ds, 'fridays')).toEqual(['Remote work is allowed on Fridays.']);
    // An empty list changes nothing and succeeds, as in Dify.
    expect((await status(ds, 'enable', [])).body).toEqual({ result: 'success' });
  });

  it('refuses bad input, unfinished documents and documents being indexed — changing nothing', async () => {
    const ds = await kb.dataset('status-errors', 'high_quality');
    const ok = await doc(ds, 'Good', 'Remote work is allowed on Fridays.');
    expect(await status(ds, 'delete', [ok])).toEqual({ status: 400, body: { code: 'invalid_action', message: 'Invalid action.', status: 400 } });
    expect((await status(ds, 'disable', undefined)).body).toMatchObject({ code: 'invalid_param', message: 'document_ids is required and must be a list of strings.' });
    expect((await status(ds, 'disable', [1])).body.code).toBe('invalid_param');
    expect((await status(ds, 'disable', ['a', 'b', 'c', 'd'])).body.message).toBe('document_ids must have at most 3 items.');
    expect((await kb.call('PATCH', `/datasets/00000000-0000-0000-0000-000000000000/documents/status/disable`, { document_ids: [ok] })).body).toMatchObject({ status: 404, message: 'Dataset not found.' });

    // A document whose indexing failed cannot be disabled; the batch is refused as a whole.
    const broken = await kb.form('POST', `/datasets/${ds}/document/create-by-file`, { name: 'broken.pdf', bytes: Buffer.from('%PDF-1.4 not a pdf'), mime: 'application/pdf' });
    expect((await kb.settle(ds, broken.body.batch)).indexing_status).toBe('error');
    const r = await status(ds, 'disable', [ok, broken.body.document.id]);
    expect(r.body).toEqual({ code: 'invalid_action', message: 'Document: broken.pdf is not completed.', status: 400 });
    expect((await get(ds, ok)).enabled).toBe(true);

    // A document being indexed refuses every action.
    emb.mode = 'hold';
    const busy = await kb.call('POST', `/datasets/${ds}/document/create-by-text`, { name: 'Busy', text: 'one line\ntwo lines\nthree lines' });
    await emb.waitHeld();
    const held = await status(ds, 'archive', [busy.body.document.id]);
    expect(held.body).toEqual({ code: 'invalid_action', message: 'Document:Busy is being indexed, please try again later', status: 400 });
    emb.release();
    expect((await kb.settle(ds, busy.body.batch)).indexing_status).toBe('completed');
    expect((await status(ds, 'archive', [busy.body.document.id])).status).toBe(200);
  });
});
