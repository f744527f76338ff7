import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.js';
import { kbClient, retrieveContractErrors } from '../helpers/kb-client.js';
import { endNode, startNode, workflowDsl } from '../helpers/workflow-dsl.js';

const TEXT = 'Vacation policy: employees get twenty days a year.\nRemote work is allowed on Fridays.\nThe office closes at six.';
const RULE = { mode: 'custom', rules: { segmentation: { separator: '\n', max_tokens: 50 } } };

/** A workflow: start(q) → knowledge-retrieval over `datasetId` (top 1) → end {result}. */
const retrievalApp = (datasetId: string) =>
  workflowDsl(
    [
      startNode([{ variable: 'q' }]),
      {
        id: 'kr',
        type: 'knowledge-retrieval',
        query_variable_selector: ['start', 'q'],
        dataset_ids: [datasetId],
        retrieval_mode: 'multiple',
        multiple_retrieval_config: { top_k: 1, score_threshold: null, reranking_enable: false },
      },
      endNode({ result: ['kr', 'result'] }),
    ],
    [['start', 'kr'], ['kr', 'end']],
  );

async function runWorkflow(s: TestServer, apiKey: string, q: string): Promise<Record<string, any>[]> {
  const r = await fetch(`${s.api}/workflows/run`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ inputs: { q }, response_mode: 'blocking', user: 'alice' }),
  });
  const body = await r.json();
  expect(body.data.status).toBe('succeeded');
  return body.data.outputs.result;
}

async function setup(s: TestServer, name: string) {
  const kb = kbClient(s, await s.datasetKey());
  const ds = await kb.dataset(name);
  const c = await kb.call('POST', `/datasets/${ds}/document/create-by-text`, { name: 'Policies', text: TEXT, process_rule: RULE });
  expect(c.status).toBe(200);
  expect((await kb.settle(ds, c.body.batch)).indexing_status).toBe('completed');
  return { kb, ds, docId: c.body.document.id as string };
}

describe('hit_count (retrieve counts hits: the default)', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startServer({ env: { QUEUE_POLL_MS: '50' } });
  });
  afterAll(async () => s?.close());

  it('each retrieval adds one hit to every returned segment; the document reports the sum; responses match Dify’s schema', async () => {
    const { kb, ds, docId } = await setup(s, 'hits');
    const first = await kb.call('POST', `/datasets/${ds}/retrieve`, { query: 'remote fridays' });
    expect(first.status).toBe(200);
    expect(retrieveContractErrors(first.body)).toEqual([]);
    expect(first.body.records).toHaveLength(1);
    expect(first.body.records[0].segment).toMatchObject({ content: 'Remote work is allowed on Fridays.', hit_count: 1 });
    // Counts are written within HIT_COUNT_FLUSH_MS; flush() makes that moment now.
    await s.runtime.hits.flush();
    const second = await kb.call('POST', `/datasets/${ds}/retrieve`, { query: 'remote work', retrieval_model: { search_method: 'keyword_search', top_k: 3 } });
    expect(second.body.records[0].segment).toMatchObject({ content: 'Remote work is allowed on Fridays.', hit_count: 2 });
    // A query that matches nothing counts nothing.
    expect((await kb.call('POST', `/datasets/${ds}/retrieve`, { query: 'zeppelin' })).body.records).toEqual([]);
    await kb.call('POST', `/datasets/${ds}/retrieve`, { query: 'vacation office', retrieval_model: { search_method: 'keyword_search', top_k: 3 } });
    await s.runtime.hits.flush();

    const rows = await s.runtime.store.db.selectFrom('segments').select(['content', 'hit_count']).where('document_id', '=', docId).orderBy('position').execute();
    expect(rows.map((r) => [r.content.slice(0, 8), Number(r.hit_count)])).toEqual([
      ['Vacation', 1],
      ['Remote w', 2],
      ['The offi', 1],
    ]);
    const doc = await kb.call('GET', `/datasets/${ds}/documents/${docId}`);
    expect(doc.body.hit_count).toBe(4);
    const list = await kb.call('GET', `/datasets/${ds}/documents`);
    expect(list.body.data[0].hit_count).toBe(4);
  });

  it('concurrent retrievals lose no hit (writes are merged, never dropped)', async () => {
    const { kb, ds, docId } = await setup(s, 'hits-concurrent');
    await Promise.all(Array.from({ length: 25 }, () => kb.call('POST', `/datasets/${ds}/retrieve`, { query: 'remote fridays' })));
    await s.runtime.hits.flush();
    expect((await kb.call('GET', `/datasets/${ds}/documents/${docId}`)).body.hit_count).toBe(25);
  });

  it('the knowledge-retrieval node counts hits and reports segment_hit_count including its own', async () => {
    const { kb, ds, docId } = await setup(s, 'hits-node');
    const { apiKey } = await s.importApp(retrievalApp(ds));
    const a = await runWorkflow(s, apiKey, 'remote fridays');
    expect(a[0]).toMatchObject({ content: 'Remote work is allowed on Fridays.', metadata: { segment_hit_count: 1 } });
    await s.runtime.hits.flush();
    const b = await runWorkflow(s, apiKey, 'remote fridays');
    expect(b[0].metadata.segment_hit_count).toBe(2);
    await s.runtime.hits.flush();
    expect((await kb.call('GET', `/datasets/${ds}/documents/${docId}`)).body.hit_count).toBe(2);
  });

  it('a new version of the document starts from zero (its segments are new, as in Dify)', async () => {
    const { kb, ds, docId } = await setup(s, 'hits-reindex');
    await kb.call('POST', `/datasets/${ds}/retrieve`, { query: 'remote fridays' });
    await s.runtime.hits.flush();
    expect((await kb.call('GET', `/datasets/${ds}/documents/${docId}`)).body.hit_count).toBe(1);
    const u = await kb.call('POST', `/datasets/${ds}/documents/${docId}/update-by-text`, { name: 'Policies', text: `${TEXT}\nParking is free.` });
    expect(u.status).toBe(200);
    expect((await kb.settle(ds, u.body.batch)).indexing_status).toBe('completed');
    expect((await kb.call('GET', `/datasets/${ds}/documents/${docId}`)).body.hit_count).toBe(0);
  });
});

describe('hit_count with RETRIEVE_COUNTS_HITS=false (Dify’s hit testing)', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startServer({ env: { QUEUE_POLL_MS: '50', RETRIEVE_COUNTS_HITS: 'false' } });
  });
  afterAll(async () => s?.close());

  it('POST /retrieve leaves hit_count alone; the workflow node still counts', async () => {
    const { kb, ds, docId } = await setup(s, 'hits-off');
    const r = await kb.call('POST', `/datasets/${ds}/retrieve`, { query: 'remote fridays' });
    expect(r.body.records[0].segment.hit_count).toBe(0);
    await s.runtime.hits.flush();
    expect((await kb.call('GET', `/datasets/${ds}/documents/${docId}`)).body.hit_count).toBe(0);
    const { apiKey } = await s.importApp(retrievalApp(ds));
    expect((await runWorkflow(s, apiKey, 'remote fridays'))[0].metadata.segment_hit_count).toBe(1);
    await s.runtime.hits.flush();
    expect((await kb.call('GET', `/datasets/${ds}/documents/${docId}`)).body.hit_count).toBe(1);
  });
});
