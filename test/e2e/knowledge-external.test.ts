import { execFile } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.js';
import { PROJECT_ROOT } from '../helpers/fixtures.js';
import { kbClient } from '../helpers/kb-client.js';
import { startEmbeddings, type EmbeddingsServer } from '../helpers/knowledge.js';
import { startFakeExternalKnowledge, type FakeExternalKnowledge } from '../helpers/fake-external-knowledge.js';
import { fakeRelevance, startFakeRerank, type FakeRerankServer } from '../helpers/fake-rerank.js';
import { dataFrames, parseSse } from '../helpers/sse.js';
import { endNode, startNode, workflowDsl, type NodeSpec } from '../helpers/workflow-dsl.js';

/**
 * External knowledge (issue 43): a dataset backed by Dify's External Knowledge API, created with
 * the CLI, served by a local fake API over real HTTP (through the SSRF guard, 127.0.0.1 allowed).
 */
const execFileP = promisify(execFile);
let s: TestServer;
let emb: EmbeddingsServer;
let api: FakeExternalKnowledge;
let jina: FakeRerankServer;
let kb: ReturnType<typeof kbClient>;
let handbook: string;

const WIKI = [
  { content: 'The Friday remote policy is published on the intranet wiki.', title: 'wiki/remote.md', score: 0.91, metadata: { document_id: 'wiki-1', source: 'confluence' } },
  { content: 'Remote Fridays started in 2021.', title: 'wiki/history.md', score: 0.62 },
  { content: 'Parking permits are renewed in January.', title: 'wiki/parking.md', score: 0.12 },
];

function cli(args: string[]) {
  // the endpoint check at creation goes through the SSRF guard as the server's requests do
  const env: Record<string, string> = { ...(process.env as Record<string, string>), DOVETAIL_DATA_DIR: s.dataDir, LOG_LEVEL: 'silent', SSRF_ALLOW_HOSTS: '127.0.0.1' };
  delete env.DATABASE_URL;
  if (s.config.databaseUrl) Object.assign(env, { DATABASE_URL: s.config.databaseUrl, DATABASE_SCHEMA: s.config.databaseSchema ?? '' });
  return execFileP(process.execPath, [path.join(PROJECT_ROOT, 'bin', 'dovetail.js'), ...args], { env, cwd: s.dataDir });
}
const createArgs = (name: string, key: string, knowledgeId: string, more: string[] = [], endpoint = api.endpoint) => ['dataset', 'create', '--name', name, '--external', '--endpoint', endpoint, '--api-key', key, '--knowledge-id', knowledgeId, ...more, '--json'];
const createExternal = async (name: string, key: string, knowledgeId: string, more: string[] = []) => (JSON.parse((await cli(createArgs(name, key, knowledgeId, more))).stdout) as { dataset_id: string }).dataset_id;
/** The CLI's failure (exit code and stderr) of a command expected to fail. */
const failing = (args: string[]) => cli(args).then(() => ({ code: 0, stderr: '' }), (e: { stderr: string; code: number }) => e);

beforeAll(async () => {
  [emb, api, jina] = await Promise.all([startEmbeddings(), startFakeExternalKnowledge({ apiKey: 'ext-secret', knowledge: { wiki: WIKI } }), startFakeRerank({ dialect: 'cohere' })]);
  s = await startServer({ env: { QUEUE_POLL_MS: '50', EMBEDDINGS_BASE_URL: emb.baseUrl, EMBEDDINGS_MODEL: 'test-embed', SSRF_ALLOW_HOSTS: '127.0.0.1', JINA_API_KEY: 'k', JINA_BASE_URL: jina.url } });
  kb = kbClient(s, await s.datasetKey());
  handbook = await kb.dataset('Handbook', 'high_quality');
  const r = await kb.call('POST', `/datasets/${handbook}/document/create-by-text`, { name: 'Policies', text: 'Remote work is allowed on Fridays.\nThe office closes at six.', process_rule: { mode: 'custom', rules: { segmentation: { separator: '\n', max_tokens: 50 } } } });
  expect(await kb.settle(handbook, r.body.batch)).toMatchObject({ indexing_status: 'completed' });
}, 120_000);
afterAll(async () => {
  await s?.close();
  await Promise.all([emb?.close(), api?.close(), jina?.close()]);
});

const run = async (key: string, q: string) => {
  const r = await fetch(`${s.api}/workflows/run`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ inputs: { q }, response_mode: 'streaming', user: 'alice' }) });
  const events = dataFrames(parseSse(await r.text()));
  return events.find((e) => e.event === 'node_finished' && (e.data as { node_id: string }).node_id === 'kr')!.data as Record<string, any>;
};
const node = (ids: string[], config: Record<string, unknown> = {}): NodeSpec => ({
  id: 'kr',
  type: 'knowledge-retrieval',
  query_variable_selector: ['start', 'q'],
  dataset_ids: ids,
  retrieval_mode: 'multiple',
  multiple_retrieval_config: { top_k: 4, score_threshold: null, reranking_enable: false, ...config },
});
const app = (n: NodeSpec) => workflowDsl([startNode([{ variable: 'q' }]), n, endNode({ result: ['kr', 'result'] })], [['start', 'kr'], ['kr', 'end']]);

describe('external knowledge', () => {
  let wiki = '';

  it('dataset create --external: the dataset objects show external_knowledge_info; the key is sealed at rest', async () => {
    const before = api.requests.length;
    wiki = await createExternal('Wiki', 'ext-secret', 'wiki', ['--top-k', '3']);
    // Dify's endpoint check: POST {endpoint}/retrieval with the key and no body (the API's 422 is accepted)
    expect(api.requests.slice(before)).toEqual([{ authorization: 'Bearer ext-secret', body: {} }]);
    const got = await kb.call('GET', `/datasets/${wiki}`);
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({
      name: 'Wiki',
      provider: 'external',
      indexing_technique: null,
      document_count: 0,
      external_knowledge_info: { external_knowledge_id: 'wiki', external_knowledge_api_endpoint: api.endpoint, external_knowledge_api_name: new URL(api.endpoint).host },
      external_retrieval_model: { top_k: 3, score_threshold: 0, score_threshold_enabled: false },
    });
    expect(typeof got.body.external_knowledge_info.external_knowledge_api_id).toBe('string');
    const listed = (await kb.call('GET', '/datasets?limit=100')).body.data as Record<string, any>[];
    expect(listed.find((d) => d.id === wiki)).toMatchObject({ provider: 'external' });
    expect(listed.find((d) => d.id === handbook)).toMatchObject({ provider: 'vendor', external_knowledge_info: null });
    const row = await s.runtime.store.db.selectFrom('datasets').select('external_knowledge').where('id', '=', wiki).executeTakeFirstOrThrow();
    expect(row.external_knowledge).not.toContain('ext-secret');
    const bad = await cli(['dataset', 'create', '--name', 'x', '--external', '--endpoint', api.endpoint, '--api-key', 'k']).catch((e: { stderr: string; code: number }) => e);
    expect((bad as { code: number }).code).toBe(1);
    expect((bad as { stderr: string }).stderr).toContain('error: --external needs --knowledge-id');
  }, 90_000);

  it('the endpoint check refuses a wrong key (403), a wrong path (404) and an unreachable endpoint with Dify\'s messages; --no-check skips it', async () => {
    const forbidden = await failing(createArgs('Checked 1', 'wrong-key', 'wiki'));
    expect(forbidden.code).toBe(1);
    // Dify's message, the key not echoed
    expect(forbidden.stderr).toContain('error: Forbidden: Authorization failed with api_key: ********');
    expect(forbidden.stderr).not.toContain('wrong-key');
    const notFound = await failing(createArgs('Checked 2', 'ext-secret', 'wiki', [], `${api.endpoint}/nope`));
    expect(notFound.stderr).toContain(`error: Not Found: failed to connect to the endpoint: ${api.endpoint}/nope/retrieval`);
    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const unreachable = await failing(createArgs('Checked 3', 'ext-secret', 'wiki', [], `http://127.0.0.1:${port}/api`));
    expect(unreachable.stderr).toContain(`error: failed to connect to the endpoint: http://127.0.0.1:${port}/api/retrieval`);
    // nothing was made
    const names = ((await kb.call('GET', '/datasets?limit=100')).body.data as { name: string }[]).map((d) => d.name);
    expect(names.filter((n) => n.startsWith('Checked'))).toEqual([]);
    // --no-check: made without a call
    const before = api.requests.length;
    const unchecked = await createExternal('Checked 4', 'wrong-key', 'wiki', ['--no-check']);
    expect(api.requests.length).toBe(before);
    expect((await kb.call('GET', `/datasets/${unchecked}`)).body.provider).toBe('external');
    expect((await failing(['dataset', 'create', '--name', 'Own', '--no-check'])).stderr).toContain('error: --no-check needs --external');
  }, 90_000);

  it('document writes on an external dataset answer Dify\'s 400 invalid_param; reads find no documents', async () => {
    const external = { status: 400, code: 'invalid_param', message: 'External datasets are not supported.' };
    const file = { name: 'a.txt', bytes: Buffer.from('hello'), mime: 'text/plain' };
    for (const path of ['create-by-file', 'create_by_file']) {
      const r = await kb.form('POST', `/datasets/${wiki}/document/${path}`, file, { indexing_technique: 'economy', process_rule: { mode: 'automatic' } });
      expect([r.status, r.body]).toEqual([400, external]);
    }
    const docId = '00000000-0000-4000-8000-000000000001';
    for (const path of ['update-by-file', 'update_by_file']) {
      const r = await kb.form('POST', `/datasets/${wiki}/documents/${docId}/${path}`, file);
      expect([r.status, r.body]).toEqual([400, external]);
    }
    // create-by-text: Dify asks for indexing_technique first (an external dataset has none) ...
    const noTechnique = await kb.call('POST', `/datasets/${wiki}/document/create-by-text`, { name: 'n', text: 't' });
    expect([noTechnique.status, noTechnique.body]).toEqual([400, { status: 400, code: 'invalid_param', message: 'indexing_technique is required.' }]);
    // ... and with one it is refused here too (Dify would store a document no retrieval reads)
    const withTechnique = await kb.call('POST', `/datasets/${wiki}/document/create-by-text`, { name: 'n', text: 't', indexing_technique: 'economy', process_rule: { mode: 'automatic' } });
    expect([withTechnique.status, withTechnique.body]).toEqual([400, external]);
    const listed = await kb.call('GET', `/datasets/${wiki}/documents`);
    expect(listed.status).toBe(200);
    expect(listed.body).toMatchObject({ data: [], total: 0 });
    const segments = await kb.call('POST', `/datasets/${wiki}/documents/${docId}/segments`, { segments: [{ content: 'x' }] });
    expect(segments.status).toBe(404);
    expect((await kb.call('GET', `/datasets/${wiki}`)).body).toMatchObject({ indexing_technique: null, document_count: 0 });
  });

  it('metadata filtering: the node\'s conditions go to the API as Dify\'s metadata_condition; none without filtering', async () => {
    const { apiKey } = await s.importApp(app({ ...node([wiki]), metadata_filtering_mode: 'manual', metadata_filtering_conditions: { logical_operator: 'or', conditions: [{ name: 'source', comparison_operator: 'is', value: '{{#start.q#}}' }, { name: 'year', comparison_operator: '>', value: 2020 }] } }));
    const nf = await run(apiKey, 'confluence');
    expect(nf.status).toBe('succeeded');
    expect(api.requests.at(-1)!.body).toEqual({
      knowledge_id: 'wiki',
      query: 'confluence',
      retrieval_setting: { top_k: 4, score_threshold: 0 },
      metadata_condition: { logical_operator: 'or', conditions: [{ name: 'source', comparison_operator: 'is', value: 'confluence' }, { name: 'year', comparison_operator: '>', value: 2020 }] },
    });
    const plain = await s.importApp(app(node([wiki])));
    await run(plain.apiKey, 'confluence');
    expect(api.requests.at(-1)!.body).not.toHaveProperty('metadata_condition');
  });

  it('knowledge-retrieval: an external dataset’s records reach the node’s result beside the own dataset’s hits', async () => {
    const { apiKey } = await s.importApp(app(node([handbook, wiki])));
    const before = api.requests.length;
    const nf = await run(apiKey, 'remote fridays');
    expect(nf.status).toBe('succeeded');
    expect(api.requests.length).toBe(before + 1);
    expect(api.requests.at(-1)).toEqual({ authorization: 'Bearer ext-secret', body: { knowledge_id: 'wiki', query: 'remote fridays', retrieval_setting: { top_k: 4, score_threshold: 0 } } });
    const result = nf.outputs.result as { content: string; title: string; metadata: Record<string, any> }[];
    const external = result.filter((r) => r.metadata.data_source_type === 'external');
    expect(external.map((r) => r.content)).toEqual(expect.arrayContaining([WIKI[0]!.content]));
    expect(external.find((r) => r.content === WIKI[0]!.content)).toMatchObject({
      title: 'wiki/remote.md',
      metadata: { _source: 'knowledge', dataset_id: wiki, dataset_name: 'Wiki', document_id: 'wiki-1', document_name: 'wiki/remote.md', score: 0.91, retriever_from: 'workflow', doc_metadata: { document_id: 'wiki-1', source: 'confluence' } },
    });
    expect(result.some((r) => r.metadata.dataset_id === handbook)).toBe(true);
    for (let i = 1; i < result.length; i++) expect(result[i]!.metadata.score).toBeLessThanOrEqual(result[i - 1]!.metadata.score);
  });

  it('reranked with the own dataset’s hits: one order, the rerank model’s', async () => {
    const { apiKey } = await s.importApp(app(node([handbook, wiki], { reranking_enable: true, reranking_mode: 'reranking_model', reranking_model: { provider: 'jina', model: 'jina-reranker-v2' } })));
    const nf = await run(apiKey, 'remote fridays');
    const sent = jina.requests.at(-1)!.body.documents as string[];
    expect(sent).toEqual(expect.arrayContaining([WIKI[0]!.content, 'Remote work is allowed on Fridays.']));
    const expected = [...sent].sort((a, b) => fakeRelevance(b) - fakeRelevance(a)).slice(0, 4);
    expect((nf.outputs.result as { content: string }[]).map((r) => r.content)).toEqual(expected);
  });

  it('the API’s errors (1002 bad key, 2001 unknown knowledge): no records, as Dify, and process_data says which', async () => {
    // a key revoked after creation: made without the endpoint check
    const wrongKey = await createExternal('Wiki bad key', 'nope', 'wiki', ['--no-check']);
    const unknown = await createExternal('Wiki gone', 'ext-secret', 'archive');
    const { apiKey } = await s.importApp(app(node([handbook, wrongKey, unknown])));
    const nf = await run(apiKey, 'remote fridays');
    expect(nf.status).toBe('succeeded');
    expect((nf.outputs.result as { metadata: Record<string, any> }[]).every((r) => r.metadata.dataset_id === handbook)).toBe(true);
    expect(nf.process_data.external_knowledge).toBe(
      `dataset ${wrongKey}: the external knowledge API answered 403 (error_code 1002: Authorization failed); dataset ${unknown}: the external knowledge API answered 404 (error_code 2001: The knowledge does not exist)`,
    );
  }, 90_000);

  it('POST /datasets/{id}/retrieve on an external dataset: Dify’s records with external_retrieval_model', async () => {
    const r = await kb.call('POST', `/datasets/${wiki}/retrieve`, { query: 'remote', external_retrieval_model: { top_k: 5, score_threshold: 0.5, score_threshold_enabled: true } });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      query: { content: 'remote' },
      records: [
        { content: WIKI[0]!.content, title: 'wiki/remote.md', score: 0.91, metadata: { document_id: 'wiki-1', source: 'confluence' } },
        { content: WIKI[1]!.content, title: 'wiki/history.md', score: 0.62, metadata: {} },
      ],
    });
    expect(api.requests.at(-1)!.body).toMatchObject({ retrieval_setting: { top_k: 5, score_threshold: 0.5 } });
    // Without one: the dataset's own (top_k 3, no threshold).
    const own = await kb.call('POST', `/datasets/${wiki}/retrieve`, { query: 'remote' });
    expect(own.body.records).toHaveLength(3);
  });
});
