import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.js';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { kbClient } from '../helpers/kb-client.js';
import { dataFrames, parseSse } from '../helpers/sse.js';
import { validateResponse, validateSchema } from '../helpers/openapi.js';

/**
 * Datasets in model-config apps (chat, completion, agent-chat): the retrieved chunks reach the
 * prompt as Dify's context prompt, the answers carry their citations (`retriever_resources`) in
 * blocking bodies, `message_end` and `GET /messages`, checked against Dify's OpenAPI.
 */
let fake: FakeOpenAI;
let s: TestServer;
let kb: ReturnType<typeof kbClient>;
let handbook: string;
let recipes: string;

const HANDBOOK = 'Vacation policy: employees get twenty days a year.\nRemote work is allowed on Fridays.\nThe office closes at six.';
const RECIPES = 'Pancakes need flour, eggs and milk.\nBread needs flour, water and yeast.';
const CONTEXT_HEAD = 'Use the following context as your learned knowledge, inside <context></context> XML tags.\n\n<context>\n';
const CONTEXT_TAIL =
  "\n</context>\n\nWhen answer to user:\n- If you don't know, just say that you don't know.\n- If you don't know when you are not sure, ask for clarification.\nAvoid mentioning that you obtained the information from the context.\nAnd answer according to the language of the user's question.\n\n";

async function indexed(name: string, doc: string, text: string): Promise<string> {
  const ds = await kb.dataset(name, 'economy');
  const r = await kb.call('POST', `/datasets/${ds}/document/create-by-text`, { name: doc, text, process_rule: { mode: 'custom', rules: { segmentation: { separator: '\n', max_tokens: 50 } } } });
  expect(r.status).toBe(200);
  expect(await kb.settle(ds, r.body.batch)).toMatchObject({ indexing_status: 'completed' });
  return ds;
}

beforeAll(async () => {
  fake = await startFakeOpenAI();
  // `ollama` on the same fake server, its models without function calling (Dify's ReAct router)
  s = await startServer({ env: { OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: fake.baseUrl, OLLAMA_BASE_URL: fake.baseUrl, OLLAMA_FUNCTION_CALLING: 'llama3.1' } });
  kb = kbClient(s, await s.datasetKey());
  handbook = await indexed('Handbook', 'Policies', HANDBOOK);
  recipes = await indexed('Recipes', 'Cookbook', RECIPES);
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

interface AppOpts {
  mode: 'chat' | 'completion' | 'agent-chat';
  datasets: string[];
  citations?: boolean;
  strategy?: 'single' | 'multiple';
  queryVariable?: string;
  /** `model.provider` / `model.name` (default OpenAI's gpt-4o-mini). */
  provider?: string;
  model?: string;
}

/** A model-config app as Dify exports it, its datasets in `dataset_configs` (agent-chat: in `agent_mode.tools`). */
function basicApp(o: AppOpts): string {
  const entries = o.datasets.map((id) => `\n        - dataset:\n            enabled: true\n            id: ${id}`).join('');
  const agentTools = o.mode === 'agent-chat' ? o.datasets.map((id) => `\n    - dataset:\n        enabled: true\n        id: ${id}`).join('') : ' []';
  return `app:
  mode: ${o.mode}
  name: Knowledge ${o.mode}
kind: app
version: 0.3.1
model_config:
  model:
    provider: ${o.provider ?? 'langgenius/openai/openai'}
    name: ${o.model ?? 'gpt-4o-mini'}
    mode: chat
    completion_params:
      temperature: 0.7
      stop: ['END']
  pre_prompt: 'Be brief.'
  agent_mode:
    enabled: ${o.mode === 'agent-chat'}
    strategy: function_call
    tools:${agentTools}
  retriever_resource:
    enabled: ${o.citations ?? true}
  dataset_query_variable: '${o.queryVariable ?? ''}'
  dataset_configs:
    retrieval_model: ${o.strategy ?? 'multiple'}
    top_k: 4
    reranking_enable: false
    datasets:
      strategy: router
      datasets:${o.mode === 'agent-chat' ? ' []' : entries}
  user_input_form:
    - text-input:
        label: Topic
        variable: topic
        required: false
`;
}

const headers = (k: string) => ({ authorization: `Bearer ${k}`, 'content-type': 'application/json' });
const post = (k: string, path: string, body: Record<string, unknown>) => fetch(`${s.api}${path}`, { method: 'POST', headers: headers(k), body: JSON.stringify({ inputs: {}, user: 'ann', ...body }) });
const lastMessages = () => fake.requests.at(-1)!.body.messages as { role: string; content: string }[];
async function listed(k: string, conversationId: string): Promise<Record<string, any>[]> {
  const r = await fetch(`${s.api}/messages?user=ann&conversation_id=${conversationId}`, { headers: headers(k) });
  expect(r.status).toBe(200);
  const body = await r.json();
  validateResponse('/messages', 'get', 200, body);
  return body.data;
}

describe('datasets in chat apps', () => {
  it('blocking (multiple): the chunks in Dify\'s context prompt before pre_prompt; citations in the answer and GET /messages', async () => {
    fake.behaviour = { reply: 'Fridays.' };
    const { apiKey } = await s.importApp(basicApp({ mode: 'chat', datasets: [handbook, recipes] }));
    const r = await post(apiKey, '/chat-messages', { query: 'remote work fridays', response_mode: 'blocking' });
    expect(r.status).toBe(200);
    const body = await r.json();
    validateResponse('/chat-messages', 'post', 200, body);
    expect(lastMessages()).toEqual([
      { role: 'system', content: `${CONTEXT_HEAD}Remote work is allowed on Fridays.${CONTEXT_TAIL}Be brief.` },
      { role: 'user', content: 'remote work fridays' },
    ]);
    const cites = body.metadata.retriever_resources as Record<string, any>[];
    expect(cites).toHaveLength(1);
    expect(cites[0]).toMatchObject({
      position: 1,
      dataset_id: handbook,
      dataset_name: 'Handbook',
      document_name: 'Policies',
      data_source_type: 'upload_file',
      retriever_from: 'api',
      content: 'Remote work is allowed on Fridays.',
      hit_count: 1,
      segment_position: 2,
      summary: null,
    });
    const [m] = await listed(apiKey, body.conversation_id);
    expect(m!.retriever_resources).toEqual([expect.objectContaining({ message_id: body.id, position: 1, segment_id: cites[0]!.segment_id, content: 'Remote work is allowed on Fridays.', created_at: body.created_at })]);
  });

  it('streaming: message_end carries the citations of chunks from both datasets, best first', async () => {
    fake.behaviour = { reply: 'Flour.' };
    const { apiKey } = await s.importApp(basicApp({ mode: 'chat', datasets: [handbook, recipes] }));
    const frames = dataFrames(parseSse(await (await post(apiKey, '/chat-messages', { query: 'flour remote', response_mode: 'streaming' })).text()));
    const end = frames.find((f) => f.event === 'message_end') as Record<string, any>;
    validateSchema('StreamEventChatMessageEnd', end);
    const cites = end.metadata.retriever_resources as { position: number; dataset_name: string; score: number; content: string }[];
    expect(new Set(cites.map((c) => c.dataset_name))).toEqual(new Set(['Handbook', 'Recipes']));
    cites.forEach((c, i) => expect(c.position).toBe(i + 1));
    for (let i = 1; i < cites.length; i++) expect(cites[i]!.score).toBeLessThanOrEqual(cites[i - 1]!.score);
    // the prompt has the same chunks in the same order
    const context = lastMessages()[0]!.content.slice(CONTEXT_HEAD.length, -(CONTEXT_TAIL.length + 'Be brief.'.length));
    expect(context).toBe(cites.map((c) => c.content).join('\n'));
  });

  it('retriever_resource off: the context still reaches the model; retriever_resources is []', async () => {
    fake.behaviour = { reply: 'six' };
    const { apiKey } = await s.importApp(basicApp({ mode: 'chat', datasets: [handbook], citations: false }));
    const body = await (await post(apiKey, '/chat-messages', { query: 'office closes', response_mode: 'blocking' })).json();
    expect(body.metadata.retriever_resources).toEqual([]);
    expect(lastMessages()[0]!.content).toContain('<context>\nThe office closes at six.\n</context>');
    expect((await listed(apiKey, body.conversation_id))[0]!.retriever_resources).toEqual([]);
  });

  it('single: the model picks the dataset with a function call (Dify\'s router); only that dataset is searched', async () => {
    fake.behaviour = { reply: 'Use flour.', toolCalls: (b) => (Array.isArray(b.tools) ? [{ name: recipes, arguments: '{}' }] : undefined) };
    const { apiKey } = await s.importApp(basicApp({ mode: 'chat', datasets: [handbook, recipes], strategy: 'single' }));
    const body = await (await post(apiKey, '/chat-messages', { query: 'flour fridays', response_mode: 'blocking' })).json();
    expect(fake.requests).toHaveLength(2);
    const router = fake.requests[0]!.body;
    expect(router.messages).toEqual([
      { role: 'system', content: 'You are a helpful AI assistant.' },
      { role: 'user', content: 'flour fridays' },
    ]);
    expect((router.tools as { function: { name: string; description: string } }[]).map((t) => [t.function.name, t.function.description])).toEqual([
      [handbook, 'useful for when you want to answer queries about the Handbook'],
      [recipes, 'useful for when you want to answer queries about the Recipes'],
    ]);
    const cites = body.metadata.retriever_resources as { dataset_id: string; content: string }[];
    expect(cites.length).toBeGreaterThan(0);
    expect(cites.every((c) => c.dataset_id === recipes)).toBe(true);
    expect(lastMessages()[0]!.content).toContain('flour');
    expect(lastMessages()[0]!.content).not.toContain('Fridays');
    // the model picks the other one: its chunks instead
    fake.behaviour = { reply: 'Fridays.', toolCalls: (b) => (Array.isArray(b.tools) ? [{ name: handbook, arguments: '{}' }] : undefined) };
    const other = await (await post(apiKey, '/chat-messages', { query: 'flour fridays', response_mode: 'blocking' })).json();
    expect((other.metadata.retriever_resources as { dataset_id: string }[]).map((c) => c.dataset_id)).toEqual([handbook]);
  });

  it('single with a model without function calling: Dify\'s ReAct router; the dataset the model names is searched', async () => {
    const reactAnswer = (id: string) => `Thought: the question is about baking\nAction:\n\`\`\`\n{\n  "action": "${id}",\n  "action_input": "flour"\n}\n\`\`\``;
    const routed = (b: Record<string, unknown>) => String((b.messages as { content: string }[])[0]!.content).startsWith('Respond to the human');
    fake.behaviour = { reply: (b) => (routed(b) ? reactAnswer(recipes) : 'Use flour.') };
    const { apiKey } = await s.importApp(basicApp({ mode: 'chat', datasets: [handbook, recipes], strategy: 'single', provider: 'langgenius/ollama/ollama', model: 'gemma2' }));
    const body = await (await post(apiKey, '/chat-messages', { query: 'flour fridays', response_mode: 'blocking' })).json();
    validateResponse('/chat-messages', 'post', 200, body);
    expect(fake.requests).toHaveLength(2);
    const router = fake.requests[0]!.body;
    // no functions offered; the app's parameters with Dify's stop word instead of the app's
    expect(router.tools).toBeUndefined();
    expect(router).toMatchObject({ model: 'gemma2', temperature: 0.7, stop: ['Observation:'] });
    const [system, user] = router.messages as { role: string; content: string }[];
    expect(user).toEqual({ role: 'user', content: 'flour fridays' });
    expect(system!.role).toBe('system');
    expect(system!.content).toContain(`${handbook}: useful for when you want to answer queries about the Handbook, args: {'query'`);
    expect(system!.content).toContain(`Valid "action" values: "Final Answer" or "${handbook}", "${recipes}"`);
    const cites = body.metadata.retriever_resources as { dataset_id: string; content: string }[];
    expect(cites.length).toBeGreaterThan(0);
    expect(cites.every((c) => c.dataset_id === recipes)).toBe(true);
    expect(lastMessages()[0]!.content).toContain('flour');
    expect(lastMessages()[0]!.content).not.toContain('Fridays');
    // it names the other dataset: that one is searched
    fake.behaviour = { reply: (b) => (routed(b) ? reactAnswer(handbook) : 'Fridays.') };
    const other = await (await post(apiKey, '/chat-messages', { query: 'flour fridays', response_mode: 'blocking' })).json();
    expect((other.metadata.retriever_resources as { dataset_id: string }[]).map((c) => c.dataset_id)).toEqual([handbook]);
  });

  it('ReAct router: a malformed answer, a "Final Answer" or a name that is no dataset of the app picks none (an empty context), as Dify', async () => {
    const { apiKey } = await s.importApp(basicApp({ mode: 'chat', datasets: [handbook, recipes], strategy: 'single', provider: 'langgenius/ollama/ollama', model: 'gemma2' }));
    const routed = (b: Record<string, unknown>) => String((b.messages as { content: string }[])[0]!.content).startsWith('Respond to the human');
    for (const answer of ['Action:\n```\n{"action": "' + recipes + '",\n```', '```\n{"action": "Final Answer", "action_input": "flour"}\n```', 'Pancakes need flour.', '```{"action": "00000000-0000-4000-8000-000000000000"}```']) {
      fake.behaviour = { reply: (b) => (routed(b) ? answer : 'I do not know.') };
      fake.requests.length = 0;
      const r = await post(apiKey, '/chat-messages', { query: 'flour fridays', response_mode: 'blocking' });
      expect(r.status).toBe(200);
      const body = await r.json();
      expect(fake.requests).toHaveLength(2);
      expect(body.metadata.retriever_resources).toEqual([]);
      expect(lastMessages()[0]!.content).toContain('<context>\n\n</context>');
    }
  });

  it('a listed model of the same provider (OLLAMA_FUNCTION_CALLING) routes with a function call instead', async () => {
    fake.behaviour = { reply: 'Use flour.', toolCalls: (b) => (Array.isArray(b.tools) ? [{ name: recipes, arguments: '{}' }] : undefined) };
    const { apiKey } = await s.importApp(basicApp({ mode: 'chat', datasets: [handbook, recipes], strategy: 'single', provider: 'langgenius/ollama/ollama', model: 'llama3.1' }));
    const body = await (await post(apiKey, '/chat-messages', { query: 'flour fridays', response_mode: 'blocking' })).json();
    expect((fake.requests[0]!.body.tools as unknown[]).length).toBe(2);
    expect((body.metadata.retriever_resources as { dataset_id: string }[]).every((c) => c.dataset_id === recipes)).toBe(true);
  });

  it('a dataset that does not exist: an import warning naming the setting, and 400 app_unavailable naming it', async () => {
    const ghost = '00000000-0000-4000-8000-00000000beef';
    const { appId, apiKey } = await s.importApp(basicApp({ mode: 'chat', datasets: [ghost] }));
    const app = (await s.runtime.apps.find(appId))!;
    const warnings = await s.runtime.appWarnings(app);
    expect(warnings.map((w) => [w.node_id, w.part, w.setting])).toEqual([['model_config.dataset_configs.datasets.datasets[0].dataset.id', `dataset ${ghost}`, `--dataset ${ghost}=NEW_ID`]]);
    const r = await post(apiKey, '/chat-messages', { query: 'anything', response_mode: 'blocking' });
    expect(r.status).toBe(400);
    expect(await r.json()).toEqual({
      code: 'app_unavailable',
      status: 400,
      message: `Dataset not found: ${ghost} (model_config.dataset_configs.datasets.datasets[0].dataset.id: import the app with --dataset ${ghost}=NEW_ID, or create the dataset)`,
    });
    // mapped on import, it works
    const mapped = await s.runtime.apps.importDsl(basicApp({ mode: 'chat', datasets: [ghost] }), { datasets: new Map([[ghost, handbook]]) });
    expect(JSON.stringify(mapped.dsl.model_config)).toContain(handbook);
    expect(JSON.stringify(mapped.dsl.model_config)).not.toContain(ghost);
  });
});

describe('datasets in completion apps', () => {
  it('dataset_query_variable: the input is the search query; citations blocking, streaming and stored', async () => {
    fake.behaviour = { reply: 'Twenty.' };
    const { apiKey } = await s.importApp(basicApp({ mode: 'completion', datasets: [handbook], queryVariable: 'topic' }));
    const r = await post(apiKey, '/completion-messages', { inputs: { topic: 'vacation days' }, response_mode: 'blocking' });
    expect(r.status).toBe(200);
    const body = await r.json();
    validateResponse('/completion-messages', 'post', 200, body);
    expect(lastMessages()).toEqual([{ role: 'user', content: `${CONTEXT_HEAD}Vacation policy: employees get twenty days a year.${CONTEXT_TAIL}Be brief.` }]);
    expect(body.metadata.retriever_resources).toEqual([expect.objectContaining({ position: 1, dataset_id: handbook, retriever_from: 'api', content: 'Vacation policy: employees get twenty days a year.' })]);
    const frames = dataFrames(parseSse(await (await post(apiKey, '/completion-messages', { inputs: { topic: 'office closes' }, response_mode: 'streaming' })).text()));
    const end = frames.find((f) => f.event === 'message_end') as Record<string, any>;
    validateSchema('StreamEventMessageEnd', end);
    expect(end.metadata.retriever_resources.map((c: { content: string }) => c.content)).toEqual(['The office closes at six.']);
    // GET /messages is for chat apps (400 not_chat_app, as Dify); the message keeps its citations
    expect((await fetch(`${s.api}/messages?user=ann&conversation_id=${end.message_id}`, { headers: headers(apiKey) })).status).toBe(400);
    const stored = await s.runtime.chatflow.message(end.message_id as string);
    expect(stored!.retrieverResources.map((c) => [c.position, c.content])).toEqual([[1, 'The office closes at six.']]);
  });
});

describe('datasets in agent-chat apps', () => {
  it('each dataset is a retriever tool the agent calls; its chunks are the observation and the citations', async () => {
    const toolName = `dataset_${handbook.replaceAll('-', '_')}`;
    fake.behaviour = {
      reply: 'You may work remotely on Fridays.',
      toolCalls: (b) => ((b.messages as { role: string }[]).some((m) => m.role === 'tool') ? undefined : [{ name: toolName, arguments: '{"query":"remote work"}' }]),
    };
    const { apiKey } = await s.importApp(basicApp({ mode: 'agent-chat', datasets: [handbook] }));
    const r = await post(apiKey, '/chat-messages', { query: 'Can I work from home?', response_mode: 'streaming' });
    expect(r.status).toBe(200);
    const frames = dataFrames(parseSse(await r.text()));
    const first = fake.requests[0]!.body;
    expect((first.tools as { function: { name: string; description: string; parameters: Record<string, any> } }[]).map((t) => [t.function.name, t.function.description, Object.keys(t.function.parameters.properties)])).toEqual([
      [toolName, 'useful for when you want to answer queries about the Handbook', ['query']],
    ]);
    const observation = (fake.requests[1]!.body.messages as { role: string; content: string }[]).find((m) => m.role === 'tool')!.content;
    expect(observation).toContain('Remote work is allowed on Fridays.');
    const thought = frames.find((f) => f.event === 'agent_thought' && f.tool === toolName);
    expect(thought).toBeDefined();
    const end = frames.find((f) => f.event === 'message_end') as Record<string, any>;
    validateSchema('StreamEventChatMessageEnd', end);
    expect(end.metadata.retriever_resources).toEqual([expect.objectContaining({ position: 1, dataset_id: handbook, document_name: 'Policies', content: 'Remote work is allowed on Fridays.' })]);
    const [m] = await listed(apiKey, end.conversation_id as string);
    expect(m!.retriever_resources.map((c: { content: string }) => c.content)).toEqual(['Remote work is allowed on Fridays.']);
  });
});
