import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kbClient } from '../helpers/kb-client.js';
import { startServer, type TestServer } from '../helpers/server.js';

/**
 * The knowledge services the console adds, on the real server (SQLite, and PostgreSQL when
 * TEST_DATABASE_URL is set): a dataset's documents with their indexing progress in one call, and
 * hit testing answered by the service the Service API's `retrieve` uses.
 */

let s: TestServer;
let kb: ReturnType<typeof kbClient>;
beforeAll(async () => {
  s = await startServer();
  kb = kbClient(s, await s.datasetKey());
});
afterAll(async () => s?.close());

const TEXT = 'Dovetail joints lock two boards together.\n\nA mortise takes a tenon.\n\nGlue cures overnight at room temperature.';
const RULE = { mode: 'custom', rules: { pre_processing_rules: [], segmentation: { separator: '\n\n', max_tokens: 50 } } };

describe('documents with progress', () => {
  it('lists a page of documents each with the run of its latest version: stage and segments done of total', async () => {
    const ds = await kb.dataset('Workshop');
    const ws = await s.runtime.apps.workspaceId();
    const dataset = await s.runtime.datasets.get(ws, ds);
    const made = await kb.call('POST', `/datasets/${ds}/document/create-by-text`, { name: 'Joinery', text: TEXT, process_rule: RULE });
    expect(made.status).toBe(200);
    expect((await kb.settle(ds, made.body.batch)).indexing_status).toBe('completed');
    const second = await kb.call('POST', `/datasets/${ds}/document/create-by-text`, { name: 'Finishing', text: 'Oil, then wax.', process_rule: RULE });
    await kb.settle(ds, second.body.batch);

    const page = await s.runtime.documents.listWithProgress(dataset.id, 1, 10);
    expect(page.total).toBe(2);
    const joinery = page.rows.find((r) => r.doc.name === 'Joinery')!;
    expect(joinery.doc.indexing_status).toBe('completed');
    expect(joinery.run).toMatchObject({ document_id: joinery.doc.id, status: 'completed', completed_segments: 3, total_segments: 3, batch: made.body.batch });
    expect(joinery.run!.completed_at).not.toBeNull();

    // an update makes a new version: its run is the one reported
    const upd = await kb.call('POST', `/datasets/${ds}/documents/${joinery.doc.id}/update-by-text`, { name: 'Joinery', text: 'Only one paragraph now.', process_rule: RULE });
    expect(upd.status).toBe(200);
    await kb.settle(ds, upd.body.batch);
    const after = (await s.runtime.documents.listWithProgress(dataset.id, 1, 10, 'join')).rows;
    expect(after).toHaveLength(1);
    expect(after[0]!.run).toMatchObject({ batch: upd.body.batch, status: 'completed', total_segments: 1 });
    expect((await s.runtime.documents.listWithProgress(dataset.id, 2, 1)).rows.map((r) => r.doc.name)).toHaveLength(1);
  });
});

describe('segments by state', () => {
  it('lists only the enabled or only the disabled segments of a document', async () => {
    const ds = await kb.dataset('States');
    const made = await kb.call('POST', `/datasets/${ds}/document/create-by-text`, { name: 'S', text: TEXT, process_rule: RULE });
    await kb.settle(ds, made.body.batch);
    const dataset = await s.runtime.datasets.get(await s.runtime.apps.workspaceId(), ds);
    const doc = await s.runtime.documents.get(ds, made.body.document.id);
    const all = await s.runtime.segments.list(doc, { page: 1, limit: 10, keyword: undefined, status: [] });
    expect(all.total).toBe(3);
    const second = all.items[1]!.row.id;
    await s.runtime.segments.update(dataset, doc, second, { content: undefined, answer: undefined, keywords: undefined, enabled: false, regenerateChildChunks: false }, 'someone');
    const off = await s.runtime.segments.list(doc, { page: 1, limit: 10, keyword: undefined, status: [], enabled: false });
    expect(off.items.map((c) => c.row.id)).toEqual([second]);
    const on = await s.runtime.segments.list(doc, { page: 1, limit: 10, keyword: 'a', status: [], enabled: true });
    expect(on.total).toBe(2);
    expect(on.items.map((c) => c.row.id)).not.toContain(second);
  });
});

describe('hit testing', () => {
  it('answers as the Service API does: the same records for the same query', async () => {
    const ds = await kb.dataset('Tools');
    const made = await kb.call('POST', `/datasets/${ds}/document/create-by-text`, { name: 'Tools', text: 'A chisel cuts the mortise.\n\nA saw cuts the tails.', process_rule: RULE });
    await kb.settle(ds, made.body.batch);
    const dataset = await s.runtime.datasets.get(await s.runtime.apps.workspaceId(), ds);
    const viaService = (await s.runtime.hitTesting.test(dataset, { query: 'mortise chisel' }, { warn: () => {} })) as { query: unknown; records: { segment: { content: string }; score: number }[] };
    expect(viaService.query).toEqual({ content: 'mortise chisel' });
    expect(viaService.records[0]!.segment.content).toBe('A chisel cuts the mortise.');
    expect(viaService.records[0]!.score).toBeGreaterThan(0);
    const viaApi = await kb.call('POST', `/datasets/${ds}/retrieve`, { query: 'mortise chisel' });
    expect(viaApi.status).toBe(200);
    expect(viaApi.body.records.map((r: { segment: { id: string }; score: number }) => [r.segment.id, r.score])).toEqual(
      (viaService.records as unknown as { segment: { id: string }; score: number }[]).map((r) => [r.segment.id, r.score]),
    );
    // a bad retrieval model is a 400 naming the field, from the service
    await expect(s.runtime.hitTesting.test(dataset, { query: 'x', retrieval_model: { search_method: 'nope' } }, { warn: () => {} })).rejects.toMatchObject({ status: 400 });
  });
});
