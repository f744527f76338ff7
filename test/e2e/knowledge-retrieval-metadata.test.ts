import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.js';
import { kbClient } from '../helpers/kb-client.js';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { dataFrames, parseSse } from '../helpers/sse.js';
import { endNode, startNode, workflowDsl, type NodeSpec } from '../helpers/workflow-dsl.js';

/** The knowledge-retrieval node's metadata filtering: manual conditions and automatic (model) ones. */

let s: TestServer;
let llm: FakeOpenAI;
let kb: ReturnType<typeof kbClient>;
let ds: string;

beforeAll(async () => {
  llm = await startFakeOpenAI({ reply: '{"metadata_map": []}' });
  s = await startServer({ env: { QUEUE_POLL_MS: '50', OPENAI_API_KEY: 'test-key', OPENAI_BASE_URL: llm.baseUrl } });
  kb = kbClient(s, await s.datasetKey());
  ({ ds } = await kb.metadataLibrary('Library'));
});
afterAll(async () => {
  await s?.close();
  await llm?.close();
});

const kr = (extra: Record<string, unknown>): NodeSpec => ({
  id: 'kr',
  type: 'knowledge-retrieval',
  query_variable_selector: ['start', 'q'],
  dataset_ids: [ds],
  retrieval_mode: 'multiple',
  multiple_retrieval_config: { top_k: 10, score_threshold: null },
  ...extra,
});

const app = (node: NodeSpec) =>
  workflowDsl([startNode([{ variable: 'q' }, { variable: 'who', required: false }, { variable: 'y', type: 'number', required: false }]), node, endNode({ result: ['kr', 'result'] })], [['start', 'kr'], ['kr', 'end']]);

async function runNode(node: NodeSpec, inputs: Record<string, unknown>): Promise<Record<string, any>> {
  const { apiKey } = await s.importApp(app(node));
  const r = await fetch(`${s.api}/workflows/run`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ inputs: { q: 'remote work policy', ...inputs }, response_mode: 'streaming', user: 'alice' }),
  });
  expect(r.status).toBe(200);
  const events = dataFrames(parseSse(await r.text()));
  return events.find((e) => e.event === 'node_finished' && (e.data as { node_id: string }).node_id === 'kr')!.data as Record<string, any>;
}

/** The documents the node returned, by name. */
const names = (nf: Record<string, any>) => (nf.outputs.result as { title: string }[]).map((x) => x.title).sort();
const manual = (conditions: unknown[], logical = 'and') => kr({ metadata_filtering_mode: 'manual', metadata_filtering_conditions: { logical_operator: logical, conditions } });

describe('knowledge-retrieval node: manual metadata filtering', () => {
  it('values are templates: a text variable, a number variable, fixed values; and / or; results carry doc_metadata', async () => {
    const bob = await runNode(manual([{ name: 'author', comparison_operator: 'is', value: '{{#start.who#}}' }]), { who: 'Bob' });
    expect(bob.status).toBe('succeeded');
    expect(names(bob)).toEqual(['B']);
    expect(bob.outputs.result[0].metadata.doc_metadata).toEqual({ author: 'Bob', year: 2024 });
    // Line breaks in a text value become spaces and the value is trimmed (as Dify).
    expect(names(await runNode(manual([{ name: 'author', comparison_operator: 'is', value: ' Ann\nLee ' }]), {}))).toEqual(['A']);
    expect(names(await runNode(manual([{ name: 'year', comparison_operator: '>', value: '{{#start.y#}}' }]), { y: 2021 }))).toEqual(['B']);
    expect(names(await runNode(manual([{ name: 'year', comparison_operator: '≤', value: 2020 }]), {}))).toEqual(['A']);
    const either = [
      { name: 'author', comparison_operator: 'is', value: 'Ann Lee' },
      { name: 'year', comparison_operator: '>', value: 2023 },
    ];
    expect(names(await runNode(manual(either, 'or'), {}))).toEqual(['A', 'B']);
    expect(names(await runNode(manual(either, 'and'), {}))).toEqual([]);
    expect(names(await runNode(manual([{ name: 'author', comparison_operator: 'empty' }]), {}))).toEqual(['C']);
    // Unfiltered (disabled, or manual without conditions): every document; C has no metadata.
    const all = await runNode(kr({ metadata_filtering_mode: 'disabled' }), {});
    expect(names(all)).toEqual(['A', 'B', 'C']);
    expect(all.outputs.result.find((x: { title: string }) => x.title === 'C').metadata.doc_metadata).toBeNull();
    expect(names(await runNode(manual([]), {}))).toEqual(['A', 'B', 'C']);
  });

  it('a bad condition fails the node naming it; a value variable that is not text or a number too', async () => {
    const bad = await runNode(manual([{ name: 'author', comparison_operator: 'like', value: 'x' }]), {});
    expect(bad).toMatchObject({ status: 'failed' });
    expect(bad.error).toMatch(/^metadata_filtering_conditions\.conditions\[0\]\.comparison_operator must be one of contains, /);
    const notNumber = await runNode(manual([{ name: 'year', comparison_operator: '>', value: '{{#start.who#}}' }]), { who: 'soon' });
    expect(notNumber).toMatchObject({ status: 'failed', error: 'metadata_filtering_conditions.conditions[0].value must be a number for >.' });
    const obj = await runNode(manual([{ name: 'author', comparison_operator: 'is', value: '{{#sys.files#}}' }]), {});
    expect(obj).toMatchObject({ status: 'failed', error: 'metadata_filtering_conditions.conditions[0].value: {{#sys.files#}} is not a string or a number' });
  });

  it('import: an unknown mode or a malformed condition is refused naming the field', async () => {
    await expect(s.importApp(app(kr({ metadata_filtering_mode: 'sometimes' })))).rejects.toThrow(/node kr \(knowledge-retrieval\): metadata_filtering_mode must be/);
    await expect(s.importApp(app(manual([{ comparison_operator: 'is', value: 'x' }])))).rejects.toThrow(/metadata_filtering_conditions\.conditions\[0\]\.name must be a metadata field name/);
  });
});

describe('knowledge-retrieval node: automatic metadata filtering', () => {
  const auto = (extra: Record<string, unknown> = {}) =>
    kr({ metadata_filtering_mode: 'automatic', metadata_model_config: { provider: 'openai', name: 'gpt-meta', mode: 'chat', completion_params: { temperature: 0 } }, ...extra });

  it('asks the metadata model with the query and the fields, and filters by the conditions it names (unknown fields dropped)', async () => {
    llm.behaviour = {
      reply: '```json\n{"metadata_map": [{"metadata_field_name": "author", "metadata_field_value": "Bob", "comparison_operator": "is"}, {"metadata_field_name": "genre", "metadata_field_value": "x", "comparison_operator": "is"}]}\n```',
    };
    const before = llm.requests.length;
    const nf = await runNode(auto(), { q: 'What does Bob say about remote work policy?' });
    expect(nf.status).toBe('succeeded');
    expect(names(nf)).toEqual(['B']);
    const sent = llm.requests.slice(before);
    expect(sent).toHaveLength(1);
    expect(sent[0]!.body).toMatchObject({ model: 'gpt-meta', temperature: 0 });
    const last = (sent[0]!.body.messages as { role: string; content: string }[]).at(-1)!;
    expect(JSON.parse(last.content)).toEqual({
      input_text: 'What does Bob say about remote work policy?',
      metadata_fields: [
        { name: 'author', type: 'string' },
        { name: 'year', type: 'number' },
      ],
    });
    expect(nf.execution_metadata.total_tokens).toBeGreaterThan(0);
  });

  it('several conditions join with "or" unless the node says "and"; an invalid extracted condition is dropped', async () => {
    llm.behaviour = {
      reply: '{"metadata_map": [{"metadata_field_name": "author", "metadata_field_value": "Ann Lee", "comparison_operator": "is"}, {"metadata_field_name": "year", "metadata_field_value": 2023, "comparison_operator": ">"}, {"metadata_field_name": "year", "metadata_field_value": "later", "comparison_operator": "after"}]}',
    };
    expect(names(await runNode(auto(), {}))).toEqual(['A', 'B']);
    expect(names(await runNode(auto({ metadata_filtering_conditions: { logical_operator: 'and', conditions: [] } }), {}))).toEqual([]);
  });

  it('an answer that is not JSON, or a failing model, leaves the search unfiltered (as Dify); no model config fails the node', async () => {
    llm.behaviour = { reply: 'I could not find any metadata.' };
    expect(names(await runNode(auto(), {}))).toEqual(['A', 'B', 'C']);
    llm.behaviour = { failStatus: 500, failMessage: 'model down' };
    expect(names(await runNode(auto(), {}))).toEqual(['A', 'B', 'C']);
    llm.behaviour = { reply: '{"metadata_map": []}' };
    const none = await runNode(kr({ metadata_filtering_mode: 'automatic' }), {});
    expect(none).toMatchObject({ status: 'failed', error: 'metadata_model_config is required for automatic metadata filtering' });
    // An unknown dataset fails the node without asking the model first.
    const ghost = '00000000-0000-4000-8000-00000000dead';
    const before = llm.requests.length;
    const missing = await runNode(auto({ dataset_ids: [ds, ghost] }), {});
    expect(missing).toMatchObject({ status: 'failed', error: expect.stringMatching(new RegExp(`^Dataset not found: ${ghost} \\(node \\w+: import the app with --dataset ${ghost}=NEW_ID, or create the dataset\\)$`)) });
    expect(llm.requests.length).toBe(before);
  });
});
