import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.js';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { openAiCompatibleProviders } from '../helpers/openai-providers.js';
import { dataFrames, parseSse } from '../helpers/sse.js';
import { llmNode, startNode, workflowDsl } from '../helpers/workflow-dsl.js';

// Issue 13 item 7: a chatflow's usage had prompt/completion tokens 0 and total_price 0.
let s: TestServer;
let fake: FakeOpenAI;
let key: string;

/** $0.15 per million prompt tokens, $0.60 per million completion tokens. */
const PRICE = { input: '0.15', output: '0.6', unit: '0.000001', currency: 'USD' };

beforeAll(async () => {
  fake = await startFakeOpenAI();
  s = await startServer({ runtime: { providers: openAiCompatibleProviders(fake.baseUrl) }, overrides: { prices: { 'gpt-test': PRICE } } });
  const dsl = workflowDsl(
    [
      startNode(),
      llmNode('draft', 'Draft an answer to: {{#sys.query#}}'),
      llmNode('polish', 'Polish this draft please: {{#draft.text#}}'),
      { id: 'answer', type: 'answer', answer: '{{#polish.text#}}' },
    ],
    [
      ['start', 'draft'],
      ['draft', 'polish'],
      ['polish', 'answer'],
    ],
    { mode: 'advanced-chat' },
  );
  ({ apiKey: key } = await s.importApp(dsl));
});
afterAll(async () => {
  await s?.close();
  await fake?.close();
});

const send = (body: Record<string, unknown>) =>
  fetch(`${s.api}/chat-messages`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ inputs: {}, user: 'alice', ...body }),
  });

/** What the fake upstream reports for the two calls of the last run: prompt = ceil(len/4), completion = chunks. */
function expectedUsage(reply: string, chunkSize: number) {
  const calls = fake.requests.slice(-2).map((r) => {
    const msgs = r.body.messages as { role: string; content: string }[];
    return { prompt: Math.ceil(msgs.at(-1)!.content.length / 4), completion: Math.ceil(reply.length / chunkSize) };
  });
  const prompt = calls.reduce((a, c) => a + c.prompt, 0);
  const completion = calls.reduce((a, c) => a + c.completion, 0);
  // prices in units of 1e-7 USD: tokens × 0.15e-6 = tokens × 1.5 units (half up per call, as Dify quantizes each call)
  const units = (tokens: number, perMillion: number) => Math.round((tokens * perMillion * 10) / 1);
  const promptUnits = calls.reduce((a, c) => a + units(c.prompt, 0.15), 0);
  const completionUnits = calls.reduce((a, c) => a + units(c.completion, 0.6), 0);
  const dec = (u: number) => `${Math.floor(u / 1e7)}.${String(u % 1e7).padStart(7, '0')}`;
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    prompt_price: dec(promptUnits),
    completion_price: dec(completionUnits),
    total_price: dec(promptUnits + completionUnits),
    prompt_unit_price: '0.15',
    completion_unit_price: '0.6',
    prompt_price_unit: '0.000001',
    currency: 'USD',
  };
}

describe('chatflow usage: the sum of the run\'s model calls (issue 13 item 7)', () => {
  it('streaming message_end, the message row and the run record carry the summed tokens and prices', async () => {
    fake.behaviour = { reply: 'a polished answer', chunkSize: 3 };
    const r = await send({ query: 'why is the sky blue?', response_mode: 'streaming' });
    const events = dataFrames(parseSse(await r.text()));
    const want = expectedUsage('a polished answer', 3);
    expect(want.prompt_tokens).toBeGreaterThan(0);
    expect(want.total_price).not.toBe('0.0000000');
    const end = events.find((e) => e.event === 'message_end')!;
    const usage = (end.metadata as { usage: Record<string, unknown> }).usage;
    expect(usage).toMatchObject(want);
    expect(typeof usage.latency).toBe('number');
    const finished = events.find((e) => e.event === 'workflow_finished')!;
    expect((finished.data as { total_tokens: number }).total_tokens).toBe(want.total_tokens);
    // each llm node reports its own priced call in execution_metadata and outputs.usage
    const llmDone = events.filter((e) => e.event === 'node_finished' && (e.data as { node_type: string }).node_type === 'llm');
    expect(llmDone).toHaveLength(2);
    const perNode = llmDone.map((e) => (e.data as { execution_metadata: { total_tokens: number; total_price: number } }).execution_metadata);
    expect(perNode[0]!.total_tokens + perNode[1]!.total_tokens).toBe(want.total_tokens);
    expect(perNode[0]!.total_price + perNode[1]!.total_price).toBeCloseTo(Number(want.total_price), 9);

    const row = await s.runtime.store.db.selectFrom('messages').selectAll().where('id', '=', String(end.message_id)).executeTakeFirstOrThrow();
    expect(Number(row.prompt_tokens)).toBe(want.prompt_tokens);
    expect(Number(row.completion_tokens)).toBe(want.completion_tokens);
    expect(row.total_price).toBe(want.total_price);
    expect(JSON.parse(row.usage)).toMatchObject(want);
  });

  it('the blocking body reports the same sums', async () => {
    fake.behaviour = { reply: 'blocking reply text', chunkSize: 4 };
    const r = await send({ query: 'tell me about otters' });
    expect(r.status).toBe(200);
    const body = await r.json();
    expect(body.metadata.usage).toMatchObject(expectedUsage('blocking reply text', 4));
  });
});
