import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.js';
import { kbClient, retrieveContractErrors } from '../helpers/kb-client.js';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { endNode, startNode, workflowDsl } from '../helpers/workflow-dsl.js';

let s: TestServer;
let llm: FakeOpenAI;
let kb: ReturnType<typeof kbClient>;

function userText(body: Record<string, unknown>): string {
  const msgs = body.messages as { role: string; content: string }[];
  return msgs.find((m) => m.role === 'user')!.content;
}

/** The fake model writes two pairs per chunk, the second answer spread over indented lines. */
const twoPairs = (body: Record<string, unknown>) => {
  const chunk = userText(body);
  return `Q1: What does the handbook say about ${chunk.split(' ')[0]!.toLowerCase()}?\nA1: ${chunk}\nQ2: Quote the rule word for word.\nA2:   The rule:\n     "${chunk}"`;
};

beforeAll(async () => {
  llm = await startFakeOpenAI({ reply: twoPairs });
  s = await startServer({ env: { QUEUE_POLL_MS: '50', OPENAI_API_KEY: 'test-key', OPENAI_BASE_URL: llm.baseUrl, KNOWLEDGE_QA_MODEL: 'openai/gpt-qa', QUEUE_MAX_ATTEMPTS: '1' } });
  kb = kbClient(s, await s.datasetKey());
});
afterAll(async () => {
  await s?.close();
  await llm?.close();
});

const RULE = { mode: 'custom', rules: { segmentation: { separator: '\\n', max_tokens: 100 } } };
const LINES = ['Vacation is twenty days a year.', 'Remote work is allowed on Fridays.'];

describe('doc_form qa_model', () => {
  it('each chunk becomes the Q&A pairs the configured model writes in doc_language; questions are searched, answers returned', async () => {
    const ds = await kb.dataset('qa');
    const before = llm.requests.length;
    const c = await kb.call('POST', `/datasets/${ds}/document/create-by-text`, { name: 'Handbook', text: LINES.join('\n'), doc_form: 'qa_model', doc_language: 'German', process_rule: RULE });
    expect(c.status).toBe(200);
    expect(c.body.document.doc_form).toBe('qa_model');
    expect(await kb.settle(ds, c.body.batch)).toMatchObject({ indexing_status: 'completed', total_segments: 4, completed_segments: 4 });

    const calls = llm.requests.slice(before);
    expect(calls.map((r) => userText(r.body)).sort()).toEqual([...LINES].sort());
    const system = (calls[0]!.body.messages as { role: string; content: string }[]).find((m) => m.role === 'system')!.content;
    expect(system).toContain('You must answer in German');
    expect(system).toContain('Q1:\nA1:\nQ2:\nA2:');
    expect(calls[0]!.body).toMatchObject({ model: 'gpt-qa', temperature: 0.01 });

    const r = await kb.call('POST', `/datasets/${ds}/retrieve`, { query: 'handbook remote', retrieval_model: { search_method: 'keyword_search', top_k: 1 } });
    expect(retrieveContractErrors(r.body)).toEqual([]);
    expect(r.body.records[0].segment).toMatchObject({ content: 'What does the handbook say about remote?', answer: 'Remote work is allowed on Fridays.' });
    const quote = await kb.call('POST', `/datasets/${ds}/retrieve`, { query: 'quote word', retrieval_model: { search_method: 'keyword_search', top_k: 1 } });
    expect(quote.body.records[0].segment.answer).toMatch(/^The rule:\n"(Vacation|Remote)/);

    const pairs = [...LINES.map((l) => [`What does the handbook say about ${l.split(' ')[0]!.toLowerCase()}?`, l]), ...LINES.map((l) => ['Quote the rule word for word.', `The rule:\n"${l}"`])];
    const doc = (await kb.call('GET', `/datasets/${ds}/documents/${c.body.document.id}`)).body;
    expect(doc.word_count).toBe(pairs.reduce((n, [q, a]) => n + q!.length + a!.length, 0));

    // The workflow node reads a pair as Dify does.
    const app = workflowDsl(
      [
        startNode([{ variable: 'q' }]),
        { id: 'kr', type: 'knowledge-retrieval', query_variable_selector: ['start', 'q'], dataset_ids: [ds], retrieval_mode: 'multiple', multiple_retrieval_config: { top_k: 1, score_threshold: null } },
        endNode({ result: ['kr', 'result'] }),
      ],
      [['start', 'kr'], ['kr', 'end']],
    );
    const { apiKey } = await s.importApp(app);
    const run = await fetch(`${s.api}/workflows/run`, { method: 'POST', headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ inputs: { q: 'handbook remote' }, response_mode: 'blocking', user: 'u' }) });
    const out = await run.json();
    expect(out.data.outputs.result[0].content).toBe('question:What does the handbook say about remote? \nanswer:Remote work is allowed on Fridays.');
  });

  it('a model that writes no pairs ends the document in error saying so; an unreachable model fails the run', async () => {
    const ds = await kb.dataset('qa-empty');
    llm.behaviour = { reply: 'I cannot help with that.' };
    const c = await kb.call('POST', `/datasets/${ds}/document/create-by-text`, { name: 'x', text: 'Some text.', doc_form: 'qa_model' });
    expect(await kb.settle(ds, c.body.batch)).toMatchObject({ indexing_status: 'error', error: 'The model generated no question-answer pairs from the document.' });
    llm.behaviour = { failStatus: 500, failMessage: 'model overloaded' };
    const d = await kb.call('POST', `/datasets/${ds}/document/create-by-text`, { name: 'y', text: 'Other text.', doc_form: 'qa_model' });
    const st = await kb.settle(ds, d.body.batch);
    expect(st.indexing_status).toBe('error');
    expect(st.error).toMatch(/^Indexing failed: .*model overloaded/);
    llm.behaviour = { reply: twoPairs };
  });
});

describe('qa_model without a configured model', () => {
  let bare: TestServer;
  beforeAll(async () => {
    bare = await startServer({ env: { QUEUE_POLL_MS: '50' } });
  });
  afterAll(async () => bare?.close());

  it('is a 400 naming the setting, before anything is stored', async () => {
    const k = kbClient(bare, await bare.datasetKey());
    const ds = await k.dataset('qa-off');
    const r = await k.call('POST', `/datasets/${ds}/document/create-by-text`, { name: 'x', text: 'y', doc_form: 'qa_model' });
    expect(r.body).toEqual({ code: 'invalid_param', message: 'doc_form qa_model needs KNOWLEDGE_QA_MODEL (provider/model) to be set.', status: 400 });
    expect((await k.call('GET', `/datasets/${ds}/documents`)).body.total).toBe(0);
  });
});
