import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { startServer, type TestServer } from '../helpers/server.js';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { kbClient } from '../helpers/kb-client.js';
import { dataFrames, parseSse } from '../helpers/sse.js';
import { validateResponse, validateSchema } from '../helpers/openapi.js';
import { llmNode, startNode, workflowDsl } from '../helpers/workflow-dsl.js';

let fake: FakeOpenAI;
let s: TestServer;
let kb: ReturnType<typeof kbClient>;
let handbook: string;
let policiesDoc: string;

const HANDBOOK = 'Vacation policy: employees get twenty days a year.\nRemote work is allowed on Fridays.\nThe office closes at six.';

beforeAll(async () => {
  fake = await startFakeOpenAI();
  s = await startServer({ env: { OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: fake.baseUrl, QUEUE_POLL_MS: '50' } });
  kb = kbClient(s, await s.datasetKey());
  handbook = await kb.dataset('Handbook', 'economy');
  const r = await kb.call('POST', `/datasets/${handbook}/document/create-by-text`, { name: 'Policies', text: HANDBOOK, process_rule: { mode: 'custom', rules: { segmentation: { separator: '\n', max_tokens: 50 } } } });
  expect(r.status).toBe(200);
  policiesDoc = r.body.document.id;
  expect(await kb.settle(handbook, r.body.batch)).toMatchObject({ indexing_status: 'completed' });
  // indexing and a server start under load (both databases)
}, 120_000);
afterAll(async () => {
  await s?.close();
  await fake?.close();
});
beforeEach(() => {
  fake.behaviour = {};
  fake.requests.length = 0;
});

/** start → knowledge-retrieval → LLM (context = the retrieval's result) → answer; `retriever_resource` as given. */
function ragChatflow(citations: boolean, context: Record<string, unknown> = { enabled: true, variable_selector: ['kr', 'result'] }): string {
  const doc = parse(
    workflowDsl(
      [
        startNode(),
        { id: 'kr', type: 'knowledge-retrieval', query_variable_selector: ['sys', 'query'], dataset_ids: [handbook], retrieval_mode: 'multiple', multiple_retrieval_config: { top_k: 2 } },
        llmNode('llm', '{{#sys.query#}}', {
          prompt_template: [
            { role: 'system', text: 'Answer from this context:\n{{#context#}}\nEnd of context.' },
            { role: 'user', text: '{{#sys.query#}}' },
          ],
          context,
        }),
        { id: 'answer', type: 'answer', answer: '{{#llm.text#}}' },
      ],
      [['start', 'kr'], ['kr', 'llm'], ['llm', 'answer']],
      { mode: 'advanced-chat' },
    ),
  ) as { workflow: Record<string, unknown> };
  doc.workflow.features = { retriever_resource: { enabled: citations } };
  return stringify(doc);
}

const headers = (k: string) => ({ authorization: `Bearer ${k}`, 'content-type': 'application/json' });
const ask = (k: string, body: Record<string, unknown>) => fetch(`${s.api}/chat-messages`, { method: 'POST', headers: headers(k), body: JSON.stringify({ inputs: {}, user: 'ann', ...body }) });
const listMessages = async (k: string, conversationId: string) => {
  const r = await fetch(`${s.api}/messages?user=ann&conversation_id=${conversationId}`, { headers: headers(k) });
  const body = await r.json();
  validateResponse('/messages', 'get', 200, body);
  return body.data as Record<string, any>[];
};

/** The citation keys of `message_end` and blocking answers, in Dify's `RetrievalSourceMetadata` order. */
const ANSWER_KEYS = ['position', 'dataset_id', 'dataset_name', 'document_id', 'document_name', 'data_source_type', 'segment_id', 'retriever_from', 'score', 'hit_count', 'word_count', 'segment_position', 'index_node_hash', 'content', 'page', 'doc_metadata', 'title', 'files', 'summary'];

describe('citations in chatflows (knowledge-retrieval → LLM context)', () => {
  it('blocking: the context reaches the prompt; retriever_resources in the answer and in GET /messages', async () => {
    fake.behaviour = { reply: 'You can work remotely on Fridays.' };
    const { apiKey } = await s.importApp(ragChatflow(true));
    const r = await ask(apiKey, { query: 'remote work fridays', response_mode: 'blocking' });
    expect(r.status).toBe(200);
    const body = await r.json();
    validateResponse('/chat-messages', 'post', 200, body);
    // the model saw the retrieved chunk in place of {{#context#}}
    const system = (fake.requests.at(-1)!.body.messages as { role: string; content: string }[])[0]!;
    expect(system.role).toBe('system');
    expect(system.content).toMatch(/^Answer from this context:\nRemote work is allowed on Fridays\.(\n.+)?\nEnd of context\.$/);
    const cites = body.metadata.retriever_resources as Record<string, any>[];
    expect(cites.length).toBeGreaterThanOrEqual(1);
    expect(Object.keys(cites[0]!)).toEqual(ANSWER_KEYS);
    expect(cites[0]).toMatchObject({
      position: 1,
      dataset_id: handbook,
      dataset_name: 'Handbook',
      document_id: policiesDoc,
      document_name: 'Policies',
      data_source_type: 'upload_file',
      retriever_from: 'workflow',
      content: 'Remote work is allowed on Fridays.',
      page: null,
      title: null,
    });
    expect(typeof cites[0]!.segment_id).toBe('string');
    expect(cites[0]!.score).toBeGreaterThan(0);
    expect(cites[0]!.hit_count).toBeGreaterThanOrEqual(1);
    // only that chunk matches the query
    expect(cites).toHaveLength(1);
    const [listed] = await listMessages(apiKey, body.conversation_id);
    expect(listed!.retriever_resources).toEqual([
      {
        id: expect.any(String),
        message_id: body.id,
        position: 1,
        dataset_id: handbook,
        dataset_name: 'Handbook',
        document_id: policiesDoc,
        document_name: 'Policies',
        data_source_type: 'upload_file',
        segment_id: cites[0]!.segment_id,
        score: cites[0]!.score,
        hit_count: cites[0]!.hit_count,
        word_count: cites[0]!.word_count,
        segment_position: cites[0]!.segment_position,
        index_node_hash: cites[0]!.index_node_hash,
        content: 'Remote work is allowed on Fridays.',
        created_at: body.created_at,
      },
    ]);
  });

  it('streaming: message_end carries the citations; the knowledge node keeps its result in its outputs', async () => {
    fake.behaviour = { reply: 'Twenty days.' };
    const { apiKey } = await s.importApp(ragChatflow(true));
    const r = await ask(apiKey, { query: 'vacation days', response_mode: 'streaming' });
    const events = dataFrames(parseSse(await r.text()));
    const end = events.find((e) => e.event === 'message_end') as Record<string, any>;
    validateSchema('StreamEventChatMessageEnd', end);
    expect(end.metadata.retriever_resources).toHaveLength(1);
    expect(end.metadata.retriever_resources[0]).toMatchObject({ position: 1, document_name: 'Policies', content: 'Vacation policy: employees get twenty days a year.' });
    const kr = events.find((e) => e.event === 'node_finished' && (e.data as { node_id: string }).node_id === 'kr')!.data as Record<string, any>;
    expect(kr.outputs.result[0].metadata).toMatchObject({ _source: 'knowledge', retriever_from: 'workflow', document_name: 'Policies' });
    const llm = events.find((e) => e.event === 'node_finished' && (e.data as { node_id: string }).node_id === 'llm')!.data as Record<string, any>;
    expect(llm.inputs['#context#']).toContain('Vacation policy: employees get twenty days a year.');
    const [listed] = await listMessages(apiKey, end.conversation_id as string);
    expect(listed!.retriever_resources.map((c: { content: string }) => c.content)).toEqual(['Vacation policy: employees get twenty days a year.']);
  });

  it('LLM nodes inside an iteration and a loop cite what they were given, as Dify forwards their citations to the answer', async () => {
    fake.behaviour = { reply: 'Noted.' };
    const inner = (container: string) => [
      { id: `${container}kr`, type: 'knowledge-retrieval', parentId: container, query_variable_selector: ['sys', 'query'], dataset_ids: [handbook], retrieval_mode: 'multiple', multiple_retrieval_config: { top_k: 1 } },
      llmNode(`${container}llm`, '{{#sys.query#}}', { parentId: container, prompt_template: [{ role: 'system', text: '{{#context#}}' }, { role: 'user', text: '{{#sys.query#}}' }], context: { enabled: true, variable_selector: [`${container}kr`, 'result'] } }),
    ];
    const doc = parse(
      workflowDsl(
        [
          startNode(),
          { id: 'kr', type: 'knowledge-retrieval', query_variable_selector: ['sys', 'query'], dataset_ids: [handbook], retrieval_mode: 'multiple', multiple_retrieval_config: { top_k: 2 } },
          { id: 'it', type: 'iteration', iterator_selector: ['kr', 'result'], output_selector: ['itllm', 'text'], start_node_id: 'itstart', error_handle_mode: 'terminated' },
          { id: 'itstart', type: 'iteration-start', parentId: 'it' },
          ...inner('it'),
          { id: 'lp', type: 'loop', loop_count: 2, break_conditions: [], logical_operator: 'and', loop_variables: [], start_node_id: 'lpstart' },
          { id: 'lpstart', type: 'loop-start', parentId: 'lp' },
          ...inner('lp'),
          { id: 'answer', type: 'answer', answer: '{{#it.output#}}' },
        ],
        [['start', 'kr'], ['kr', 'it'], ['itstart', 'itkr'], ['itkr', 'itllm'], ['it', 'lp'], ['lpstart', 'lpkr'], ['lpkr', 'lpllm'], ['lp', 'answer']],
        { mode: 'advanced-chat' },
      ),
    ) as { workflow: Record<string, unknown> };
    doc.workflow.features = { retriever_resource: { enabled: true } };
    const { apiKey } = await s.importApp(stringify(doc));
    const r = await ask(apiKey, { query: 'remote work fridays', response_mode: 'streaming' });
    const events = dataFrames(parseSse(await r.text()));
    const end = events.find((e) => e.event === 'message_end') as Record<string, any>;
    expect(end, JSON.stringify(events.filter((e) => e.event === 'error' || e.event === 'workflow_finished'))).toBeDefined();
    validateSchema('StreamEventChatMessageEnd', end);
    // every inner LLM was given the same document's chunk: one citation (Dify keeps one per document), numbered from 1
    expect(end.metadata.retriever_resources).toHaveLength(1);
    expect(end.metadata.retriever_resources[0]).toMatchObject({ position: 1, dataset_id: handbook, document_name: 'Policies', content: 'Remote work is allowed on Fridays.' });
    // one item to iterate (the one chunk that matched) and two loop rounds: three model calls
    expect(fake.requests).toHaveLength(3);
    const [listed] = await listMessages(apiKey, end.conversation_id as string);
    expect(listed!.retriever_resources.map((c: { document_name: string }) => c.document_name)).toEqual(['Policies']);
  });

  it('the retriever_resource feature off: the context still reaches the model, retriever_resources is []', async () => {
    fake.behaviour = { reply: 'ok' };
    const { apiKey } = await s.importApp(ragChatflow(false));
    const body = await (await ask(apiKey, { query: 'office closes', response_mode: 'blocking' })).json();
    expect(body.metadata.retriever_resources).toEqual([]);
    expect((fake.requests.at(-1)!.body.messages as { content: string }[])[0]!.content).toContain('The office closes at six.');
    const [listed] = await listMessages(apiKey, body.conversation_id);
    expect(listed!.retriever_resources).toEqual([]);
    const streamed = dataFrames(parseSse(await (await ask(apiKey, { query: 'office closes', response_mode: 'streaming' })).text()));
    expect((streamed.find((e) => e.event === 'message_end') as Record<string, any>).metadata.retriever_resources).toEqual([]);
  });

  it('context disabled: no citations, and {{#context#}} stays as written', async () => {
    fake.behaviour = { reply: 'ok' };
    const { apiKey } = await s.importApp(ragChatflow(true, { enabled: false, variable_selector: ['kr', 'result'] }));
    const body = await (await ask(apiKey, { query: 'office closes', response_mode: 'blocking' })).json();
    expect(body.metadata.retriever_resources).toEqual([]);
    expect((fake.requests.at(-1)!.body.messages as { content: string }[])[0]!.content).toBe('Answer from this context:\n{{#context#}}\nEnd of context.');
  });

  it('a context item without content fails the LLM node as Dify (InvalidContextStructureError)', async () => {
    const doc = parse(ragChatflow(true, { enabled: true, variable_selector: ['code', 'items'] })) as { workflow: { graph: { nodes: Record<string, any>[]; edges: Record<string, any>[] } } };
    doc.workflow.graph.nodes.push({ id: 'code', data: { type: 'code', title: 'code', code_language: 'javascript', code: 'function main() { return { items: [{ text: "no content" }] }; }', variables: [], outputs: { items: { type: 'array[object]' } } } });
    doc.workflow.graph.edges = [
      { source: 'start', target: 'kr', sourceHandle: 'source' },
      { source: 'kr', target: 'code', sourceHandle: 'source' },
      { source: 'code', target: 'llm', sourceHandle: 'source' },
      { source: 'llm', target: 'answer', sourceHandle: 'source' },
    ];
    const { apiKey } = await s.importApp(stringify(doc));
    const events = dataFrames(parseSse(await (await ask(apiKey, { query: 'office', response_mode: 'streaming' })).text()));
    const llm = events.find((e) => e.event === 'node_finished' && (e.data as { node_id: string }).node_id === 'llm')!.data as Record<string, any>;
    expect(llm).toMatchObject({ status: 'failed', error: 'Invalid context structure: {"text":"no content"}' });
  });
});
