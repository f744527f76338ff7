import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.js';
import { kbClient } from '../helpers/kb-client.js';
import { startEmbeddings, type EmbeddingsServer } from '../helpers/knowledge.js';
import { fakeRelevance, startFakeRerank, type FakeRerankServer } from '../helpers/fake-rerank.js';
import { dataFrames, parseSse } from '../helpers/sse.js';
import { endNode, startNode, templateNode, workflowDsl, type NodeSpec } from '../helpers/workflow-dsl.js';

/**
 * Reranking (issue 43): rerank models through local fake rerank servers spoken to over real HTTP
 * in three dialects (Jina/Cohere-style, TEI, a failing Cohere), Dify's weighted score, and the
 * fallback without a rerank model.
 */
let s: TestServer;
let emb: EmbeddingsServer;
let jina: FakeRerankServer;
let tei: FakeRerankServer;
let broken: FakeRerankServer;
let kb: ReturnType<typeof kbClient>;
let handbook: string;
let recipes: string;

const HANDBOOK = [
  'Remote work is allowed on Fridays for every team, provided the weekly planning meeting on Friday morning is attended by video.',
  'Fridays: remote.',
  'The office closes at six on weekdays.',
].join('\n');
const RECIPES = ['Remote villages bake bread on fridays too, in large stone ovens heated since the early morning.', 'Pancakes need flour, eggs and milk.', 'Friday bread: remote farms.'].join('\n');

beforeAll(async () => {
  [emb, jina, tei, broken] = await Promise.all([startEmbeddings(), startFakeRerank({ dialect: 'cohere' }), startFakeRerank({ dialect: 'tei' }), startFakeRerank({ dialect: 'cohere', failWith: 503 })]);
  s = await startServer({
    env: {
      QUEUE_POLL_MS: '50',
      EMBEDDINGS_BASE_URL: emb.baseUrl,
      EMBEDDINGS_MODEL: 'test-embed',
      JINA_API_KEY: 'jina-key',
      JINA_BASE_URL: jina.url,
      HUGGINGFACE_TEI_BASE_URL: tei.url,
      COHERE_API_KEY: 'cohere-key',
      COHERE_BASE_URL: broken.url,
    },
  });
  kb = kbClient(s, await s.datasetKey());
  const load = async (name: string, text: string) => {
    const ds = await kb.dataset(name, 'high_quality');
    const r = await kb.call('POST', `/datasets/${ds}/document/create-by-text`, { name, text, process_rule: { mode: 'custom', rules: { segmentation: { separator: '\n', max_tokens: 60 } } } });
    expect(r.status).toBe(200);
    expect(await kb.settle(ds, r.body.batch)).toMatchObject({ indexing_status: 'completed' });
    return ds;
  };
  handbook = await load('Handbook', HANDBOOK);
  recipes = await load('Recipes', RECIPES);
}, 120_000);
afterAll(async () => {
  await s?.close();
  await Promise.all([emb?.close(), jina?.close(), tei?.close(), broken?.close()]);
});

const headers = (key: string) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' });
const run = (key: string, inputs: Record<string, unknown>, mode: 'blocking' | 'streaming' = 'blocking') =>
  fetch(`${s.api}/workflows/run`, { method: 'POST', headers: headers(key), body: JSON.stringify({ inputs, response_mode: mode, user: 'alice' }) });

const kr = (config: Record<string, unknown>, extra: Record<string, unknown> = {}): NodeSpec => ({
  id: 'kr',
  type: 'knowledge-retrieval',
  query_variable_selector: ['start', 'q'],
  dataset_ids: [handbook, recipes],
  retrieval_mode: 'multiple',
  multiple_retrieval_config: { top_k: 4, score_threshold: null, ...config },
  ...extra,
});
const app = (node: NodeSpec) => workflowDsl([startNode([{ variable: 'q' }]), node, endNode({ result: ['kr', 'result'] })], [['start', 'kr'], ['kr', 'end']]);

/** Runs the node streaming; its node_finished event and the run's outputs. */
async function retrieve(node: NodeSpec, q = 'remote fridays bread') {
  const { apiKey } = await s.importApp(app(node));
  const events = dataFrames(parseSse(await (await run(apiKey, { q }, 'streaming')).text()));
  const nf = events.find((e) => e.event === 'node_finished' && (e.data as { node_id: string }).node_id === 'kr')!.data as Record<string, any>;
  return { nf, result: (nf.outputs?.result ?? []) as { content: string; metadata: Record<string, any> }[] };
}

const JINA = { reranking_enable: true, reranking_mode: 'reranking_model', reranking_model: { provider: 'langgenius/jina/jina', model: 'jina-reranker-v2-base-multilingual' } };

describe('reranking', () => {
  it('knowledge-retrieval, two datasets, reranking_model: the hits come back in the rerank model’s order and with its scores', async () => {
    const off = await retrieve(kr({ reranking_enable: false }));
    expect(off.result.length).toBe(4);
    const before = jina.requests.length;
    const { nf, result } = await retrieve(kr(JINA));
    expect(nf.status).toBe('succeeded');
    expect(nf.process_data).toBeNull();
    // One call with the candidates the search found in both datasets, top_n = the node's top_k.
    expect(jina.requests.length).toBe(before + 1);
    const seen = jina.requests.at(-1)!;
    expect(seen).toMatchObject({ path: '/rerank', authorization: 'Bearer jina-key', body: { model: 'jina-reranker-v2-base-multilingual', query: 'remote fridays bread', top_n: 4 } });
    const sent = seen.body.documents as string[];
    expect(new Set(sent)).toEqual(new Set(off.result.map((r) => r.content)));
    const expected = [...sent].sort((a, b) => fakeRelevance(b) - fakeRelevance(a)).slice(0, 4);
    expect(result.map((r) => r.content)).toEqual(expected);
    expect(result.map((r) => r.metadata.score)).toEqual(expected.map(fakeRelevance));
    expect(new Set(result.map((r) => r.metadata.dataset_name))).toEqual(new Set(['Handbook', 'Recipes']));
    result.forEach((r, i) => expect(r.metadata.position).toBe(i + 1));
    // The reranker's order is not the search's.
    expect(result.map((r) => r.content)).not.toEqual(off.result.map((r) => r.content));
  });

  it('score_threshold applies to the rerank model’s scores', async () => {
    const { result } = await retrieve(kr({ ...JINA, top_k: 10, score_threshold: 0.95 }));
    expect(result.length).toBeGreaterThan(0);
    for (const r of result) expect(r.metadata.score).toBeGreaterThanOrEqual(0.95);
    expect(result.map((r) => r.content)).toEqual(expect.arrayContaining(['Fridays: remote.']));
  });

  it('weighted_score: vector weight 1 keeps the search’s scores; keyword weight 1 ranks by the query’s words', async () => {
    const weights = (v: number, k: number) => ({ vector_setting: { vector_weight: v, embedding_provider_name: '', embedding_model_name: '' }, keyword_setting: { keyword_weight: k } });
    const off = await retrieve(kr({ reranking_enable: false, top_k: 10 }));
    const vector = await retrieve(kr({ reranking_enable: true, reranking_mode: 'weighted_score', weights: weights(1, 0), top_k: 10 }));
    expect(vector.result.map((r) => [r.content, r.metadata.score])).toEqual(off.result.map((r) => [r.content, r.metadata.score]));
    const keyword = await retrieve(kr({ reranking_enable: true, reranking_mode: 'weighted_score', weights: weights(0, 1), top_k: 10 }), 'remote fridays');
    const scores = keyword.result.map((r) => r.metadata.score as number);
    for (let i = 1; i < scores.length; i++) expect(scores[i]!).toBeLessThanOrEqual(scores[i - 1]!);
    // "Fridays: remote." is made of the query's two words only: the best keyword match.
    expect(keyword.result[0]!.content).toBe('Fridays: remote.');
    // Texts without a query word score 0.
    const pancakes = keyword.result.find((r) => r.content.startsWith('Pancakes'));
    if (pancakes) expect(pancakes.metadata.score).toBe(0);
    for (const sc of scores) expect(sc).toBeGreaterThanOrEqual(0);
    for (const sc of scores) expect(sc).toBeLessThanOrEqual(1);
  });

  it('a rerank server that fails: the node fails with Dify’s invoke error, /retrieve answers completion_request_error', async () => {
    const node = kr({ ...JINA, reranking_model: { provider: 'cohere', model: 'rerank-v3.5' } });
    const { nf } = await retrieve(node);
    expect(nf).toMatchObject({ status: 'failed', error: '[cohere] rerank model failed: the server answered 503: reranker overloaded' });
    const yaml = workflowDsl(
      [startNode([{ variable: 'q' }]), { ...node, error_strategy: 'fail-branch' }, templateNode('ok', 'found'), templateNode('bad', '{{ t }}', { t: ['kr', 'error_type'] }), { id: 'agg', type: 'variable-aggregator', variables: [['ok', 'output'], ['bad', 'output']] }, endNode({ r: ['agg', 'output'] })],
      [['start', 'kr'], ['kr', 'ok', 'success-branch'], ['kr', 'bad', 'fail-branch'], ['ok', 'agg'], ['bad', 'agg'], ['agg', 'end']],
    );
    const { apiKey } = await s.importApp(yaml);
    const body = await (await run(apiKey, { q: 'remote' })).json();
    expect(body.data).toMatchObject({ status: 'partial-succeeded', outputs: { r: 'InvokeServerUnavailableError' } });

    const r = await kb.call('POST', `/datasets/${handbook}/retrieve`, {
      query: 'remote fridays',
      retrieval_model: { search_method: 'semantic_search', top_k: 3, score_threshold_enabled: false, reranking_enable: true, reranking_model: { reranking_provider_name: 'cohere', reranking_model_name: 'rerank-v3.5' } },
    });
    expect(r.status).toBe(400);
    expect(r.body).toEqual({ code: 'completion_request_error', message: '[cohere] rerank model failed: the server answered 503: reranker overloaded', status: 400 });
    expect(broken.requests.at(-1)!.authorization).toBe('Bearer cohere-key');
  });

  it('no rerank model configured: an import warning, and retrieval by score with process_data saying so', async () => {
    const node = kr({ ...JINA, reranking_model: { provider: 'langgenius/voyage/voyage', model: 'rerank-2' } });
    const a = await s.runtime.apps.importDsl(app(node));
    const warnings = await s.runtime.appWarnings(a);
    expect(warnings).toContainEqual(
      expect.objectContaining({ node_id: 'kr', node_type: 'knowledge-retrieval', part: 'rerank model langgenius/voyage/voyage/rerank-2', setting: 'VOYAGE_API_KEY', message: expect.stringContaining('reranking off') }),
    );
    const off = await retrieve(kr({ reranking_enable: false }));
    const { nf, result } = await retrieve(node);
    expect(nf.status).toBe('succeeded');
    expect(nf.process_data.reranking).toMatch(/^reranking skipped \(Model provider "voyage" is not configured: set VOYAGE_API_KEY .*\); hits ordered by their retrieval score, as with reranking off$/);
    expect(result.map((r) => [r.content, r.metadata.score])).toEqual(off.result.map((r) => [r.content, r.metadata.score]));
    // Reranking on with no model named (Dify's default for older DSLs): the same fallback, noted.
    const unnamed = await retrieve(kr({ reranking_enable: true, reranking_mode: 'reranking_model' }));
    expect(unnamed.nf.process_data.reranking).toContain('names no rerank model');
  });

  it('POST /datasets/{id}/retrieve with reranking: Jina-style and TEI servers order the records', async () => {
    for (const [provider, server] of [['jina', jina], ['huggingface_tei', tei]] as const) {
      const before = server.requests.length;
      const r = await kb.call('POST', `/datasets/${recipes}/retrieve`, {
        query: 'remote fridays bread',
        retrieval_model: { search_method: 'hybrid_search', top_k: 2, score_threshold_enabled: false, reranking_enable: true, reranking_mode: 'reranking_model', reranking_model: { reranking_provider_name: provider, reranking_model_name: 'bge-reranker' } },
      });
      expect(r.status).toBe(200);
      expect(server.requests.length).toBe(before + 1);
      const body = server.requests.at(-1)!.body;
      const sent = (provider === 'huggingface_tei' ? body.texts : body.documents) as string[];
      if (provider === 'huggingface_tei') expect(body).not.toHaveProperty('documents');
      const expected = [...sent].sort((a, b) => fakeRelevance(b) - fakeRelevance(a)).slice(0, 2);
      const records = r.body.records as { segment: { content: string }; score: number }[];
      expect(records.map((x) => x.segment.content)).toEqual(expected);
      expect(records.map((x) => x.score)).toEqual(expected.map(fakeRelevance));
    }
  });

  it('a dataset’s own retrieval_model with reranking applies to /retrieve without one', async () => {
    const ds = await kb.call('PATCH', `/datasets/${recipes}`, {
      retrieval_model: { search_method: 'semantic_search', top_k: 2, score_threshold_enabled: false, reranking_enable: true, reranking_mode: 'reranking_model', reranking_model: { reranking_provider_name: 'jina', reranking_model_name: 'jina-reranker-m0' } },
    });
    expect(ds.status).toBe(200);
    expect(ds.body.retrieval_model_dict).toMatchObject({ reranking_enable: true, reranking_mode: 'reranking_model', reranking_model: { reranking_provider_name: 'jina', reranking_model_name: 'jina-reranker-m0' } });
    const before = jina.requests.length;
    const r = await kb.call('POST', `/datasets/${recipes}/retrieve`, { query: 'remote fridays bread' });
    expect(r.status).toBe(200);
    expect(jina.requests.length).toBe(before + 1);
    expect(jina.requests.at(-1)!.body.model).toBe('jina-reranker-m0');
    const bad = await kb.call('POST', `/datasets/${recipes}/retrieve`, { query: 'x', retrieval_model: { reranking_enable: 'yes' } });
    expect(bad.status).toBe(400);
    expect(bad.body.message).toBe('retrieval_model.reranking_enable must be a boolean.');
    await kb.call('PATCH', `/datasets/${recipes}`, { retrieval_model: { search_method: 'semantic_search', top_k: 4, reranking_enable: false } });
  });
});
