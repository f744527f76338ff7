import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.js';
import { kbClient } from '../helpers/kb-client.js';
import { startEmbeddings, type EmbeddingsServer } from '../helpers/knowledge.js';
import { dataFrames, parseSse } from '../helpers/sse.js';
import { endNode, startNode, templateNode, workflowDsl, type NodeSpec } from '../helpers/workflow-dsl.js';

let s: TestServer;
let emb: EmbeddingsServer;
let kb: ReturnType<typeof kbClient>;
let handbook: string;
let recipes: string;
let docId: string;

const HANDBOOK = 'Vacation policy: employees get twenty days a year.\nRemote work is allowed on Fridays.\nThe office closes at six.';
const RECIPES = 'Pancakes need flour, eggs and milk.\nRemote villages bake bread on fridays too.';

beforeAll(async () => {
  emb = await startEmbeddings();
  s = await startServer({ env: { QUEUE_POLL_MS: '50', EMBEDDINGS_BASE_URL: emb.baseUrl, EMBEDDINGS_MODEL: 'test-embed', RETRIEVAL_TOP_K_MAX: '20' } });
  kb = kbClient(s, await s.datasetKey());
  handbook = await kb.dataset('Handbook', 'economy');
  const r = await kb.call('POST', `/datasets/${handbook}/document/create-by-text`, { name: 'Policies', text: HANDBOOK, process_rule: { mode: 'custom', rules: { segmentation: { separator: '\n', max_tokens: 50 } } } });
  expect(r.status).toBe(200);
  docId = r.body.document.id;
  expect(await kb.settle(handbook, r.body.batch)).toMatchObject({ indexing_status: 'completed' });
  recipes = await kb.dataset('Recipes', 'high_quality');
  const r2 = await kb.call('POST', `/datasets/${recipes}/document/create-by-text`, { name: 'Cookbook', text: RECIPES, process_rule: { mode: 'custom', rules: { segmentation: { separator: '\n', max_tokens: 50 } } } });
  expect(r2.status).toBe(200);
  expect(await kb.settle(recipes, r2.body.batch)).toMatchObject({ indexing_status: 'completed' });
});
afterAll(async () => {
  await s?.close();
  await emb?.close();
});

const headers = (key: string) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' });
const run = (key: string, inputs: Record<string, unknown>, mode: 'blocking' | 'streaming' = 'blocking') =>
  fetch(`${s.api}/workflows/run`, { method: 'POST', headers: headers(key), body: JSON.stringify({ inputs, response_mode: mode, user: 'alice' }) });

const kr = (datasetIds: string[], extra: Record<string, unknown> = {}): NodeSpec => ({
  id: 'kr',
  type: 'knowledge-retrieval',
  query_variable_selector: ['start', 'q'],
  dataset_ids: datasetIds,
  retrieval_mode: 'multiple',
  multiple_retrieval_config: { top_k: 2, score_threshold: null, reranking_enable: false },
  ...extra,
});

/** start(q) → knowledge-retrieval → template (first content) → end {result, first}. */
const retrievalApp = (node: NodeSpec, more: NodeSpec[] = [], edges: [string, string, string?][] = []) =>
  workflowDsl(
    [startNode([{ variable: 'q' }]), node, templateNode('first', '{{ r[0].content }}|{{ r | length }}', { r: ['kr', 'result'] }), endNode({ result: ['kr', 'result'], first: ['first', 'output'] }), ...more],
    [['start', 'kr'], ['kr', 'first'], ['first', 'end'], ...edges],
  );

describe('knowledge-retrieval node', () => {
  it('blocking: the End output carries the retrieved chunks in Dify’s result shape', async () => {
    const { apiKey } = await s.importApp(retrievalApp(kr([handbook])));
    const r = await run(apiKey, { q: 'remote work fridays' });
    expect(r.status).toBe(200);
    const body = await r.json();
    expect(body.data).toMatchObject({ status: 'succeeded', error: null });
    const result = body.data.outputs.result as Record<string, any>[];
    expect(result.length).toBeGreaterThanOrEqual(1);
    expect(result.length).toBeLessThanOrEqual(2);
    expect(result[0]).toMatchObject({
      title: 'Policies',
      content: 'Remote work is allowed on Fridays.',
      metadata: {
        _source: 'knowledge',
        position: 1,
        dataset_id: handbook,
        dataset_name: 'Handbook',
        document_id: docId,
        document_name: 'Policies',
        data_source_type: 'upload_file',
        retriever_from: 'workflow',
      },
    });
    expect(Object.keys(result[0]!).sort()).toEqual(['content', 'metadata', 'title']);
    expect(typeof result[0]!.metadata.segment_id).toBe('string');
    expect(result[0]!.metadata.score).toBeGreaterThan(0);
    expect(result[0]!.metadata.score).toBeLessThanOrEqual(1);
    result.forEach((x, i) => expect(x.metadata.position).toBe(i + 1));
    for (let i = 1; i < result.length; i++) expect(result[i]!.metadata.score).toBeLessThanOrEqual(result[i - 1]!.metadata.score);
    expect(body.data.outputs.first).toBe(`Remote work is allowed on Fridays.|${result.length}`);
  });

  it('streaming: node_finished reports inputs.query and outputs.result; workflow_finished has the chunks', async () => {
    const { apiKey } = await s.importApp(retrievalApp(kr([handbook], { multiple_retrieval_config: { top_k: 1 } })));
    const r = await run(apiKey, { q: 'vacation days' }, 'streaming');
    expect(r.status).toBe(200);
    const events = dataFrames(parseSse(await r.text()));
    const nf = events.find((e) => e.event === 'node_finished' && (e.data as { node_id: string }).node_id === 'kr')!.data as Record<string, any>;
    expect(nf).toMatchObject({ node_type: 'knowledge-retrieval', status: 'succeeded', inputs: { query: 'vacation days' }, error: null });
    expect(nf.outputs.result).toHaveLength(1);
    expect(nf.outputs.result[0].content).toBe('Vacation policy: employees get twenty days a year.');
    const wf = events.at(-1)!;
    expect(wf.event).toBe('workflow_finished');
    expect(wf.data).toMatchObject({ status: 'succeeded', outputs: { first: 'Vacation policy: employees get twenty days a year.|1' } });
  });

  it('several datasets (keyword + semantic): merged best first, top_k across them, dataset names per chunk', async () => {
    const { apiKey } = await s.importApp(retrievalApp(kr([handbook, recipes], { multiple_retrieval_config: { top_k: 20 } })));
    const body = await (await run(apiKey, { q: 'remote fridays' })).json();
    expect(body.data.status).toBe('succeeded');
    const result = body.data.outputs.result as Record<string, any>[];
    const names = new Set(result.map((x) => x.metadata.dataset_name));
    expect(names).toEqual(new Set(['Handbook', 'Recipes']));
    expect(result.map((x) => x.content)).toEqual(expect.arrayContaining(['Remote work is allowed on Fridays.', 'Remote villages bake bread on fridays too.']));
    for (let i = 1; i < result.length; i++) expect(result[i]!.metadata.score).toBeLessThanOrEqual(result[i - 1]!.metadata.score);
    const one = await (await run((await s.importApp(retrievalApp(kr([handbook, recipes], { multiple_retrieval_config: { top_k: 1 } })))).apiKey, { q: 'remote fridays' })).json();
    expect(one.data.outputs.result).toHaveLength(1);
  });

  it('score_threshold drops chunks scoring below it; a query that matches nothing gives an empty result', async () => {
    const at = async (threshold: number | null) => {
      const { apiKey } = await s.importApp(retrievalApp(kr([handbook], { multiple_retrieval_config: { top_k: 5, score_threshold: threshold } })));
      const body = await (await run(apiKey, { q: 'office closes' })).json();
      expect(body.data.status).toBe('succeeded');
      return body.data.outputs.result as { content: string; metadata: { score: number } }[];
    };
    const loose = await at(null);
    expect(loose.map((x) => x.content)).toEqual(['The office closes at six.']);
    const score = loose[0]!.metadata.score;
    expect(score).toBeLessThan(1);
    expect((await at(Math.min(1, score + 0.05))).length).toBe(0);
    expect((await at(Math.max(0, score - 0.05))).map((x) => x.content)).toEqual(['The office closes at six.']);
    const none = await (await run((await s.importApp(retrievalApp(kr([handbook])))).apiKey, { q: 'zebra xylophone' })).json();
    expect(none.data).toMatchObject({ status: 'succeeded', outputs: { result: [], first: '|0' } });
  });

  it('unknown dataset: the node fails naming the id; the run fails with that error', async () => {
    const ghost = '00000000-0000-4000-8000-00000000dead';
    const { apiKey } = await s.importApp(retrievalApp(kr([handbook, ghost])));
    const body = await (await run(apiKey, { q: 'remote' })).json();
    expect(body.data).toMatchObject({ status: 'failed', outputs: null, error: `Dataset not found: ${ghost} (node kr: import the app with --dataset ${ghost}=NEW_ID, or create the dataset)` });
    const r = await run(apiKey, { q: 'remote' }, 'streaming');
    const events = dataFrames(parseSse(await r.text()));
    const nf = events.find((e) => e.event === 'node_finished' && (e.data as { node_id: string }).node_id === 'kr')!.data as Record<string, any>;
    expect(nf).toMatchObject({ status: 'failed', error: `Dataset not found: ${ghost} (node kr: import the app with --dataset ${ghost}=NEW_ID, or create the dataset)` });
    expect(events.at(-1)).toMatchObject({ event: 'workflow_finished', data: { status: 'failed' } });
  });

  it('unknown dataset with error_strategy fail-branch: the fail edge runs and the run is partial-succeeded', async () => {
    const node = kr(['no-such-dataset'], { error_strategy: 'fail-branch' });
    const yaml = workflowDsl(
      [startNode([{ variable: 'q' }]), node, templateNode('ok', 'found'), templateNode('bad', 'failed: {{ m }}', { m: ['kr', 'error_message'] }), { id: 'agg', type: 'variable-aggregator', variables: [['ok', 'output'], ['bad', 'output']] }, endNode({ r: ['agg', 'output'] })],
      [['start', 'kr'], ['kr', 'ok', 'success-branch'], ['kr', 'bad', 'fail-branch'], ['ok', 'agg'], ['bad', 'agg'], ['agg', 'end']],
    );
    const { apiKey } = await s.importApp(yaml);
    const body = await (await run(apiKey, { q: 'remote' })).json();
    expect(body.data).toMatchObject({ status: 'partial-succeeded', outputs: { r: 'failed: Dataset not found: no-such-dataset (node kr: import the app with --dataset no-such-dataset=NEW_ID, or create the dataset)' } });
  });

  it('top_k above RETRIEVAL_TOP_K_MAX fails the node with the limit in the message', async () => {
    const { apiKey } = await s.importApp(retrievalApp(kr([handbook], { multiple_retrieval_config: { top_k: 21 } })));
    const body = await (await run(apiKey, { q: 'remote' })).json();
    expect(body.data).toMatchObject({ status: 'failed', error: 'top_k must be at most 20 (RETRIEVAL_TOP_K_MAX).' });
  });

  it('import: missing dataset_ids / query selector is refused naming the node', async () => {
    await expect(s.importApp(retrievalApp({ id: 'kr', type: 'knowledge-retrieval', query_variable_selector: ['start', 'q'] }))).rejects.toThrow(/node kr \(knowledge-retrieval\): dataset_ids/);
    await expect(s.importApp(retrievalApp({ id: 'kr', type: 'knowledge-retrieval', dataset_ids: [handbook] }))).rejects.toThrow(/node kr \(knowledge-retrieval\): query_variable_selector/);
  });
});
