import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.js';
import { PROJECT_ROOT } from '../helpers/fixtures.js';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { openAiCompatibleProviders } from '../helpers/openai-providers.js';
import { schemaErrors } from '../helpers/openapi.js';
import { dataFrames, parseSse } from '../helpers/sse.js';
import { endNode, startNode, workflowDsl, type NodeSpec } from '../helpers/workflow-dsl.js';
import { classifierExtractorChatflow } from '../helpers/llm-nodes-apps.js';

let s: TestServer;
let fake: FakeOpenAI;
let orderKey: string;

beforeAll(async () => {
  fake = await startFakeOpenAI();
  s = await startServer({ runtime: { providers: openAiCompatibleProviders(fake.baseUrl) } });
  ({ apiKey: orderKey } = await s.importApp(readFileSync(path.join(PROJECT_ROOT, 'test', 'fixtures', 'dsl', 'parameter-extractor-workflow.yml'), 'utf8')));
});
afterAll(async () => {
  await s?.close();
  await fake?.close();
});

const h = (k: string) => ({ authorization: `Bearer ${k}`, 'content-type': 'application/json' });
const post = (k: string, p: string, body: Record<string, unknown>) => fetch(`${s.api}${p}`, { method: 'POST', headers: h(k), body: JSON.stringify({ user: 'u1', ...body }) });
const run = async (args: Record<string, unknown> | string, message = 'Two red and blue shirts, size 38 and 40, express, as a gift') => {
  fake.behaviour = { toolCalls: [{ name: 'extract_parameters', arguments: typeof args === 'string' ? args : JSON.stringify(args) }] };
  return (await post(orderKey, '/workflows/run', { inputs: { message, shop: 'Oslo' } })).json();
};
type Msg = { role: string; content: unknown; tool_calls?: unknown; tool_call_id?: string };

const FULL = { product: 'shirt', quantity: 2, shipping: 'express', gift: true, colours: ['red', 'blue'], sizes: [38, 40], extras: [{ name: 'box', price: 2.5 }] };
const SCHEMA = {
  type: 'object',
  properties: {
    product: { description: 'What the customer orders', type: 'string' },
    quantity: { description: 'How many', type: 'number' },
    shipping: { description: 'Shipping speed', type: 'string', enum: ['standard', 'express'] },
    gift: { description: 'Whether it is a gift', type: 'boolean' },
    colours: { description: 'Colours wanted', type: 'array', items: { type: 'string' } },
    sizes: { description: 'Sizes wanted', type: 'array', items: { type: 'number' } },
    extras: { description: 'Extra items, each with a name and a price', type: 'array', items: { type: 'object' } },
  },
  required: ['product', 'quantity'],
};

describe('parameter-extractor, function_call mode (a Dify export)', () => {
  it('offers the extract_parameters function built from the parameters and outputs what the call gives', async () => {
    const r = await run(FULL);
    expect(r.data).toMatchObject({ status: 'succeeded', outputs: { ...FULL, ok: 1, reason: null } });
    const body = fake.requests.at(-1)!.body;
    expect(body.tools).toEqual([{ type: 'function', function: { name: 'extract_parameters', description: 'Extract parameters from the natural language text', parameters: SCHEMA } }]);
    expect(body).not.toHaveProperty('tool_choice');
    const sent = body.messages as Msg[];
    expect(sent.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool', 'assistant', 'user', 'assistant', 'tool', 'assistant', 'user']);
    expect(sent[0]!.content).toContain('Always call the `extract_parameters` function');
    expect(sent[0]!.content).toContain('<instruction>\nOrders are for the shop Oslo.\n</instruction>');
    expect(sent[1]!.content).toBe('What is the weather today in SF?');
    expect(sent[2]!.tool_calls).toEqual([{ id: expect.stringMatching(/^[0-9a-f]{32}$/), type: 'function', function: { name: 'extract_parameters', arguments: '{"location": "San Francisco"}' } }]);
    expect(sent[3]).toEqual({ role: 'tool', content: 'Great! You have called the function with the correct parameters.', tool_call_id: (sent[2]!.tool_calls as { id: string }[])[0]!.id });
    expect(sent[4]!.content).toBe("I have extracted the parameters, let's move on.");
    expect(sent[9]!.content).toBe(
      'extract structured information from context inside <context></context> XML tags by calling the function extract_parameters with the correct parameters with structure inside <structure></structure> XML tags.\n' +
        '<context>\nTwo red and blue shirts, size 38 and 40, express, as a gift\n</context>\n\n<structure>\n' +
        JSON.stringify(SCHEMA).replace(/":/g, '": ').replace(/,"/g, ', "').replace(/","/g, '", "') +
        '\n</structure>',
    );
  });

  it('node events: inputs, process_data (prompts with tool calls, function, tool_call, llm_text), outputs, usage', async () => {
    fake.behaviour = { toolCalls: [{ name: 'extract_parameters', arguments: JSON.stringify(FULL) }] };
    const res = await post(orderKey, '/workflows/run', { inputs: { message: 'shirts', shop: 'Oslo' }, response_mode: 'streaming' });
    const events = dataFrames(parseSse(await res.text()));
    for (const e of events) expect(schemaErrors('ChunkWorkflowEvent', e), String(e.event)).toEqual([]);
    const done = events.find((e) => e.event === 'node_finished' && (e.data as { node_type: string }).node_type === 'parameter-extractor')!.data as Record<string, any>;
    expect(done.status).toBe('succeeded');
    expect(done.inputs).toMatchObject({ query: 'shirts', files: [], instruction: 'Orders are for the shop {{#1725000000001.shop#}}.', model_provider: 'langgenius/openai/openai', model_name: 'gpt-4o-mini' });
    expect(done.inputs.parameters[2]).toEqual({ name: 'shipping', type: 'string', options: ['standard', 'express'], description: 'Shipping speed', required: false });
    expect(done.inputs.parameters[3].type).toBe('boolean');
    expect(Object.keys(done.outputs)).toEqual(['__is_success', '__reason', '__usage', 'product', 'quantity', 'shipping', 'gift', 'colours', 'sizes', 'extras']);
    expect(done.outputs.__usage.total_tokens).toBeGreaterThan(0);
    expect(done.execution_metadata).toMatchObject({ total_tokens: done.outputs.__usage.total_tokens, currency: 'USD' });
    expect(done.process_data).toMatchObject({
      model_mode: 'chat',
      function: { name: 'extract_parameters', description: 'Extract parameters from the natural language text', parameters: SCHEMA },
      tool_call: { id: expect.any(String), type: 'function', function: { name: 'extract_parameters', arguments: JSON.stringify(FULL) } },
      llm_text: '',
    });
    const prompts = done.process_data.prompts as { role: string; text: string; tool_calls?: unknown[] }[];
    expect(prompts.map((p) => p.role)).toEqual(['system', 'user', 'assistant', 'tool', 'assistant', 'user', 'assistant', 'tool', 'assistant', 'user']);
    expect(prompts[2]!.tool_calls).toHaveLength(1);
    expect(prompts[1]).not.toHaveProperty('tool_calls');
  });

  it("coerces as Dify: a number as text becomes a number, but the answer is marked not successful with Dify's reason", async () => {
    const r = await run({ ...FULL, quantity: '3', gift: 1, sizes: [38, 'x', true] });
    expect(r.data.outputs).toMatchObject({ quantity: 3, gift: true, sizes: [38, 1], ok: 0 });
    expect(r.data.outputs.reason).toBe("Invalid value for parameter quantity, expected segment type: number, actual_type: string, python_type: <class 'str'>, value: 3");
  });

  it('a missing required parameter, an extra one, a bad select value and unreadable arguments', async () => {
    const { quantity, ...noQuantity } = FULL;
    void quantity;
    const missing = await run(noQuantity);
    expect(missing.data.outputs).toMatchObject({ ok: 0, reason: 'Invalid number of parameters', quantity: 0, product: 'shirt' });
    const renamed = await run({ ...noQuantity, qty: 2 });
    expect(renamed.data.outputs).toMatchObject({ ok: 0, reason: 'Parameter quantity is required' });
    const select = await run({ ...FULL, shipping: 'overnight' });
    expect(select.data.outputs).toMatchObject({ ok: 0, reason: 'Invalid `select` value for parameter shipping', shipping: 'overnight' });
    const optionalNull = await run({ ...FULL, gift: null });
    expect(optionalNull.data.outputs).toMatchObject({ ok: 0, gift: false, reason: "Invalid value for parameter gift, expected segment type: boolean, actual_type: none, python_type: <class 'NoneType'>, value: None" });
    const garbage = await run('not json at all');
    expect(garbage.data.status).toBe('succeeded');
    expect(garbage.data.outputs).toMatchObject({ ok: 0, reason: 'Invalid number of parameters', product: '', quantity: 0, shipping: '', gift: false, colours: [], sizes: [], extras: [] });
    const wrapped = await run('Sure: ' + JSON.stringify(FULL) + ' done');
    expect(wrapped.data.outputs).toMatchObject({ ...FULL, ok: 1 });
  });
});

const extractor = (extra: Record<string, unknown> = {}): NodeSpec => ({
  id: 'pe',
  type: 'parameter-extractor',
  model: { provider: 'openai', name: 'gpt-test', mode: 'chat', completion_params: {} },
  query: ['start', 'text'],
  reasoning_mode: 'prompt',
  instruction: 'Names are in Norwegian.',
  parameters: [
    { name: 'city', type: 'string', description: 'the city', required: true },
    { name: 'days', type: 'number', description: 'how many days', required: false },
  ],
  ...extra,
});
const promptWorkflow = (extra: Record<string, unknown> = {}) =>
  workflowDsl(
    [startNode([{ variable: 'text' }]), extractor(extra), endNode({ city: ['pe', 'city'], days: ['pe', 'days'], ok: ['pe', '__is_success'], reason: ['pe', '__reason'] })],
    [
      ['start', 'pe'],
      ['pe', 'end'],
    ],
  );

describe('parameter-extractor, prompt mode', () => {
  let key: string;
  beforeAll(async () => {
    ({ apiKey: key } = await s.importApp(promptWorkflow()));
  });

  it("sends Dify's JSON prompt with its two examples and reads the JSON out of the answer's text", async () => {
    fake.behaviour = { reply: 'Here you go:\n```json\n{"city": "Bergen", "days": "4"}\n```' };
    const r = await (await post(key, '/workflows/run', { inputs: { text: 'Four days in Bergen' } })).json();
    expect(r.data.outputs).toMatchObject({ city: 'Bergen', days: 4, ok: 0 });
    fake.behaviour = { reply: '{"city": "Bergen", "days": 4}' };
    const ok = await (await post(key, '/workflows/run', { inputs: { text: 'Four days in Bergen' } })).json();
    expect(ok.data.outputs).toEqual({ city: 'Bergen', days: 4, ok: 1, reason: null });
    const body = fake.requests.at(-1)!.body;
    expect(body).not.toHaveProperty('tools');
    const sent = body.messages as Msg[];
    expect(sent.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'user', 'assistant', 'user']);
    expect(sent[0]!.content).toBe(
      'You should always follow the instructions and output a valid JSON object.\nThe structure of the JSON object you can found in the instructions.\n\n### Memory\nHere are the chat histories between human and assistant, inside <histories></histories> XML tags.\n<histories>\n\n</histories>\n\n### Instructions:\nSome extra information are provided below, you should always follow the instructions as possible as I can.\n<instructions>\nNames are in Norwegian.\n</instructions>',
    );
    expect(sent[2]!.content).toBe('{"location": "San Francisco"}');
    expect(sent[5]!.content).toBe(
      '### Structure\nHere is the structure of the JSON object, you should always follow the structure.\n<structure>\n{"type": "object", "properties": {"city": {"description": "the city", "type": "string"}, "days": {"description": "how many days", "type": "number"}}, "required": ["city"]}\n</structure>\n\n### Text to be converted to JSON\nInside <text></text> XML tags, there is a text that you should convert to a JSON object.\n<text>\nFour days in Bergen\n</text>',
    );
  });

  it('an answer without JSON gives the empty result and Dify\'s reason', async () => {
    fake.behaviour = { reply: 'I cannot tell.' };
    const r = await (await post(key, '/workflows/run', { inputs: { text: 'hmm' } })).json();
    expect(r.data.outputs).toEqual({ city: '', days: 0, ok: 0, reason: 'Failed to extract result from function call or text response, using empty result.' });
  });

  it('a completion-mode model gets the one completion prompt', async () => {
    const { apiKey } = await s.importApp(promptWorkflow({ model: { provider: 'openai', name: 'gpt-instruct', mode: 'completion', completion_params: {} }, reasoning_mode: 'function_call' }));
    fake.behaviour = { reply: '{"city": "Oslo", "days": 2}' };
    const r = await (await post(apiKey, '/workflows/run', { inputs: { text: 'two days in Oslo' } })).json();
    expect(r.data.outputs).toEqual({ city: 'Oslo', days: 2, ok: 1, reason: null });
    const req = fake.requests.at(-1)!;
    expect(req.path).toBe('/v1/completions');
    expect(req.body.prompt).toContain('<information to be extracted>\n{"type": "object", "properties": {"city": ');
    expect(req.body.prompt).toContain('<text>\ntwo days in Oslo\n</text>');
    expect(String(req.body.prompt).endsWith('```JSON')).toBe(true);
  });

  it('import refuses a bad parameter naming it, as Dify words it', async () => {
    await expect(s.importApp(promptWorkflow({ parameters: [{ name: 'x', type: 'date', description: '', required: true }] }))).rejects.toThrow('parameters[0].type: type date is not allowd to use in Parameter Extractor node.');
    await expect(s.importApp(promptWorkflow({ parameters: [{ name: '__reason', type: 'string', description: '', required: true }] }))).rejects.toThrow('reserved');
    await expect(s.importApp(promptWorkflow({ reasoning_mode: 'guess' }))).rejects.toThrow('reasoning_mode');
  });
});

describe('classifier → extractor → LLM in a chatflow, with memory', () => {
  it('each turn classifies, extracts with the conversation in the prompt, and answers', async () => {
    const dsl = classifierExtractorChatflow();
    const { apiKey } = await s.importApp(dsl);
    fake.behaviour = {
      reply: (b) => (Array.isArray(b.tools) ? '' : (b.messages as Msg[]).length > 2 ? '{"category_id": "order", "category_name": "Order"}' : 'Trip confirmed.'),
      toolCalls: [{ name: 'extract_parameters', arguments: '{"city": "Tromsø", "days": 3}' }],
    };
    const first = await (await post(apiKey, '/chat-messages', { inputs: {}, query: 'Three days in Tromsø' })).json();
    expect(first.answer).toBe('Trip confirmed.');
    const n = fake.requests.length;
    await (await post(apiKey, '/chat-messages', { inputs: {}, query: 'Make it four', conversation_id: first.conversation_id })).json();
    const calls = fake.requests.slice(n);
    expect(calls).toHaveLength(3);
    const extract = calls.find((c) => Array.isArray(c.body.tools))!;
    expect((extract.body.messages as Msg[])[0]!.content).toContain('<histories>\nHuman: Three days in Tromsø\nAssistant: Trip confirmed.\n</histories>');
    expect((calls[2]!.body.messages as Msg[]).at(-1)!.content).toBe('Confirm a trip to Tromsø');
  });
});
