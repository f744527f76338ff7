import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.js';
import { PROJECT_ROOT } from '../helpers/fixtures.js';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { openAiCompatibleProviders } from '../helpers/openai-providers.js';
import { schemaErrors } from '../helpers/openapi.js';
import { dataFrames, parseSse } from '../helpers/sse.js';
import { endNode, startNode, templateNode, workflowDsl, type NodeSpec } from '../helpers/workflow-dsl.js';

let s: TestServer;
let fake: FakeOpenAI;

beforeAll(async () => {
  fake = await startFakeOpenAI();
  s = await startServer({ runtime: { providers: openAiCompatibleProviders(fake.baseUrl) } });
});
afterAll(async () => {
  await s?.close();
  await fake?.close();
});

const h = (k: string) => ({ authorization: `Bearer ${k}`, 'content-type': 'application/json' });
const post = (k: string, p: string, body: Record<string, unknown>) => fetch(`${s.api}${p}`, { method: 'POST', headers: h(k), body: JSON.stringify({ user: 'u1', ...body }) });

type Msg = { role: string; content: unknown };
const lastUser = (b: Record<string, unknown>) => {
  const m = [...(b.messages as Msg[])].reverse().find((x) => x.role === 'user')!;
  return typeof m.content === 'string' ? m.content : (m.content as { text?: string }[]).map((p) => p.text ?? '').join('');
};
/** The fake model answers as a classifier would: the class whose keyword the query holds. */
const answerFor = (ids: Record<string, string>) => (b: Record<string, unknown>) => {
  const q = lastUser(b);
  const hit = Object.entries(ids).find(([word]) => q.includes(word));
  return hit ? '```json\n{"keywords": ["x"], "category_id": "' + hit[1] + '", "category_name": "whatever"}\n```' : '{"keywords": [], "category_id": "none-of-them", "category_name": "?"}';
};

const CLASSES = [
  { id: 'c-billing', name: 'Billing' },
  { id: 'c-tech', name: 'Technical' },
];
const classifier = (extra: Record<string, unknown> = {}): NodeSpec => ({
  id: 'qc',
  type: 'question-classifier',
  model: { provider: 'openai', name: 'gpt-test', mode: 'chat', completion_params: {} },
  query_variable_selector: ['start', 'q'],
  classes: CLASSES,
  instruction: 'Tier: {{#start.tier#}}',
  ...extra,
});
const branchingWorkflow = (extra: Record<string, unknown> = {}) =>
  workflowDsl(
    [
      startNode([{ variable: 'q' }, { variable: 'tier', required: false }]),
      classifier(extra),
      templateNode('billing', 'billing:{{ n }}', { n: ['qc', 'class_name'] }),
      templateNode('tech', 'tech:{{ n }}', { n: ['qc', 'class_id'] }),
      endNode({ out: ['billing', 'output'] }, 'end_billing'),
      endNode({ out: ['tech', 'output'] }, 'end_tech'),
    ],
    [
      ['start', 'qc'],
      ['qc', 'billing', 'c-billing'],
      ['qc', 'tech', 'c-tech'],
      ['billing', 'end_billing'],
      ['tech', 'end_tech'],
    ],
  );

describe('question-classifier node', () => {
  let key: string;
  beforeAll(async () => {
    ({ apiKey: key } = await s.importApp(branchingWorkflow()));
  });

  it('follows the edge of the class the model names, each class in turn', async () => {
    fake.behaviour = { reply: answerFor({ refund: 'c-billing', crash: 'c-tech' }) };
    const billing = await (await post(key, '/workflows/run', { inputs: { q: 'I want a refund', tier: 'gold' } })).json();
    expect(billing.data).toMatchObject({ status: 'succeeded', outputs: { out: 'billing:Billing' } });
    const tech = await (await post(key, '/workflows/run', { inputs: { q: 'the app crash again', tier: 'gold' } })).json();
    expect(tech.data).toMatchObject({ status: 'succeeded', outputs: { out: 'tech:c-tech' } });
    expect(tech.data.total_tokens).toBeGreaterThan(0);
  });

  it("sends Dify's classifier prompt and reports it, the class and the usage in node_finished", async () => {
    fake.behaviour = { reply: answerFor({ refund: 'c-billing' }) };
    const res = await post(key, '/workflows/run', { inputs: { q: 'Where is my refund?', tier: 'gold' }, response_mode: 'streaming' });
    const events = dataFrames(parseSse(await res.text()));
    for (const e of events) expect(schemaErrors('ChunkWorkflowEvent', e), String(e.event)).toEqual([]);
    const ran = events.filter((e) => e.event === 'node_finished').map((e) => (e.data as { node_id: string }).node_id);
    expect(ran).toEqual(['start', 'qc', 'billing', 'end_billing']);
    expect(events.some((e) => e.event === 'text_chunk')).toBe(false);
    const done = events.find((e) => e.event === 'node_finished' && (e.data as { node_id: string }).node_id === 'qc')!.data as Record<string, any>;
    expect(done.node_type).toBe('question-classifier');
    expect(done.inputs).toEqual({ query: 'Where is my refund?', model_provider: 'openai', model_name: 'gpt-test' });
    expect(Object.keys(done.outputs)).toEqual(['class_name', 'class_label', 'class_id', 'usage']);
    expect(done.outputs).toMatchObject({ class_name: 'Billing', class_label: 'CLASS 1', class_id: 'c-billing' });
    expect(done.outputs.usage).toMatchObject({ prompt_tokens: expect.any(Number), completion_tokens: expect.any(Number), currency: 'USD' });
    expect(done.outputs.usage.total_tokens).toBe(done.outputs.usage.prompt_tokens + done.outputs.usage.completion_tokens);
    expect(done.execution_metadata).toMatchObject({ total_tokens: done.outputs.usage.total_tokens, total_price: 0, currency: 'USD' });
    expect(done.process_data).toMatchObject({ model_mode: 'chat', finish_reason: 'stop', model_provider: 'openai', model_name: 'gpt-test' });
    const prompts = done.process_data.prompts as { role: string; text: string; files: unknown[] }[];
    expect(prompts.map((p) => p.role)).toEqual(['system', 'user', 'assistant', 'user', 'assistant', 'user']);
    // Dify's own text (graphon template_prompts.py), character for character.
    expect(prompts[0]!.text.startsWith("\n### Job Description',\nYou are a text classification engine")).toBe(true);
    expect(prompts[0]!.text.endsWith('<histories>\n\n</histories>\n')).toBe(true);
    expect(prompts[1]!.text).toContain('{"category_id":"f5660049-284f-41a7-b301-fd24176a711c","category_name":"Customer Service"}');
    expect(prompts[2]!.text).toBe(
      '\n```json\n    {"keywords": ["recently", "great experience", "company", "service", "prompt", "staff", "friendly"],\n    "category_id": "f5660049-284f-41a7-b301-fd24176a711c",\n    "category_name": "Customer Service"}\n```\n',
    );
    expect(prompts[5]!.text).toBe(
      '\n    {"input_text": ["Where is my refund?"],\n    "categories": [{"category_id": "c-billing", "category_name": "Billing"}, {"category_id": "c-tech", "category_name": "Technical"}],\n    "classification_instructions": ["Tier: gold"]}\n',
    );
    for (const p of prompts) expect(p.files).toEqual([]);
    // What went upstream is what the event shows.
    const sent = fake.requests.at(-1)!.body.messages as Msg[];
    expect(sent).toEqual(prompts.map((p) => ({ role: p.role, content: p.text })));
  });

  it('an answer that names no class takes the first class; an answer without JSON fails the node as Dify', async () => {
    fake.behaviour = { reply: '{"keywords": [], "category_id": "c-unknown", "category_name": "Nope"}' };
    const unknown = await (await post(key, '/workflows/run', { inputs: { q: 'hello' } })).json();
    expect(unknown.data).toMatchObject({ status: 'succeeded', outputs: { out: 'billing:Billing' } });
    fake.behaviour = { reply: '<think>which one?</think>{"keywords": []}' };
    const partial = await (await post(key, '/workflows/run', { inputs: { q: 'hello' } })).json();
    expect(partial.data).toMatchObject({ status: 'succeeded', outputs: { out: 'billing:Billing' } });
    fake.behaviour = { reply: 'I think it is about technology.' };
    const prose = await (await post(key, '/workflows/run', { inputs: { q: 'hello' } })).json();
    expect(prose.data.status).toBe('failed');
    expect(prose.data.error).toContain('could not find json block in the output.');
  });

  it('vision: image files of the run go before the text of the last user message', async () => {
    const { apiKey } = await s.importApp(branchingWorkflow({ vision: { enabled: true, configs: { variable_selector: ['sys', 'files'], detail: 'low' } } }));
    fake.behaviour = { reply: answerFor({ crash: 'c-tech' }) };
    const files = [{ type: 'image', transfer_method: 'remote_url', url: 'https://example.com/screenshot-of-the-crash.png' }];
    const res = await (await post(apiKey, '/workflows/run', { inputs: { q: 'it crash' }, files })).json();
    expect(res.data).toMatchObject({ status: 'succeeded', outputs: { out: 'tech:c-tech' } });
    const last = (fake.requests.at(-1)!.body.messages as Msg[]).at(-1)!;
    expect(last.role).toBe('user');
    expect(last.content).toEqual([
      { type: 'image_url', image_url: { url: 'https://example.com/screenshot-of-the-crash.png', detail: 'low' } },
      { type: 'text', text: expect.stringContaining('"input_text": ["it crash"]') },
    ]);
  });

  it('completion-mode models get the one completion prompt', async () => {
    const { apiKey } = await s.importApp(branchingWorkflow({ model: { provider: 'openai', name: 'gpt-instruct', mode: 'completion', completion_params: {} } }));
    fake.behaviour = { reply: '{"category_id": "c-tech", "category_name": "Technical"}' };
    const res = await (await post(apiKey, '/workflows/run', { inputs: { q: 'crash', tier: 't' } })).json();
    expect(res.data).toMatchObject({ status: 'succeeded', outputs: { out: 'tech:c-tech' } });
    const req = fake.requests.at(-1)!;
    expect(req.path).toBe('/v1/completions');
    expect(req.body.prompt).toContain('### User Input\n{"input_text" : ["crash"], "categories" : [{"category_id": "c-billing", "category_name": "Billing"}, {"category_id": "c-tech", "category_name": "Technical"}],"classification_instruction" : ["Tier: t"]}\n### Assistant Output\n');
  });

  it('import refuses a classifier without classes or query selector, naming the field', async () => {
    for (const [extra, field] of [
      [{ classes: [] }, 'classes'],
      [{ classes: [{ name: 'no id' }] }, 'classes[0].id'],
      [{ query_variable_selector: 'q' }, 'query_variable_selector'],
    ] as const) {
      await expect(s.importApp(branchingWorkflow(extra))).rejects.toThrow(field);
    }
  });
});

describe('question-classifier in a chatflow exported by Dify', () => {
  const dsl = readFileSync(path.join(PROJECT_ROOT, 'test', 'fixtures', 'dsl', 'question-classifier-chatflow.yml'), 'utf8');

  it('routes each turn by class and puts the conversation so far into the prompt (memory)', async () => {
    const { apiKey } = await s.importApp(dsl);
    fake.behaviour = { reply: answerFor({ receipt: '1', broken: '2' }) };
    const first = await (await post(apiKey, '/chat-messages', { inputs: {}, query: 'Where is my receipt?' })).json();
    expect(first.answer).toBe('Billing will help you (Billing, invoices and refunds).');
    const firstPrompt = (fake.requests.at(-1)!.body.messages as Msg[])[0]!.content as string;
    expect(firstPrompt).toContain('<histories>\n\n</histories>');
    const res = await post(apiKey, '/chat-messages', { inputs: {}, query: 'The app is broken', conversation_id: first.conversation_id, response_mode: 'streaming' });
    const events = dataFrames(parseSse(await res.text()));
    for (const e of events) expect(schemaErrors('ChunkChatEvent', e), String(e.event)).toEqual([]);
    expect(events.filter((e) => e.event === 'message').map((e) => e.answer).join('')).toBe('Support will help you (2).');
    const sent = fake.requests.at(-1)!.body.messages as Msg[];
    expect(sent[0]!.content).toContain('<histories>\nHuman: Where is my receipt?\nAssistant: Billing will help you (Billing, invoices and refunds).\n</histories>');
    expect(sent.at(-1)!.content).toContain('"input_text": ["The app is broken"]');
    expect(sent.at(-1)!.content).toContain('"classification_instructions": ["The customer writes from u1; a question about money is billing."]');
  });
});
