import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.js';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { dataFrames, parseSse } from '../helpers/sse.js';
import { endNode, llmNode, startNode, workflowDsl } from '../helpers/workflow-dsl.js';

/**
 * Real Dify exports name providers Dovetail used to refuse (deepseek, moonshot, plugin ids): the
 * server is configured only through settings (DEEPSEEK_API_KEY / DEEPSEEK_BASE_URL pointed at a
 * local OpenAI-protocol fake), as a user would.
 */

let s: TestServer;
let fake: FakeOpenAI;

beforeAll(async () => {
  fake = await startFakeOpenAI();
  s = await startServer({ env: { DEEPSEEK_API_KEY: 'sk-deepseek', DEEPSEEK_BASE_URL: fake.baseUrl } });
});
afterAll(async () => {
  await s?.close();
  await fake?.close();
});
beforeEach(() => {
  fake.behaviour = { reply: 'Owls hunt at night.', reasoning: 'The user asks about owls.', chunkSize: 3 };
});

const deepseek = { provider: 'langgenius/deepseek/deepseek', name: 'deepseek-reasoner', mode: 'chat', completion_params: { temperature: 0.6, max_tokens: 512 } };
const app = (extra: Record<string, unknown>, name: string) =>
  workflowDsl([startNode([{ variable: 'q' }]), llmNode('llm', 'Q: {{#start.q#}}', { model: deepseek, ...extra }), endNode({ text: ['llm', 'text'], reasoning: ['llm', 'reasoning_content'] })], [['start', 'llm'], ['llm', 'end']], { name });

async function run(key: string, mode: 'blocking' | 'streaming') {
  return fetch(`${s.api}/workflows/run`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ inputs: { q: 'owls?' }, response_mode: mode, user: 'u' }) });
}

describe('a DSL provider from the table, configured by its settings', () => {
  it('reasoning_format tagged (Dify’s default): the answer keeps the reasoning in <think>; the request went to DeepSeek’s settings', async () => {
    const { apiKey } = await s.importApp(app({}, 'tagged'));
    const body = (await (await run(apiKey, 'blocking')).json()) as { data: { status: string; outputs: Record<string, string> } };
    expect(body.data.status).toBe('succeeded');
    expect(body.data.outputs).toEqual({ text: '<think>\nThe user asks about owls.\n</think>Owls hunt at night.', reasoning: '' });
    const seen = fake.requests.at(-1)!;
    expect(seen.path).toBe('/v1/chat/completions');
    expect(seen.headers.authorization).toBe('Bearer sk-deepseek');
    expect(seen.body).toMatchObject({ model: 'deepseek-reasoner', temperature: 0.6, max_tokens: 512 });
  });

  it('reasoning_format separated: text without it (streamed without it too), reasoning_content with it', async () => {
    const { apiKey } = await s.importApp(app({ reasoning_format: 'separated' }, 'separated'));
    const r = await run(apiKey, 'streaming');
    const events = dataFrames(parseSse(await r.text()));
    const streamed = events.filter((e) => e.event === 'text_chunk').map((e) => (e.data as { text: string }).text).join('');
    expect(streamed).toBe('Owls hunt at night.');
    const finished = events.at(-1)!;
    expect(finished.event).toBe('workflow_finished');
    expect((finished.data as { outputs: unknown }).outputs).toEqual({ text: 'Owls hunt at night.', reasoning: 'The user asks about owls.' });
    const node = events.find((e) => e.event === 'node_finished' && (e.data as { node_id: string }).node_id === 'llm')!.data as { outputs: Record<string, unknown> };
    expect(node.outputs).toMatchObject({ text: 'Owls hunt at night.', reasoning_content: 'The user asks about owls.', finish_reason: 'stop' });
  });

  it('an unconfigured provider fails the node with an error naming the setting; the models list shows only configured providers', async () => {
    const moonshot = { provider: 'langgenius/moonshot/moonshot', name: 'moonshot-v1-8k', mode: 'chat', completion_params: {} };
    const { apiKey } = await s.importApp(app({ model: moonshot }, 'moonshot'));
    const body = (await (await run(apiKey, 'blocking')).json()) as { data: { status: string; error: string } };
    expect(body.data.status).toBe('failed');
    expect(body.data.error).toContain('Model provider "moonshot" is not configured: set MOONSHOT_API_KEY');

    const kb = await s.datasetKey();
    const models = (await (await fetch(`${s.api}/workspaces/current/models/model-types/llm`, { headers: { authorization: `Bearer ${kb}` } })).json()) as { data: { provider: string; label: { en_US: string }; models: { model: string }[] }[] };
    const byProvider = Object.fromEntries(models.data.map((p) => [p.provider, { label: p.label.en_US, models: p.models.map((m) => m.model) }]));
    expect(byProvider['langgenius/deepseek/deepseek']).toEqual({ label: 'DeepSeek', models: ['deepseek-reasoner'] });
    expect(byProvider).not.toHaveProperty('langgenius/moonshot/moonshot');
  });
});
