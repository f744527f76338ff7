import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { PROJECT_ROOT } from '../helpers/fixtures.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { openAiCompatibleProviders } from '../helpers/openai-providers.js';
import { dataFrames, parseSse } from '../helpers/sse.js';
import { kbClient } from '../helpers/kb-client.js';

/** Dify's own DSL fixtures, copied unchanged into the repository (see test/fixtures/dify-dsl/NOTICE.md). */
const DIR = path.resolve(PROJECT_ROOT, 'test', 'fixtures', 'dify-dsl');

/**
 * Files the importer refuses, and what the refusal must say. `minimal_not_an_app.yml` (a sketch
 * that says it is not importable) belongs here for good; the five `builder_restricted__*` bare
 * graphs import as workflow apps (docs/decisions.md). Any other entry is a gap still open,
 * and the walk fails when a listed file imports or an unlisted one is refused, so the list stays true.
 */
const REFUSED: Record<string, RegExp> = {
  'minimal_not_an_app.yml': /missing `app` section: this is not a Dify app export \(top-level `nodes` without `data` are not a Dify graph either\)/,
};

let s: TestServer;
let fake: FakeOpenAI;
/** A local upstream for the http-request fixture: `/data.json` serves a JSON object. */
let upstream: Server;
let upstreamUrl = '';
const keys = new Map<string, string>();

beforeAll(async () => {
  fake = await startFakeOpenAI();
  upstream = createServer((req, res) => {
    if (req.url === '/data.json') res.writeHead(200, { 'content-type': 'application/json' }).end('{"key":"value","number":42}');
    else res.writeHead(404, { 'content-type': 'text/plain' }).end('no such thing');
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  // the SSRF guard refuses loopback addresses unless allow-listed
  s = await startServer({ runtime: { providers: openAiCompatibleProviders(fake.baseUrl) }, env: { SSRF_ALLOW_HOSTS: '127.0.0.1' } });
  // python3 code nodes run in Pyodide: its interpreter takes seconds to boot, once per file.
  await s.runtime.codeSandboxReady();
}, 180_000);
afterAll(async () => {
  await s?.close();
  await new Promise((resolve) => upstream?.close(resolve));
  await fake?.close();
});

const read = (f: string) => readFileSync(path.join(DIR, f), 'utf8');
const headers = (key: string) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' });

async function key(file: string): Promise<string> {
  let k = keys.get(file);
  if (!k) {
    k = (await s.importApp(read(file))).apiKey;
    keys.set(file, k);
  }
  return k;
}

async function runWorkflow(file: string, inputs: Record<string, unknown>): Promise<Record<string, unknown>> {
  const r = await fetch(`${s.api}/workflows/run`, { method: 'POST', headers: headers(await key(file)), body: JSON.stringify({ inputs, user: 'conformance' }) });
  expect(r.status).toBe(200);
  return (await r.json()).data;
}

async function chat(file: string, query: string): Promise<{ answer: string; events: Record<string, unknown>[] }> {
  const r = await fetch(`${s.api}/chat-messages`, {
    method: 'POST',
    headers: headers(await key(file)),
    body: JSON.stringify({ inputs: {}, query, response_mode: 'streaming', user: 'conformance' }),
  });
  expect(r.status).toBe(200);
  const events = dataFrames(parseSse(await r.text()));
  const answer = events.filter((e) => e.event === 'message').map((e) => e.answer).join('');
  return { answer, events };
}

describe('Dify DSL conformance (test/fixtures/dify-dsl)', () => {
  const files = readdirSync(DIR).filter((f) => f.endsWith('.yml')).sort();

  it('walks every file: each imports unchanged (any listed in REFUSED must be refused naming the node)', async () => {
    expect(files.length).toBe(34);
    const refused: Record<string, string> = {};
    for (const f of files) {
      try {
        await key(f);
      } catch (err) {
        refused[f] = (err as Error).message;
      }
    }
    process.stdout.write(`[conformance] refused: ${JSON.stringify(refused, null, 1)}\n`);
    expect(Object.keys(refused).sort()).toEqual(Object.keys(REFUSED).sort());
    for (const [f, re] of Object.entries(REFUSED)) expect(refused[f], f).toMatch(re);
  });

  it('simple_passthrough_workflow: outputs exactly {query} for any string', async () => {
    for (const q of ['hello', '   ', '🦊 emoji', 'Привет мир 你好', 'x'.repeat(5000)]) {
      const d = await runWorkflow('simple_passthrough_workflow.yml', { query: q });
      expect(d.status).toBe('succeeded');
      expect(d.outputs).toEqual({ query: q });
    }
  });

  it('conditional_hello_branching_workflow: case-sensitive contains "hello"', async () => {
    for (const q of ['hello world', 'hellohello', ' hello ', 'hello!@#']) expect((await runWorkflow('conditional_hello_branching_workflow.yml', { query: q })).outputs).toEqual({ true: q });
    for (const q of ['Hello world', 'HELLO', 'helo']) expect((await runWorkflow('conditional_hello_branching_workflow.yml', { query: q })).outputs).toEqual({ false: q });
  });

  it('dual_switch_variable_aggregator_workflow: the four switch combinations', async () => {
    for (const [a, b] of [[0, 0], [0, 1], [1, 0], [1, 1]] as const) {
      const d = await runWorkflow('dual_switch_variable_aggregator_workflow.yml', { switch1: a, switch2: b });
      expect(d.outputs).toEqual({ group1: `switch 1 ${a ? 'on' : 'off'}`, group2: `switch 2 ${b ? 'on' : 'off'}` });
    }
  });

  it('increment_loop_with_break_condition_workflow: the loop adds 1 until num ≥ 5', async () => {
    const d = await runWorkflow('increment_loop_with_break_condition_workflow.yml', {});
    expect(d.status).toBe('succeeded');
    expect(d.outputs).toEqual({ num: 5 });
    // 1 start + 1 loop + 4 rounds × (loop-start + assigner) + 1 end
    expect(d.total_steps).toBe(11);
  });

  it('conditional_parallel_code_execution_workflow: python3 code nodes on each branch; nodes that did not run give null', async () => {
    expect((await runWorkflow('conditional_parallel_code_execution_workflow.yml', { switch: 1 })).outputs).toEqual({ 1: 'Code 1', 2: 'Code 2', 3: null });
    expect((await runWorkflow('conditional_parallel_code_execution_workflow.yml', { switch: 0 })).outputs).toEqual({ 1: null, 2: 'Code 2', 3: 'Code 3' });
  });

  it('array_iteration_formatting_workflow: a template per item of the code node\'s list', async () => {
    const d = await runWorkflow('array_iteration_formatting_workflow.yml', {});
    expect(d.status).toBe('succeeded');
    expect(d.outputs).toEqual({ output: ['output: 1', 'output: 2', 'output: 3'] });
  });

  it('iteration_flatten_output_enabled_workflow: per-item pairs flattened into one list', async () => {
    const d = await runWorkflow('iteration_flatten_output_enabled_workflow.yml', {});
    expect(d.status).toBe('succeeded');
    expect(d.outputs).toEqual({ output: [1, 2, 2, 4, 3, 6] });
  });

  it('iteration_flatten_output_enabled_workflow with flatten_output: false keeps the pairs (Dify\'s sibling fixture)', async () => {
    const yml = read('iteration_flatten_output_enabled_workflow.yml').replace('flatten_output: true', 'flatten_output: false');
    expect(yml).not.toBe(read('iteration_flatten_output_enabled_workflow.yml'));
    const { apiKey } = await s.importApp(yml);
    const r = await fetch(`${s.api}/workflows/run`, { method: 'POST', headers: headers(apiKey), body: JSON.stringify({ inputs: {}, user: 'conformance' }) });
    expect((await r.json()).data.outputs).toEqual({ output: [[1, 2], [2, 4], [3, 6]] });
  });

  it('http_request_with_json_tool_workflow: GET the url, json_parse the body (a real local upstream, not a mock)', async () => {
    const d = await runWorkflow('http_request_with_json_tool_workflow.yml', { url: `${upstreamUrl}/data.json` });
    expect(d.status).toBe('succeeded');
    expect(d.outputs).toEqual({ status_code: 200, parsed_data: { key: 'value', number: 42 } });
    const missing = await runWorkflow('http_request_with_json_tool_workflow.yml', { url: `${upstreamUrl}/nope` });
    expect(missing).toMatchObject({ status: 'failed', error: expect.stringMatching(/^json_parse: invalid JSON/) });
  });

  it('chatflow_time_tool_static_output_workflow: the time tool runs, the answer is "hello, dify!"', async () => {
    const { answer, events } = await chat('chatflow_time_tool_static_output_workflow.yml', 'anything');
    expect(answer).toBe('hello, dify!');
    const tool = events.find((e) => e.event === 'node_finished' && (e.data as { node_id: string }).node_id === '1754336729904')!.data as Record<string, unknown>;
    expect(tool.status).toBe('succeeded');
    // `%Y-%m-%d %H:%M:%S` in UTC, from the server's clock
    expect((tool.outputs as { text: string }).text).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
    expect(tool.outputs).toMatchObject({ files: [], json: [] });
  });

  it('search_dify_from_2023_to_2025: the marketplace perplexity plugin imports, and the run fails naming the node and the plugin', async () => {
    const { events } = await chat('search_dify_from_2023_to_2025.yml', 'search');
    const failed = events.find((e) => e.event === 'node_finished' && (e.data as { node_id: string }).node_id === '1754979561786')!.data as Record<string, unknown>;
    expect(failed.status).toBe('failed');
    expect(failed.error).toMatch(/^tool node "Perplexity Search" \(1754979561786\): tool "perplexity" of provider "langgenius\/perplexity\/perplexity": the marketplace plugin "langgenius\/perplexity" is not available here .*replace the node with one of the built-in providers: .*time/);
    expect(events.find((e) => e.event === 'workflow_finished')!.data).toMatchObject({ status: 'failed' });
    // … and the import lists the plugin as a warning (what `app import --json` and `app check` print)
    const app = await s.runtime.apps.importDsl(read('search_dify_from_2023_to_2025.yml'));
    const warnings = await s.runtime.appWarnings(app);
    expect(warnings).toEqual([
      expect.objectContaining({ node_id: '1754979561786', node_type: 'tool', setting: null, message: expect.stringMatching(/^node 1754979561786 \(tool\): .*langgenius\/perplexity/) }),
    ]);
  });

  it('basic_llm_chat_workflow: the End output is the LLM text; a failing LLM fails the run', async () => {
    fake.behaviour = { reply: 'mocked answer' };
    const d = await runWorkflow('basic_llm_chat_workflow.yml', { query: 'What is 2+2?' });
    expect(d).toMatchObject({ status: 'succeeded', outputs: { answer: 'mocked answer' } });
    expect(fake.requests.at(-1)!.body.messages).toEqual([
      { role: 'system', content: 'You are a helpful assistant.' },
      { role: 'user', content: 'What is 2+2?' },
    ]);
    fake.behaviour = { failStatus: 500 };
    const failed = await runWorkflow('basic_llm_chat_workflow.yml', { query: 'x' });
    expect(failed.status).toBe('failed');
    expect(failed.outputs).toBeNull();
    fake.behaviour = {};
  });

  it('basic_chatflow: the answer is the LLM text, with the node events in order', async () => {
    fake.behaviour = { reply: 'mocked llm response' };
    const { answer, events } = await chat('basic_chatflow.yml', 'hi');
    expect(answer).toBe('mocked llm response');
    const seq = events.filter((e) => String(e.event).startsWith('node_')).map((e) => `${e.event}:${(e.data as { node_id: string }).node_id}`);
    expect(seq).toEqual(['node_started:1755189262236', 'node_finished:1755189262236', 'node_started:llm', 'node_finished:llm', 'node_started:answer', 'node_finished:answer']);
    expect(events.map((e) => e.event).slice(-2)).toEqual(['message_end', 'workflow_finished']);
  });

  it('test-answer-order: both answers in graph order', async () => {
    fake.behaviour = { reply: 'mocked llm text' };
    const { answer } = await chat('test-answer-order.yml', '');
    expect(answer).toBe('--- answer 1 ---\n\nfoo\n--- answer 2 ---\n\nmocked llm text\n');
  });

  it('test_complex_branch: if-else and LLM in parallel, answers joined', async () => {
    fake.behaviour = { reply: 'Mocked response for greeting' };
    const yes = await chat('test_complex_branch.yml', 'hello there');
    expect(yes.answer).toBe("contains 'hello'Mocked response for greeting");
    const started = yes.events.filter((e) => e.event === 'node_started').map((e) => (e.data as { node_type: string }).node_type);
    expect(started).toContain('if-else');
    expect(started).toContain('llm');
    const no = await chat('test_complex_branch.yml', 'good morning');
    expect(no.answer).toBe('Mocked response for greeting');
  });
  it('builder_restricted bare graphs import as workflow apps and run (scalar, template, code)', async () => {
    // Dify: scalar with {"text": "真实 native"} → {"out": "真实 native"}, only start and end run
    const scalar = await runWorkflow('builder_restricted__scalar.yml', { text: '真实 native' });
    expect(scalar).toMatchObject({ status: 'succeeded', outputs: { out: '真实 native' }, total_steps: 2 });
    // no expected value in Dify; what the graph says: `Hello, {{ name }}!` and n + 1
    expect((await runWorkflow('builder_restricted__template_greeting.yml', { name: 'Ada' })).outputs).toEqual({ out: 'Hello, Ada!' });
    expect((await runWorkflow('builder_restricted__code_increment.yml', { n: 41 })).outputs).toEqual({ out: 42 });
  });

  it('answer_end_with_text: prefix, the query, suffix as three chunks', async () => {
    // Dify: query "Hello, AI!" → "prefixHello, AI!suffix"
    const { answer, events } = await chat('answer_end_with_text.yml', 'Hello, AI!');
    expect(answer).toBe('prefixHello, AI!suffix');
    expect(events.filter((e) => e.event === 'message').map((e) => e.answer)).toEqual(['prefix', 'Hello, AI!', 'suffix']);
  });

  it('end_node_without_value_type_field_workflow (DSL 0.5.0): the End output without value_type passes the query through', async () => {
    // Dify: {"query": "test query"} → {"query": "test query"}
    const d = await runWorkflow('end_node_without_value_type_field_workflow.yml', { query: 'test query' });
    expect(d).toMatchObject({ status: 'succeeded', outputs: { query: 'test query' } });
  });

  it('iteration_contains_answer: the answer inside the iteration streams per item, then "done"', async () => {
    // Dify: query "hi" → "apple\nbanana\ndone", "apple\nbanana\n" streamed from inside the iteration
    const { answer, events } = await chat('iteration_contains_answer.yml', 'hi');
    expect(answer).toBe('apple\nbanana\ndone');
    const done = events.findIndex((e) => e.event === 'iteration_completed');
    const inside = events.slice(0, done).filter((e) => e.event === 'message').map((e) => e.answer).join('');
    expect(inside).toBe('apple\nbanana\n');
  });

  it('loop_contains_answer: the answer inside the loop streams per round, then the query and the count', async () => {
    // Dify: query "1" → "1\n2\n1 + 2"; query "hi" → "1\n2\nhi + 2"
    expect((await chat('loop_contains_answer.yml', '1')).answer).toBe('1\n2\n1 + 2');
    const hi = await chat('loop_contains_answer.yml', 'hi');
    expect(hi.answer).toBe('1\n2\nhi + 2');
    const end = hi.events.find((e) => e.event === 'message_end')!;
    expect(end).toBeDefined();
  });

  it('parallel_iteration_formatting_workflow: item order on five runs', async () => {
    // Dify: {"output": ["output: 1", "output: 2", "output: 3"]} in item order, the same on five runs
    for (let i = 0; i < 5; i++) {
      const d = await runWorkflow('parallel_iteration_formatting_workflow.yml', {});
      expect(d).toMatchObject({ status: 'succeeded', outputs: { output: ['output: 1', 'output: 2', 'output: 3'] } });
    }
  });

  it('minimal_non_uuid_conversation_variable: a conversation variable with a non-UUID id is read', async () => {
    // No expected value in Dify. The answer is conversation default "-", a space, then the template's
    // output; the template is on a branch that is not upstream of the answer, so whether it has run
    // when the answer renders is scheduling, not contract: only the variable's value is asserted.
    const { answer } = await chat('minimal_non_uuid_conversation_variable.yml', 'hello there');
    expect(['- ', '- produced']).toContain(answer);
    expect((await chat('minimal_non_uuid_conversation_variable.yml', 'bye')).answer).toBe('- ');
  });

  it('test_streaming_conversation_variables: the v2 assigner overwrites with the query', async () => {
    // Dify: "Hello, this is my test query" → {"answer": "Hello, this is my test query"}
    expect((await chat('test_streaming_conversation_variables.yml', 'Hello, this is my test query')).answer).toBe('Hello, this is my test query');
  });

  it('test_streaming_conversation_variables_v1_overwrite (assigner v1, DSL 0.5.0): the answer waits for the assignment', async () => {
    // Dify: "overwrite-value" → "Current Value Of `conv_var` is:overwrite-value", and every chunk
    // for the selector conversation.conv_var is "overwrite-value" (never the default)
    const { answer, events } = await chat('test_streaming_conversation_variables_v1_overwrite.yml', 'overwrite-value');
    expect(answer).toBe('Current Value Of `conv_var` is:overwrite-value');
    const chunks = events.filter((e) => e.event === 'message').map((e) => e.answer as string);
    expect(chunks).not.toContain('default');
    expect(chunks.at(-1)).toBe('overwrite-value');
  });

  it('update-conversation-variable-in-iteration: the assigner inside the iteration updates the conversation variable', async () => {
    // Dify: "ensure conversation variable syncs" → {"answer": "ensure conversation variable syncs"}
    expect((await chat('update-conversation-variable-in-iteration.yml', 'ensure conversation variable syncs')).answer).toBe('ensure conversation variable syncs');
  });

  it('multilingual_parallel_llm_streaming_workflow: template order, every LLM 2 chunk before any LLM 1 chunk', async () => {
    // Dify: LLM 1 (English) streams "Hello, I am an AI assistant.", LLM 2 (Chinese) "你好，我是AI助手。";
    // the answer is "你好，我是AI助手。Hello, I am an AI assistant." (template order, not finishing order)
    fake.behaviour = { chunkSize: 3, reply: (body) => (JSON.stringify(body.messages).includes('Always speak English.') ? 'Hello, I am an AI assistant.' : '你好，我是AI助手。') };
    const { answer, events } = await chat('multilingual_parallel_llm_streaming_workflow.yml', 'Tell me about yourself');
    expect(answer).toBe('你好，我是AI助手。Hello, I am an AI assistant.');
    const msgs = events.filter((e) => e.event === 'message').map((e) => e.answer as string);
    const zh = '你好，我是AI助手。';
    let before = '';
    for (const m of msgs) {
      if (before.length >= zh.length) break;
      before += m;
    }
    expect(before).toBe(zh);
    // Dify also streams the LLM chunks live, before the Answer node starts; Dovetail streams an LLM
    // live only into an answer with that one incoming edge, so here the text comes when the Answer
    // runs (docs/compatibility.md, "Answers joined from parallel LLMs").
    fake.behaviour = {};
  });

  it('response_stream_filter_issue_170_workflow: the answer names the later LLM first', async () => {
    // Dify: llm → "Quiet Night Thought", dufu → "Spring View"; stripped answer
    // "# Du Fu\n\nSpring View\n\n# Li Bai\n\nQuiet Night Thought"
    fake.behaviour = { reply: (body) => (JSON.stringify(body.messages).includes('Li Bai') ? 'Quiet Night Thought' : 'Spring View') };
    const { answer } = await chat('response_stream_filter_issue_170_workflow.yml', '1');
    expect(answer.trim()).toBe('# Du Fu\n\nSpring View\n\n# Li Bai\n\nQuiet Night Thought');
    fake.behaviour = {};
  });

  it('knowledge_retrieval_v2_workflow: imports with --dataset mapping its control space to a dataset here, and retrieves from it', async () => {
    // Dify's test only validates the node's data; here the v2 node runs the knowledge-retrieval search
    const kb = kbClient(s, await s.datasetKey());
    const ds = await kb.dataset('Handbook v2');
    const r = await kb.call('POST', `/datasets/${ds}/document/create-by-text`, { name: 'Handbook', text: 'The handbook says vacation is twenty days.', indexing_technique: 'economy', process_rule: { mode: 'automatic' } });
    expect(r.status).toBe(200);
    expect((await kb.settle(ds, r.body.batch)).indexing_status).toBe('completed');
    const app = await s.runtime.apps.importDsl(read('knowledge_retrieval_v2_workflow.yml'), { datasets: new Map([['019f0000-0000-7000-8000-000000000001', ds]]) });
    const warnings = await s.runtime.appWarnings(app);
    expect(warnings).toEqual([expect.objectContaining({ node_id: 'retrieval-v2', node_type: 'knowledge-retrieval-v2', part: 'metadata_filters (node_kinds, tags)' })]);
    const { apiKey } = await s.runtime.keys.create('app', app.workspaceId, app.id);
    const res = await fetch(`${s.api}/workflows/run`, { method: 'POST', headers: headers(apiKey), body: JSON.stringify({ inputs: { query: 'vacation' }, user: 'conformance' }) });
    const d = (await res.json()).data;
    expect(d.status).toBe('succeeded');
    expect(d.outputs.evidence).toHaveLength(1);
    expect(d.outputs.evidence[0]).toMatchObject({ content: 'The handbook says vacation is twenty days.', metadata: { dataset_id: ds, _source: 'knowledge' } });
    // imported unmapped, it warns naming the dataset and the option, and the run fails naming them too
    const raw = await s.runtime.apps.importDsl(read('knowledge_retrieval_v2_workflow.yml'));
    expect((await s.runtime.appWarnings(raw)).map((w) => w.setting)).toContain('--dataset 019f0000-0000-7000-8000-000000000001=NEW_ID');
  });
});
