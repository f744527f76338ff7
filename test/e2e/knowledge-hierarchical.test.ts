import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.js';
import { kbClient, retrieveContractErrors } from '../helpers/kb-client.js';
import { startEmbeddings, type EmbeddingsServer } from '../helpers/knowledge.js';
import { endNode, startNode, workflowDsl } from '../helpers/workflow-dsl.js';

let s: TestServer;
let emb: EmbeddingsServer;
let kb: ReturnType<typeof kbClient>;

beforeAll(async () => {
  emb = await startEmbeddings();
  s = await startServer({ env: { QUEUE_POLL_MS: '50', EMBEDDINGS_BASE_URL: emb.baseUrl, EMBEDDINGS_MODEL: 'test-embed', KNOWLEDGE_FULL_DOC_MAX_TOKENS: '60' } });
  kb = kbClient(s, await s.datasetKey());
});
afterAll(async () => {
  await s?.close();
  await emb?.close();
});

const TEXT = [
  'Leave policy.\nEmployees get twenty vacation days.\nUnused days expire in March.',
  'Remote work.\nRemote work is allowed on Fridays.\nLaptops are provided by the company.',
  'Office.\nThe office closes at six.\nVisitors sign in at the desk.',
].join('\n\n');

const PARAGRAPH_RULE = {
  mode: 'hierarchical',
  rules: {
    pre_processing_rules: [{ id: 'remove_extra_spaces', enabled: true }],
    parent_mode: 'paragraph',
    segmentation: { separator: '\\n\\n', max_tokens: 200 },
    subchunk_segmentation: { separator: '\\n', max_tokens: 50, chunk_overlap: 0 },
  },
};

async function create(ds: string, body: Record<string, unknown>) {
  const r = await kb.call('POST', `/datasets/${ds}/document/create-by-text`, { name: 'Handbook', text: TEXT, ...body });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return { id: r.body.document.id as string, batch: r.body.batch as string, document: r.body.document };
}

async function retrieve(ds: string, query: string, method = 'keyword_search', topK = 4) {
  const r = await kb.call('POST', `/datasets/${ds}/retrieve`, { query, retrieval_model: { search_method: method, top_k: topK } });
  expect(r.status).toBe(200);
  expect(retrieveContractErrors(r.body)).toEqual([]);
  return r.body.records as Record<string, any>[];
}

describe('doc_form hierarchical_model (parent-child chunks)', () => {
  it('paragraph parents: children are searched, the parent is returned with its matched child_chunks', async () => {
    const ds = await kb.dataset('pc-paragraph');
    const doc = await create(ds, { doc_form: 'hierarchical_model', process_rule: PARAGRAPH_RULE });
    expect(doc.document.doc_form).toBe('hierarchical_model');
    // Progress counts parents, as Dify counts its (parent) segments.
    expect(await kb.settle(ds, doc.batch)).toMatchObject({ indexing_status: 'completed', total_segments: 3, completed_segments: 3 });

    const [hit, ...rest] = await retrieve(ds, 'remote fridays');
    expect(rest).toEqual([]);
    expect(hit!.segment).toMatchObject({
      content: 'Remote work.\nRemote work is allowed on Fridays.\nLaptops are provided by the company.',
      position: 2,
      document_id: doc.id,
    });
    expect(hit!.child_chunks.map((c: any) => [c.content, c.position])).toEqual([
      ['Remote work is allowed on Fridays.', 2],
      ['Remote work.', 1],
    ]);
    expect(hit!.score).toBe(hit!.child_chunks[0].score);
    expect(hit!.child_chunks[0].score).toBeGreaterThanOrEqual(hit!.child_chunks[1].score);

    // Hits go to the parent chunk, once per retrieval however many children matched.
    await s.runtime.hits.flush();
    expect((await kb.call('GET', `/datasets/${ds}/documents/${doc.id}`)).body).toMatchObject({ hit_count: 1, doc_form: 'hierarchical_model', word_count: TEXT.replace(/\n\n/g, '').length });
    expect((await retrieve(ds, 'remote fridays'))[0]!.segment.hit_count).toBe(2);

    // The dataset takes its documents' form; another form is refused, as in Dify.
    expect((await kb.call('GET', `/datasets/${ds}`)).body.doc_form).toBe('hierarchical_model');
    const mismatch = await kb.call('POST', `/datasets/${ds}/document/create-by-text`, { name: 'x', text: 'y', doc_form: 'text_model' });
    expect(mismatch.body).toEqual({ code: 'invalid_param', message: 'doc_form is different from the dataset doc_form.', status: 400 });
    // Without doc_form a new document follows the dataset; without process_rule it gets the default parent-child rule.
    const next = await kb.call('POST', `/datasets/${ds}/document/create-by-text`, { name: 'Parking', text: 'Parking.\nThe garage opens at seven.\n\nBikes.\nBike racks are outside.' });
    expect(next.body.document.doc_form).toBe('hierarchical_model');
    expect(await kb.settle(ds, next.body.batch)).toMatchObject({ indexing_status: 'completed', total_segments: 2 });
    const garage = await retrieve(ds, 'garage');
    expect(garage[0]!.segment.content).toBe('Parking.\nThe garage opens at seven.');
    expect(garage[0]!.child_chunks.map((c: any) => c.content)).toEqual(['The garage opens at seven.']);
  });

  it('the knowledge-retrieval node returns the parent with its matched children in metadata.child_chunks', async () => {
    const ds = await kb.dataset('pc-node');
    const doc = await create(ds, { doc_form: 'hierarchical_model', process_rule: PARAGRAPH_RULE });
    await kb.settle(ds, doc.batch);
    const app = workflowDsl(
      [
        startNode([{ variable: 'q' }]),
        { id: 'kr', type: 'knowledge-retrieval', query_variable_selector: ['start', 'q'], dataset_ids: [ds], retrieval_mode: 'multiple', multiple_retrieval_config: { top_k: 2, score_threshold: null } },
        endNode({ result: ['kr', 'result'] }),
      ],
      [['start', 'kr'], ['kr', 'end']],
    );
    const { apiKey } = await s.importApp(app);
    const r = await fetch(`${s.api}/workflows/run`, { method: 'POST', headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ inputs: { q: 'laptops company' }, response_mode: 'blocking', user: 'u' }) });
    const [hit] = (await r.json()).data.outputs.result;
    expect(hit.content).toBe('Remote work.\nRemote work is allowed on Fridays.\nLaptops are provided by the company.');
    expect(hit.metadata).toMatchObject({ segment_position: 2, segment_hit_count: 1 });
    expect(hit.metadata.child_chunks.map((c: any) => [c.content, c.position])).toEqual([['Laptops are provided by the company.', 3]]);
  });

  it('full-doc: the whole document (cut at KNOWLEDGE_FULL_DOC_MAX_TOKENS) is the one parent', async () => {
    const ds = await kb.dataset('pc-fulldoc');
    const tail = '\n\nAppendix.\nThe zeppelin hangar is closed on Sundays and public holidays, and nobody may enter it without a badge issued by security.';
    const r = await kb.call('POST', `/datasets/${ds}/document/create-by-text`, {
      name: 'Handbook',
      text: TEXT + tail,
      doc_form: 'hierarchical_model',
      process_rule: { mode: 'hierarchical', rules: { parent_mode: 'full-doc', subchunk_segmentation: { separator: '\\n', max_tokens: 50 } } },
    });
    expect(r.status).toBe(200);
    expect(await kb.settle(ds, r.body.batch)).toMatchObject({ indexing_status: 'completed', total_segments: 1 });
    const [hit] = await retrieve(ds, 'visitors desk');
    expect(hit!.segment.content.startsWith('Leave policy.\nEmployees get twenty vacation days.')).toBe(true);
    expect(hit!.segment.content).toContain('Visitors sign in at the desk.');
    // Past 60 tokens the document is cut: the appendix is neither in the parent nor searchable.
    expect(hit!.segment.content).not.toContain('zeppelin');
    expect(hit!.segment.tokens).toBeLessThanOrEqual(60);
    expect(await retrieve(ds, 'zeppelin hangar')).toEqual([]);
  });

  it('high_quality: children are embedded; semantic and hybrid search return their parents', async () => {
    const ds = await kb.dataset('pc-semantic', 'high_quality');
    const doc = await create(ds, { doc_form: 'hierarchical_model', process_rule: PARAGRAPH_RULE });
    expect((await kb.settle(ds, doc.batch)).indexing_status).toBe('completed');
    const vectors = await s.runtime.store.db.selectFrom('segment_embeddings').select((eb) => eb.fn.countAll<number>().as('n')).where('document_id', '=', doc.id).executeTakeFirstOrThrow();
    expect(Number(vectors.n)).toBe(9);
    for (const method of ['semantic_search', 'hybrid_search']) {
      const [hit] = await retrieve(ds, 'laptops provided company', method, 1);
      expect(hit!.segment.content, method).toBe('Remote work.\nRemote work is allowed on Fridays.\nLaptops are provided by the company.');
      expect(hit!.child_chunks[0].content, method).toBe('Laptops are provided by the company.');
    }
  });

  it('a new version swaps parents and children together; deleting the document removes both', async () => {
    const ds = await kb.dataset('pc-update');
    const doc = await create(ds, { doc_form: 'hierarchical_model', process_rule: PARAGRAPH_RULE });
    await kb.settle(ds, doc.batch);
    const u = await kb.call('POST', `/datasets/${ds}/documents/${doc.id}/update-by-text`, { name: 'Handbook', text: 'Canteen.\nLunch is served at noon.\n\nGym.\nThe gym opens at five.' });
    expect(u.status).toBe(200);
    expect(await kb.settle(ds, u.body.batch)).toMatchObject({ indexing_status: 'completed', total_segments: 2 });
    expect(await retrieve(ds, 'remote fridays')).toEqual([]);
    expect((await retrieve(ds, 'lunch noon'))[0]!.segment.content).toBe('Canteen.\nLunch is served at noon.');
    const count = async (table: 'parent_chunks' | 'segments') =>
      Number((await s.runtime.store.db.selectFrom(table).select((eb) => eb.fn.countAll<number>().as('n')).where('document_id', '=', doc.id).executeTakeFirstOrThrow()).n);
    expect([await count('parent_chunks'), await count('segments')]).toEqual([2, 4]);
    // An update cannot change the form.
    const other = await kb.call('POST', `/datasets/${ds}/documents/${doc.id}/update-by-text`, { name: 'Handbook', text: 'x', doc_form: 'text_model' });
    expect(other.body.message).toBe('doc_form is different from the dataset doc_form.');
    expect((await kb.call('DELETE', `/datasets/${ds}/documents/${doc.id}`)).status).toBe(204);
    expect([await count('parent_chunks'), await count('segments')]).toEqual([0, 0]);
  });

  it('a bad hierarchical rule is a 400 naming the field', async () => {
    const ds = await kb.dataset('pc-invalid');
    const bad = async (process_rule: unknown, doc_form: string | undefined = 'hierarchical_model') => {
      const r = await kb.call('POST', `/datasets/${ds}/document/create-by-text`, { name: 'x', text: 'y', process_rule, ...(doc_form ? { doc_form } : {}) });
      expect(r.status).toBe(400);
      expect(r.body.code).toBe('invalid_param');
      return r.body.message as string;
    };
    const rules = (extra: Record<string, unknown>) => ({ mode: 'hierarchical', rules: { ...PARAGRAPH_RULE.rules, ...extra } });
    expect(await bad(rules({ parent_mode: 'chapter' }))).toBe('process_rule.rules.parent_mode must be paragraph or full-doc.');
    expect(await bad(rules({ subchunk_segmentation: undefined }))).toBe('process_rule.rules.subchunk_segmentation is required.');
    expect(await bad(rules({ subchunk_segmentation: { separator: '\\n', max_tokens: 10 } }))).toBe('process_rule.rules.subchunk_segmentation.max_tokens must be between 50 and 4000.');
    expect(await bad(rules({ subchunk_segmentation: { separator: 1, max_tokens: 60 } }))).toBe('process_rule.rules.subchunk_segmentation.separator must be a string.');
    expect(await bad(rules({ subchunk_segmentation: { max_tokens: 60, chunk_overlap: 60 } }))).toBe('process_rule.rules.subchunk_segmentation.chunk_overlap must be smaller than max_tokens.');
    expect(await bad(rules({ subchunk_segmentation: { max_tokens: 300 } }))).toBe(
      'process_rule.rules.subchunk_segmentation.max_tokens must not exceed process_rule.rules.segmentation.max_tokens.',
    );
    expect(await bad(rules({ segmentation: { separator: '\\n\\n' } }))).toBe('process_rule.rules.segmentation.max_tokens is required and must be an integer.');
    expect(await bad({ mode: 'hierarchical' })).toBe('process_rule.rules is required when mode is hierarchical.');
    expect(await bad({ mode: 'custom', rules: { segmentation: { max_tokens: 100 } } })).toBe(
      'process_rule.mode must be hierarchical (or automatic) when doc_form is hierarchical_model.',
    );
    expect(await bad(PARAGRAPH_RULE, 'text_model')).toBe('process_rule.mode hierarchical requires doc_form hierarchical_model.');
    expect(await bad(undefined, 'qa_model')).toBe('doc_form qa_model needs KNOWLEDGE_QA_MODEL (provider/model) to be set.');
    expect(await bad(undefined, 'table_model')).toBe('Invalid doc_form.');
    // The same checks guard the multipart form.
    const form = await kb.form('POST', `/datasets/${ds}/document/create-by-file`, { name: 'a.txt', bytes: Buffer.from('text') }, { doc_form: 'hierarchical_model', process_rule: rules({ parent_mode: 'chapter' }) });
    expect(form.body).toEqual({ code: 'invalid_param', message: 'process_rule.rules.parent_mode must be paragraph or full-doc.', status: 400 });
    // Nothing was created by any of these.
    expect((await kb.call('GET', `/datasets/${ds}/documents`)).body.total).toBe(0);
  });
});
