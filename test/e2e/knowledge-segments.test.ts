import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.js';
import { kbClient } from '../helpers/kb-client.js';
import { startEmbeddings, type EmbeddingsServer } from '../helpers/knowledge.js';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { responseErrors } from '../helpers/openapi.js';

let s: TestServer;
let emb: EmbeddingsServer;
let llm: FakeOpenAI;
let kb: ReturnType<typeof kbClient>;

const NO_ID = '00000000-0000-0000-0000-000000000000';
const LINE_RULE = { mode: 'custom', rules: { segmentation: { separator: '\\n', max_tokens: 100 } } };

beforeAll(async () => {
  emb = await startEmbeddings(512);
  llm = await startFakeOpenAI({ reply: (body: Record<string, unknown>) => `Q1: What is said?\nA1: ${(body.messages as { role: string; content: string }[]).find((m) => m.role === 'user')!.content}` });
  s = await startServer({
    env: {
      QUEUE_POLL_MS: '50',
      EMBEDDINGS_BASE_URL: emb.baseUrl,
      EMBEDDINGS_MODEL: 'test-embed',
      OPENAI_API_KEY: 'test-key',
      OPENAI_BASE_URL: llm.baseUrl,
      KNOWLEDGE_QA_MODEL: 'openai/gpt-qa',
      KNOWLEDGE_SEGMENTS_PER_REQUEST_MAX: '3',
      KNOWLEDGE_SEGMENT_MAX_CHARS: '500',
      RETRIEVE_COUNTS_HITS: 'false',
    },
  });
  kb = kbClient(s, await s.datasetKey());
});
afterAll(async () => {
  await s?.close();
  await emb?.close();
  await llm?.close();
});

/**
 * Errors of a segment response against Dify's OpenAPI, less the document's known defect shared
 * with retrieve: it types `answer` as a plain string, while Dify sends null outside Q&A documents.
 */
function contractErrors(path: string, method: string, body: unknown): string[] {
  return responseErrors(path, method, 200, body).filter((e) => !/\/answer must be string/.test(e));
}
const SEGS = '/datasets/{dataset_id}/documents/{document_id}/segments';
const SEG = `${SEGS}/{segment_id}`;

async function doc(ds: string, text: string, extra: Record<string, unknown> = {}): Promise<string> {
  const r = await kb.call('POST', `/datasets/${ds}/document/create-by-text`, { name: 'Handbook', text, process_rule: LINE_RULE, ...extra });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  expect((await kb.settle(ds, r.body.batch)).indexing_status).toBe('completed');
  return r.body.document.id;
}

const segs = (ds: string, d: string) => `/datasets/${ds}/documents/${d}/segments`;
const getDoc = async (ds: string, d: string) => (await kb.call('GET', `/datasets/${ds}/documents/${d}`)).body;
const semantic = { search_method: 'semantic_search', top_k: 10 };
const keyword = { search_method: 'keyword_search', top_k: 10 };

describe('segments of a text document', () => {
  it('lists, creates, reads, edits, disables, enables and deletes segments; retrieval and counts follow at once (economy)', async () => {
    const ds = await kb.dataset('segments-economy');
    const d = await doc(ds, 'Vacation is twenty days a year.\nRemote work is allowed on Fridays.');
    const before = await getDoc(ds, d);

    const list = await kb.call('GET', segs(ds, d));
    expect(list.status).toBe(200);
    expect(contractErrors(SEGS, 'get', list.body)).toEqual([]);
    expect(list.body).toMatchObject({ doc_form: 'text_model', total: 2, page: 1, limit: 20, has_more: false });
    expect(list.body.data.map((x: any) => [x.position, x.content])).toEqual([
      [1, 'Vacation is twenty days a year.'],
      [2, 'Remote work is allowed on Fridays.'],
    ]);
    expect(list.body.data[0]).toMatchObject({ document_id: d, enabled: true, status: 'completed', keywords: [], answer: null, child_chunks: [], word_count: 31, hit_count: 0 });
    expect((await kb.call('GET', `${segs(ds, d)}?limit=1&page=2`)).body).toMatchObject({ total: 2, has_more: false, page: 2, limit: 1, data: [{ position: 2 }] });
    expect((await kb.call('GET', `${segs(ds, d)}?keyword=FRIDAYS`)).body.data.map((x: any) => x.position)).toEqual([2]);
    expect((await kb.call('GET', `${segs(ds, d)}?keyword=%25`)).body.total).toBe(0);
    expect((await kb.call('GET', `${segs(ds, d)}?status=completed&status=error`)).body.total).toBe(2);
    expect((await kb.call('GET', `${segs(ds, d)}?status=error`)).body.total).toBe(0);

    // 1. create: indexed at once, placed last, counted in the document
    const created = await kb.call('POST', segs(ds, d), { segments: [{ content: 'Zebras have black and white stripes.', keywords: ['zebra'] }] });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    expect(contractErrors(SEGS, 'post', created.body)).toEqual([]);
    expect(created.body.doc_form).toBe('text_model');
    const z = created.body.data[0];
    expect(z).toMatchObject({ position: 3, content: 'Zebras have black and white stripes.', keywords: ['zebra'], word_count: 36, enabled: true, status: 'completed' });
    expect(typeof z.created_by).toBe('string');
    expect(await kb.retrieve(ds, 'zebras stripes')).toEqual(['Zebras have black and white stripes.']);
    expect((await getDoc(ds, d)).word_count).toBe(before.word_count + 36);
    expect((await kb.call('GET', segs(ds, d))).body.total).toBe(3);

    const one = await kb.call('GET', `${segs(ds, d)}/${z.id}`);
    expect(contractErrors(SEG, 'get', one.body)).toEqual([]);
    expect(one.body).toEqual({ data: z, doc_form: 'text_model' });

    // 2. new content: the old words are gone from the index, the new ones found
    const upd = await kb.call('POST', `${segs(ds, d)}/${z.id}`, { segment: { content: 'Giraffes have long necks.' } });
    expect(upd.status, JSON.stringify(upd.body)).toBe(200);
    expect(contractErrors(SEG, 'post', upd.body)).toEqual([]);
    expect(upd.body.data).toMatchObject({ id: z.id, position: 3, content: 'Giraffes have long necks.', keywords: ['zebra'], word_count: 25 });
    expect(upd.body.data.index_node_hash).not.toBe(z.index_node_hash);
    expect(await kb.retrieve(ds, 'zebras stripes')).toEqual([]);
    expect(await kb.retrieve(ds, 'giraffes')).toEqual(['Giraffes have long necks.']);
    expect((await getDoc(ds, d)).word_count).toBe(before.word_count + 25);

    // 3. disable: out of retrieval, still listed; a disabled segment cannot be edited unless enabled
    const off = await kb.call('POST', `${segs(ds, d)}/${z.id}`, { segment: { enabled: false } });
    expect(off.body.data).toMatchObject({ enabled: false, content: 'Giraffes have long necks.' });
    expect(typeof off.body.data.disabled_at).toBe('number');
    expect(typeof off.body.data.disabled_by).toBe('string');
    expect(await kb.retrieve(ds, 'giraffes')).toEqual([]);
    expect((await kb.call('POST', `${segs(ds, d)}/${z.id}`, { segment: { content: 'Lions roar.' } })).body).toEqual({ code: 'invalid_param', message: "Can't update disabled segment", status: 400 });
    expect((await kb.call('POST', `${segs(ds, d)}/${z.id}`, { segment: { enabled: false } })).body.message).toBe("Can't update disabled segment");
    const on = await kb.call('POST', `${segs(ds, d)}/${z.id}`, { segment: { enabled: true, keywords: ['giraffe'] } });
    expect(on.body.data).toMatchObject({ enabled: true, disabled_at: null, disabled_by: null, keywords: ['giraffe'], content: 'Giraffes have long necks.' });
    expect(await kb.retrieve(ds, 'giraffes')).toEqual(['Giraffes have long necks.']);

    // 4. delete: gone from the list, the index and the counts
    const del = await kb.call('DELETE', `${segs(ds, d)}/${z.id}`);
    expect(del).toEqual({ status: 204, body: null });
    expect(await kb.retrieve(ds, 'giraffes')).toEqual([]);
    expect((await kb.call('GET', `${segs(ds, d)}/${z.id}`)).body).toEqual({ code: 'not_found', message: 'Segment not found.', status: 404 });
    expect((await kb.call('DELETE', `${segs(ds, d)}/${z.id}`)).status).toBe(404);
    expect((await getDoc(ds, d)).word_count).toBe(before.word_count);
    expect((await kb.call('GET', segs(ds, d))).body.total).toBe(2);

    // An indexed segment can be edited too, and the document's own segments keep serving.
    const first = list.body.data[0];
    await kb.call('POST', `${segs(ds, d)}/${first.id}`, { segment: { content: 'Vacation is thirty days a year.' } });
    expect(await kb.retrieve(ds, 'vacation')).toEqual(['Vacation is thirty days a year.']);
    expect(await kb.retrieve(ds, 'twenty')).toEqual([]);
  });

  it('keeps the vector index in step on a high_quality dataset', async () => {
    const ds = await kb.dataset('segments-hq', 'high_quality');
    const d = await doc(ds, 'Vacation is twenty days a year.\nRemote work is allowed on Fridays.');
    const add = await kb.call('POST', segs(ds, d), { segments: [{ content: 'Zebras have black and white stripes.' }, { content: 'Owls hunt at night.' }] });
    expect(add.status, JSON.stringify(add.body)).toBe(200);
    expect(add.body.data.map((x: any) => x.position)).toEqual([3, 4]);
    const [z, owl] = add.body.data;
    expect((await kb.retrieve(ds, 'zebras stripes', semantic))[0]).toBe('Zebras have black and white stripes.');
    expect((await kb.retrieve(ds, 'owls night', semantic))[0]).toBe('Owls hunt at night.');

    await kb.call('POST', `${segs(ds, d)}/${z.id}`, { segment: { content: 'Giraffes have long necks.' } });
    expect(await kb.retrieve(ds, 'zebras stripes', semantic)).not.toContain('Zebras have black and white stripes.');
    expect((await kb.retrieve(ds, 'giraffes necks', semantic))[0]).toBe('Giraffes have long necks.');

    await kb.call('POST', `${segs(ds, d)}/${owl.id}`, { segment: { enabled: false } });
    expect(await kb.retrieve(ds, 'owls night', semantic)).not.toContain('Owls hunt at night.');
    await kb.call('POST', `${segs(ds, d)}/${owl.id}`, { segment: { enabled: true } });
    expect((await kb.retrieve(ds, 'owls night', semantic))[0]).toBe('Owls hunt at night.');

    const stored = () => s.runtime.store.db.selectFrom('segment_embeddings').select('segment_id').where('segment_id', '=', z.id).execute();
    expect(await stored()).toHaveLength(1);
    expect((await kb.call('DELETE', `${segs(ds, d)}/${z.id}`)).status).toBe(204);
    expect(await stored()).toEqual([]);
    expect(await kb.retrieve(ds, 'giraffes necks', semantic)).not.toContain('Giraffes have long necks.');
    expect((await kb.retrieve(ds, 'giraffes necks', { search_method: 'hybrid_search', top_k: 10 }))).not.toContain('Giraffes have long necks.');
  });
});

describe('segment errors', () => {
  it('answers Dify’s 404s and names the bad field or limit', async () => {
    const ds = await kb.dataset('segments-errors');
    const d = await doc(ds, 'Vacation is twenty days a year.');
    const sid = (await kb.call('GET', segs(ds, d))).body.data[0].id;
    const nf = (message: string) => ({ code: 'not_found', message, status: 404 });
    expect((await kb.call('GET', segs(NO_ID, d))).body).toEqual(nf('Dataset not found.'));
    expect((await kb.call('GET', segs(ds, NO_ID))).body).toEqual(nf('Document not found.'));
    expect((await kb.call('POST', segs(ds, NO_ID), { segments: [{ content: 'x' }] })).body).toEqual(nf('Document not found.'));
    expect((await kb.call('GET', `${segs(ds, d)}/${NO_ID}`)).body).toEqual(nf('Segment not found.'));
    expect((await kb.call('POST', `${segs(ds, d)}/${NO_ID}`, { segment: { content: 'x' } })).body).toEqual(nf('Segment not found.'));
    expect((await kb.call('DELETE', `${segs(ds, d)}/${NO_ID}`)).body).toEqual(nf('Segment not found.'));
    // A segment of another document is not found through this one.
    const other = await doc(ds, 'Remote work is allowed on Fridays.');
    expect((await kb.call('GET', `${segs(ds, other)}/${sid}`)).body).toEqual(nf('Segment not found.'));

    const bad = async (body: unknown) => (await kb.call('POST', segs(ds, d), body)).body;
    expect(await bad({})).toEqual({ code: 'invalid_param', message: 'segments is required.', status: 400 });
    expect((await bad({ segments: 'x' })).message).toBe('segments must be a list of segment objects.');
    expect((await bad({ segments: [] })).message).toBe('segments must have at least 1 item.');
    expect((await bad({ segments: [{ content: 'a' }, { content: 'b' }, { content: 'c' }, { content: 'd' }] })).message).toBe('Exceeded maximum segments limit of 3.');
    expect((await bad({ segments: [{ content: 'ok' }, { content: '   ' }] })).message).toBe('Content is empty (segments[1].content).');
    expect((await bad({ segments: [7] })).message).toBe('segments[0] must be an object.');
    expect((await bad({ segments: [{ content: 'ok', keywords: 'k' }] })).message).toBe('segments[0].keywords must be a list of strings.');
    expect((await bad({ segments: [{ content: 'x'.repeat(501) }] })).message).toBe('segments[0].content must be at most 500 characters (KNOWLEDGE_SEGMENT_MAX_CHARS).');
    const badUpd = async (body: unknown) => (await kb.call('POST', `${segs(ds, d)}/${sid}`, body)).body;
    expect((await badUpd({})).message).toBe('segment is required and must be an object.');
    expect((await badUpd({ segment: { enabled: 'no' } })).message).toBe('segment.enabled must be a boolean.');
    expect((await badUpd({ segment: { content: 5 } })).message).toBe('segment.content must be a string.');
    expect((await badUpd({ segment: { content: '  ' } })).message).toBe('Content is empty (segment.content).');
    expect((await kb.call('GET', `${segs(ds, d)}?limit=101`)).body.message).toBe('limit must be an integer between 1 and 100.');
    // Nothing above changed the document.
    expect((await kb.call('GET', segs(ds, d))).body.data.map((x: any) => x.content)).toEqual(['Vacation is twenty days a year.']);

    // A disabled document takes no new segments (Dify: 404 "Document is disabled.").
    await kb.call('PATCH', `/datasets/${ds}/documents/status/disable`, { document_ids: [d] });
    expect((await kb.call('POST', segs(ds, d), { segments: [{ content: 'x' }] })).body).toEqual(nf('Document is disabled.'));
  });
});

describe('segment edits and document re-indexing', () => {
  it('refuses edits while a new version is being indexed, and the new version replaces earlier edits', async () => {
    const ds = await kb.dataset('segments-reindex', 'high_quality');
    const d = await doc(ds, 'Vacation is twenty days a year.\nRemote work is allowed on Fridays.');
    const [a] = (await kb.call('GET', segs(ds, d))).body.data;
    // An edit made before the update is accepted …
    await kb.call('POST', `${segs(ds, d)}/${a.id}`, { segment: { content: 'Vacation is thirty days a year.' } });

    emb.mode = 'hold';
    const upd = await kb.call('POST', `/datasets/${ds}/documents/${d}/update-by-text`, { name: 'Handbook', text: 'Parking is free.\nLunch is at noon.' });
    expect(upd.status).toBe(200);
    await emb.waitHeld();
    // While the new version is being indexed, the served segments are listed and edits are refused.
    expect((await kb.call('GET', segs(ds, d))).body.data.map((x: any) => x.content)).toEqual(['Vacation is thirty days a year.', 'Remote work is allowed on Fridays.']);
    const busy = { code: 'document_indexing', message: 'The document is being processed and cannot be edited.', status: 400 };
    expect((await kb.call('POST', `${segs(ds, d)}/${a.id}`, { segment: { content: 'Vacation is forty days.' } })).body).toEqual(busy);
    expect((await kb.call('POST', `${segs(ds, d)}/${a.id}`, { segment: { enabled: false } })).body).toEqual(busy);
    expect((await kb.call('DELETE', `${segs(ds, d)}/${a.id}`)).body).toEqual(busy);
    expect((await kb.call('POST', segs(ds, d), { segments: [{ content: 'x' }] })).body).toEqual({ code: 'not_found', message: 'Document is not completed.', status: 404 });
    expect(await kb.retrieve(ds, 'vacation', keyword)).toEqual(['Vacation is thirty days a year.']);
    emb.release();
    expect((await kb.settle(ds, upd.body.batch)).indexing_status).toBe('completed');

    // … is replaced by the new version of the document, as in Dify (a re-index rebuilds the segments from the file).
    const after = (await kb.call('GET', segs(ds, d))).body;
    expect(after.data.map((x: any) => x.content)).toEqual(['Parking is free.', 'Lunch is at noon.']);
    expect(await kb.retrieve(ds, 'vacation', keyword)).toEqual([]);
    expect((await kb.call('GET', `${segs(ds, d)}/${a.id}`)).status).toBe(404);
    // Edits work again on the new version.
    const p = after.data[0];
    expect((await kb.call('POST', `${segs(ds, d)}/${p.id}`, { segment: { content: 'Parking costs two euros.' } })).status).toBe(200);
    expect(await kb.retrieve(ds, 'parking', keyword)).toEqual(['Parking costs two euros.']);
    expect((await getDoc(ds, d)).word_count).toBe('Parking costs two euros.'.length + 'Lunch is at noon.'.length);
  });
});

describe('Q&A and parent-child documents', () => {
  it('qa_model: an answer is required, stored, counted and returned by retrieval', async () => {
    const ds = await kb.dataset('segments-qa');
    const d = await doc(ds, 'Vacation is twenty days a year.', { doc_form: 'qa_model' });
    expect((await kb.call('POST', segs(ds, d), { segments: [{ content: 'Where is the office?' }] })).body).toEqual({ code: 'invalid_param', message: 'Answer is required (segments[0].answer).', status: 400 });
    const c = await kb.call('POST', segs(ds, d), { segments: [{ content: 'Where is the office?', answer: 'In Berlin.' }] });
    expect(c.status, JSON.stringify(c.body)).toBe(200);
    expect(c.body).toMatchObject({ doc_form: 'qa_model', data: [{ content: 'Where is the office?', answer: 'In Berlin.', word_count: 30 }] });
    const id = c.body.data[0].id;
    const r = await kb.call('POST', `/datasets/${ds}/retrieve`, { query: 'office' });
    expect(r.body.records.map((x: any) => [x.segment.content, x.segment.answer])).toEqual([['Where is the office?', 'In Berlin.']]);
    // The answer alone can change; absent, it is kept.
    expect((await kb.call('POST', `${segs(ds, d)}/${id}`, { segment: { answer: 'In Hamburg.' } })).body.data).toMatchObject({ answer: 'In Hamburg.', word_count: 31 });
    expect((await kb.call('POST', `${segs(ds, d)}/${id}`, { segment: { content: 'Where is the main office?' } })).body.data).toMatchObject({ answer: 'In Hamburg.' });
    expect((await kb.call('POST', `${segs(ds, d)}/${id}`, { segment: { answer: ' ' } })).body.message).toBe('Answer is empty (segment.answer).');
  });

  it('hierarchical_model: segments are parent chunks with their child chunks', async () => {
    const ds = await kb.dataset('segments-parents');
    const rule = {
      mode: 'hierarchical',
      rules: { parent_mode: 'paragraph', segmentation: { separator: '\\n\\n', max_tokens: 200 }, subchunk_segmentation: { separator: '\\n', max_tokens: 50, chunk_overlap: 0 } },
    };
    const d = await doc(ds, 'Leave.\nTwenty vacation days.\n\nRemote.\nFridays from home.', { doc_form: 'hierarchical_model', process_rule: rule });
    const list = await kb.call('GET', segs(ds, d));
    expect(contractErrors(SEGS, 'get', list.body)).toEqual([]);
    expect(list.body).toMatchObject({ doc_form: 'hierarchical_model', total: 2 });
    expect(list.body.data[0].child_chunks.map((c: any) => [c.position, c.content, c.type])).toEqual([
      [1, 'Leave.', 'automatic'],
      [2, 'Twenty vacation days.', 'automatic'],
    ]);
    expect(list.body.data[0].child_chunks[0].segment_id).toBe(list.body.data[0].id);

    const c = await kb.call('POST', segs(ds, d), { segments: [{ content: 'Parking.\nThe garage opens at seven.' }] });
    expect(c.status, JSON.stringify(c.body)).toBe(200);
    const p = c.body.data[0];
    expect(p).toMatchObject({ position: 3, content: 'Parking.\nThe garage opens at seven.' });
    expect(p.child_chunks.map((x: any) => x.content)).toEqual(['Parking.', 'The garage opens at seven.']);
    const hit = await kb.call('POST', `/datasets/${ds}/retrieve`, { query: 'garage' });
    expect(hit.body.records.map((x: any) => [x.segment.id, x.child_chunks.map((k: any) => k.content)])).toEqual([[p.id, ['The garage opens at seven.']]]);

    const u = await kb.call('POST', `${segs(ds, d)}/${p.id}`, { segment: { content: 'Parking.\nThe car park opens at eight.', regenerate_child_chunks: true } });
    expect(u.body.data.child_chunks.map((x: any) => x.content)).toEqual(['Parking.', 'The car park opens at eight.']);
    expect(await kb.retrieve(ds, 'garage')).toEqual([]);
    expect(await kb.retrieve(ds, 'car park')).toEqual(['Parking.\nThe car park opens at eight.']);

    await kb.call('POST', `${segs(ds, d)}/${p.id}`, { segment: { enabled: false } });
    expect(await kb.retrieve(ds, 'car park')).toEqual([]);
    await kb.call('POST', `${segs(ds, d)}/${p.id}`, { segment: { enabled: true } });
    expect(await kb.retrieve(ds, 'car park')).toEqual(['Parking.\nThe car park opens at eight.']);

    expect((await kb.call('DELETE', `${segs(ds, d)}/${p.id}`)).status).toBe(204);
    expect(await kb.retrieve(ds, 'car park')).toEqual([]);
    expect((await kb.call('GET', segs(ds, d))).body.total).toBe(2);
    expect((await getDoc(ds, d)).word_count).toBe('Leave.\nTwenty vacation days.'.length + 'Remote.\nFridays from home.'.length);
  });
});

describe('segment writes re-check the document in their transaction', () => {
  it('an edit prepared against the served version is refused once a newer version has been accepted', async () => {
    const ds = await kb.dataset('segments-race', 'high_quality');
    const d = await doc(ds, 'Vacation is twenty days a year.');
    const [a] = (await kb.call('GET', segs(ds, d))).body.data;
    const dataset = await s.runtime.store.db.selectFrom('datasets').selectAll().where('id', '=', ds).executeTakeFirstOrThrow();
    // 1. the edit reads the document (completed, serving version 1) …
    const stale = await s.runtime.documents.get(ds, d);
    // 2. … an update of the document is accepted in between …
    emb.mode = 'hold';
    const upd = await kb.call('POST', `/datasets/${ds}/documents/${d}/update-by-text`, { name: 'Handbook', text: 'Parking is free.\nLunch is at noon.' });
    expect(upd.status).toBe(200);
    // 3. … so the edit, checked again inside its transaction, changes nothing.
    const patch = { content: 'Vacation is forty days.', answer: undefined, keywords: undefined, enabled: undefined, regenerateChildChunks: false };
    await expect(s.runtime.segments.update(dataset, { ...stale }, a.id, patch, 'test')).rejects.toMatchObject({ code: 'document_indexing' });
    await expect(s.runtime.segments.create(dataset, { ...stale }, [{ content: 'New.', answer: undefined, keywords: undefined }], 'test')).rejects.toMatchObject({ code: 'document_indexing' });
    await expect(s.runtime.segments.delete({ ...stale }, a.id)).rejects.toMatchObject({ code: 'document_indexing' });
    emb.release();
    expect((await kb.settle(ds, upd.body.batch)).indexing_status).toBe('completed');
    expect((await kb.call('GET', segs(ds, d))).body.data.map((x: any) => x.content)).toEqual(['Parking is free.', 'Lunch is at noon.']);
  });
});

describe('child chunks', () => {
  it('lists, adds, edits and deletes the child chunks of a parent chunk; retrieval follows', async () => {
    const ds = await kb.dataset('child-chunks', 'high_quality');
    const rule = {
      mode: 'hierarchical',
      rules: { parent_mode: 'paragraph', segmentation: { separator: '\\n\\n', max_tokens: 200 }, subchunk_segmentation: { separator: '\\n', max_tokens: 50, chunk_overlap: 0 } },
    };
    const d = await doc(ds, 'Leave.\nTwenty vacation days.\n\nRemote.\nFridays from home.', { doc_form: 'hierarchical_model', process_rule: rule });
    const [leave, remote] = (await kb.call('GET', segs(ds, d))).body.data;
    const cc = (seg: string) => `${segs(ds, d)}/${seg}/child_chunks`;
    const CC = `${SEG}/child_chunks`;

    const list = await kb.call('GET', cc(leave.id));
    expect(list.status).toBe(200);
    expect(responseErrors(CC, 'get', 200, list.body)).toEqual([]);
    expect(list.body).toMatchObject({ total: 2, total_pages: 1, page: 1, limit: 20 });
    expect(list.body.data.map((c: any) => c.content)).toEqual(['Leave.', 'Twenty vacation days.']);
    expect((await kb.call('GET', `${cc(leave.id)}?limit=1&page=2`)).body).toMatchObject({ total: 2, total_pages: 2, data: [{ position: 2 }] });
    expect((await kb.call('GET', `${cc(leave.id)}?keyword=VACATION`)).body.total).toBe(1);

    const add = await kb.call('POST', cc(leave.id), { content: 'Sick days are unlimited.' });
    expect(add.status, JSON.stringify(add.body)).toBe(200);
    expect(responseErrors(CC, 'post', 200, add.body)).toEqual([]);
    expect(add.body.data).toMatchObject({ segment_id: leave.id, content: 'Sick days are unlimited.', position: 3, type: 'customized', word_count: 24 });
    const hit = async (q: string): Promise<unknown[]> => (await kb.call('POST', `/datasets/${ds}/retrieve`, { query: q, retrieval_model: { search_method: 'keyword_search', top_k: 5 } })).body.records.map((r: any) => [r.segment.id, r.child_chunks.map((c: any) => c.content)]);
    expect(await hit('sick unlimited')).toEqual([[leave.id, ['Sick days are unlimited.']]]);
    expect((await kb.retrieve(ds, 'sick unlimited', { search_method: 'semantic_search', top_k: 1 }))[0]).toBe(leave.content);

    const child = add.body.data.id;
    const upd = await kb.call('PATCH', `${cc(leave.id)}/${child}`, { content: 'Parental leave is sixteen weeks.' });
    expect(upd.status, JSON.stringify(upd.body)).toBe(200);
    expect(responseErrors(`${CC}/{child_chunk_id}`, 'patch', 200, upd.body)).toEqual([]);
    expect(upd.body.data).toMatchObject({ id: child, content: 'Parental leave is sixteen weeks.', type: 'customized', position: 3 });
    expect(await hit('sick unlimited')).toEqual([]);
    expect(await hit('parental')).toEqual([[leave.id, ['Parental leave is sixteen weeks.']]]);
    const near = await kb.call('POST', `/datasets/${ds}/retrieve`, { query: 'parental sixteen weeks', retrieval_model: { search_method: 'semantic_search', top_k: 1 } });
    expect(near.body.records[0].child_chunks[0].content).toBe('Parental leave is sixteen weeks.');
    // An indexed child edited becomes customized.
    const first = list.body.data[0];
    expect((await kb.call('PATCH', `${cc(leave.id)}/${first.id}`, { content: 'Annual leave.' })).body.data).toMatchObject({ type: 'customized', content: 'Annual leave.' });

    // Not found: an unknown child, a child of another parent, an unknown parent.
    const nf = (message: string) => ({ code: 'not_found', message, status: 404 });
    expect((await kb.call('PATCH', `${cc(remote.id)}/${child}`, { content: 'x' })).body).toEqual(nf('Child chunk not found.'));
    expect((await kb.call('DELETE', `${cc(leave.id)}/${NO_ID}`)).body).toEqual(nf('Child chunk not found.'));
    expect((await kb.call('GET', cc(NO_ID))).body).toEqual(nf('Segment not found.'));
    expect((await kb.call('POST', cc(leave.id), {})).body).toEqual({ code: 'invalid_param', message: 'content is required and must be a non-empty string.', status: 400 });

    expect((await kb.call('DELETE', `${cc(leave.id)}/${child}`)).status).toBe(204);
    expect(await hit('parental')).toEqual([]);
    expect((await kb.call('GET', cc(leave.id))).body.data.map((c: any) => c.content)).toEqual(['Annual leave.', 'Twenty vacation days.']);
    // The parent's own segment object lists its children.
    expect((await kb.call('GET', `${segs(ds, d)}/${leave.id}`)).body.data.child_chunks.map((c: any) => c.content)).toEqual(['Annual leave.', 'Twenty vacation days.']);

    // A text document's segment has no children.
    const t = await kb.dataset('child-chunks-text');
    const td = await doc(t, 'Vacation is twenty days a year.');
    const ts = (await kb.call('GET', segs(t, td))).body.data[0].id;
    expect((await kb.call('GET', `${segs(t, td)}/${ts}/child_chunks`)).body).toMatchObject({ data: [], total: 0 });
    expect((await kb.call('POST', `${segs(t, td)}/${ts}/child_chunks`, { content: 'x' })).body).toEqual({
      code: 'invalid_param',
      message: 'Child chunks exist only in documents with doc_form hierarchical_model.',
      status: 400,
    });
  });
});

describe('what is not searchable does not crowd out what is', () => {
  it('many disabled segments ranked first still leave the enabled one found (keyword and semantic)', async () => {
    for (const [technique, method, query, word] of [
      ['economy', 'keyword_search', 'apple', 'apple apple apple'],
      ['high_quality', 'semantic_search', 'banana smoothie', 'banana smoothie'],
    ] as const) {
      const ds = await kb.dataset(`crowd-${technique}`, technique);
      const lines = [...Array.from({ length: 30 }, (_, i) => `${word} ${i}`), `${query.split(' ')[0]} bread, baked in an oven for an hour with walnuts, flour, sugar and eggs`];
      const d = await doc(ds, lines.join('\n'));
      const list = (await kb.call('GET', `${segs(ds, d)}?limit=100`)).body.data as { id: string; content: string }[];
      for (const x of list.filter((x) => x.content !== lines[30])) {
        expect((await kb.call('POST', `${segs(ds, d)}/${x.id}`, { segment: { enabled: false } })).status).toBe(200);
      }
      expect(await kb.retrieve(ds, query, { search_method: method, top_k: 2 }), technique).toEqual([lines[30]]);
    }
  });

  it('the keyword filter of segment and child-chunk lists folds any capital letter, as PostgreSQL does', async () => {
    const ds = await kb.dataset('unicode-keyword');
    const d = await doc(ds, 'Über alles\nÉté indien\nplain line');
    const r = await kb.call('GET', `${segs(ds, d)}?keyword=${encodeURIComponent('über')}`);
    expect(r.body.data.map((x: { content: string }) => x.content)).toEqual(['Über alles']);
    expect((await kb.call('GET', `${segs(ds, d)}?keyword=${encodeURIComponent('ÉTÉ')}`)).body.total).toBe(1);
  });
});

describe('a document deleted while a segment is written', () => {
  it('waits for the write and removes everything, or the write finds no document (no orphan rows, no deadlock)', async () => {
    const ds = await kb.dataset('delete-race', 'high_quality');
    const d = await doc(ds, 'alpha one\nbeta two');
    const service = s.runtime.segments as unknown as { insertIndexed: (...a: unknown[]) => Promise<unknown> };
    const insertIndexed = service.insertIndexed;
    let deleting: Promise<{ status: number }> | undefined;
    // The delete is sent while the create's transaction is open (after its compare-and-set).
    service.insertIndexed = async function (this: unknown, ...a: unknown[]) {
      deleting = kb.call('DELETE', `/datasets/${ds}/documents/${d}`);
      await new Promise((r) => setTimeout(r, 300));
      return insertIndexed.apply(this, a);
    };
    let created: { status: number };
    try {
      created = await kb.call('POST', segs(ds, d), { segments: [{ content: 'written during the delete' }] });
    } finally {
      service.insertIndexed = insertIndexed;
    }
    const deleted = await deleting!;
    expect([created.status, deleted.status]).toEqual([200, 204]);
    const db = s.runtime.store.db;
    expect(await db.selectFrom('segments').select('id').where('document_id', '=', d).execute()).toEqual([]);
    expect(await db.selectFrom('segment_embeddings').select('segment_id').where('document_id', '=', d).execute()).toEqual([]);
  });
});

describe('an embeddings endpoint that fails', () => {
  it('answers 400 completion_request_error with its message on a segment write and a semantic retrieve; nothing is written', async () => {
    const ds = await kb.dataset('embeddings-down', 'high_quality');
    const d = await doc(ds, 'alpha one\nbeta two');
    const sid = (await kb.call('GET', segs(ds, d))).body.data[0].id;
    emb.mode = 'fail';
    try {
      const expected = { code: 'completion_request_error', status: 400, message: 'embeddings endpoint answered 500: embedding upstream is down' };
      const created = await kb.call('POST', segs(ds, d), { segments: [{ content: 'gamma three' }] });
      expect([created.status, created.body]).toEqual([400, expected]);
      const updated = await kb.call('POST', `${segs(ds, d)}/${sid}`, { segment: { content: 'alpha changed' } });
      expect([updated.status, updated.body]).toEqual([400, expected]);
      const retrieved = await kb.call('POST', `/datasets/${ds}/retrieve`, { query: 'alpha', retrieval_model: semantic });
      expect([retrieved.status, retrieved.body]).toEqual([400, expected]);
    } finally {
      emb.mode = 'answer';
    }
    const contents = (await kb.call('GET', segs(ds, d))).body.data.map((x: { content: string }) => x.content);
    expect(contents).toEqual(['alpha one', 'beta two']);
  });
});
