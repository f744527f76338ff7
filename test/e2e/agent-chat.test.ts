import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Readable } from 'node:stream';
import { ChatClient } from 'dify-client';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { dataFrames, parseSse, readSse, type SseFrame } from '../helpers/sse.js';
import { validateResponse, validateSchema } from '../helpers/openapi.js';
import { endNode, startNode, workflowDsl } from '../helpers/workflow-dsl.js';

/**
 * Agent-chat apps (Dify's "Agent", `mode: agent-chat`) over real HTTP: a fake OpenAI-compatible
 * model that asks for tools, real built-in tools (math, time, the webscraper against a local page
 * server that can hold requests), the stream and `GET /messages` checked against Dify's OpenAPI.
 */
let s: TestServer;
let fake: FakeOpenAI;
let pages: Server;
let pageBase = '';
/** Requests to `/barrier/*` are held until `barrier.want` of them have arrived (proves concurrency). */
const barrier = { want: 0, held: [] as ServerResponse[] };
/** Requests to `/hang` are never answered; `closed` counts those the client gave up. */
const hang = { arrived: 0, closed: 0 };

beforeAll(async () => {
  fake = await startFakeOpenAI();
  pages = createServer((req: IncomingMessage, res: ServerResponse) => {
    if (req.url?.startsWith('/barrier/')) {
      barrier.held.push(res);
      if (barrier.held.length >= barrier.want) for (const r of barrier.held.splice(0)) r.writeHead(200, { 'content-type': 'text/plain' }).end('page body');
      return;
    }
    if (req.url === '/hang') {
      hang.arrived++;
      res.on('close', () => hang.closed++);
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => pages.listen(0, '127.0.0.1', resolve));
  pageBase = `http://127.0.0.1:${(pages.address() as AddressInfo).port}`;
  s = await startServer({ env: { OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: fake.baseUrl, EMBEDDINGS_BASE_URL: fake.baseUrl, SSRF_ALLOW_HOSTS: '127.0.0.1', AGENT_MAX_ITERATIONS: '8' } });
});
afterAll(async () => {
  await s?.close();
  pages?.closeAllConnections();
  await new Promise((resolve) => pages?.close(resolve));
  await fake?.close();
});
beforeEach(() => {
  fake.behaviour = {};
  fake.requests.length = 0;
});

interface ToolEntry {
  provider: string;
  type?: string;
  name: string;
  label?: string;
  params?: Record<string, unknown>;
  enabled?: boolean;
}

/** An agent-chat app as Dify exports it. */
function agentChatApp(o: { tools: ToolEntry[]; strategy?: string; maxIteration?: number; name?: string }): string {
  const tools = o.tools
    .map(
      (t) => `    - enabled: ${t.enabled ?? true}
      isDeleted: false
      notAuthor: false
      provider_id: ${t.provider}
      provider_name: ${t.provider}
      provider_type: ${t.type ?? 'builtin'}
      tool_label: ${t.label ?? t.name}
      tool_name: ${t.name}
      tool_parameters: ${JSON.stringify(t.params ?? {})}`,
    )
    .join('\n');
  return `app:
  mode: agent-chat
  name: ${o.name ?? 'Calculator agent'}
  icon: "🤖"
kind: app
version: 0.3.1
model_config:
  agent_mode:
    enabled: true
    max_iteration: ${o.maxIteration ?? 5}
    strategy: ${o.strategy ?? 'function_call'}
    prompt: null
    tools:
${tools || '    []'}
  model:
    provider: langgenius/openai/openai
    name: gpt-4o-mini
    mode: chat
    completion_params:
      temperature: 0.1
  pre_prompt: 'You are a {{persona}} calculator.'
  opening_statement: Ask me a sum.
  suggested_questions:
    - What is 6 times 7?
  suggested_questions_after_answer:
    enabled: false
  user_input_form:
    - text-input:
        label: Persona
        variable: persona
        required: true
        max_length: 30
`;
}

const MATH: ToolEntry = { provider: 'math', name: 'eval_expression', label: 'Evaluate', params: { expression: '' } };
const TIME: ToolEntry = { provider: 'time', name: 'current_time', label: 'Current Time', params: { format: '%Y', timezone: 'UTC' } };
const SCRAPER: ToolEntry = { provider: 'webscraper', name: 'webscraper', params: { user_agent: '' } };

const headers = (key: string) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' });
const send = (key: string, body: Record<string, unknown>) => fetch(`${s.api}/chat-messages`, { method: 'POST', headers: headers(key), body: JSON.stringify(body) });
const toolMessages = (body: Record<string, unknown>) => (body.messages as { role: string; content: string }[]).filter((m) => m.role === 'tool');

async function stream(key: string, body: Record<string, unknown>): Promise<Record<string, any>[]> {
  const r = await send(key, { inputs: { persona: 'careful' }, user: 'ann', response_mode: 'streaming', ...body });
  expect(r.status).toBe(200);
  expect(r.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
  const frames = dataFrames(parseSse(await r.text()));
  for (const f of frames) validateSchema('ChunkChatEvent', f);
  return frames;
}

async function messages(key: string, conversationId: string, user = 'ann'): Promise<Record<string, any>[]> {
  const r = await fetch(`${s.api}/messages?conversation_id=${conversationId}&user=${user}`, { headers: headers(key) });
  expect(r.status).toBe(200);
  const body = await r.json();
  validateResponse('/messages', 'get', 200, body);
  return body.data;
}

describe('agent-chat apps: POST /chat-messages (function_call)', () => {
  it('two tool calls at once, their answers back to the model, agent_thought / agent_message / message_end as Dify streams them', async () => {
    fake.behaviour = {
      toolCalls: (body) => (toolMessages(body).length === 0 ? [{ name: 'eval_expression', arguments: JSON.stringify({ expression: '6 * 7' }) }, { name: 'current_time', arguments: '{}' }] : undefined),
      reply: (body) => `6 times 7 is ${toolMessages(body)[0]!.content} (year ${toolMessages(body)[1]!.content}).`,
    };
    const { apiKey } = await s.importApp(agentChatApp({ tools: [MATH, TIME] }));
    const frames = await stream(apiKey, { query: 'What is 6 times 7?' });

    // every frame names the message, the conversation and the task
    const end = frames.at(-1)!;
    expect(end.event).toBe('message_end');
    for (const f of frames) expect(f).toMatchObject({ conversation_id: end.conversation_id, message_id: end.message_id, task_id: end.task_id, created_at: expect.any(Number) });
    expect(frames.map((f) => f.event)).not.toContain('message');

    // round 1: started, then thought with both calls, then their observations (one id); round 2: the answer
    const thoughts = frames.filter((f) => f.event === 'agent_thought');
    const round1 = thoughts.filter((t) => t.position === 1);
    expect(round1).toHaveLength(3);
    expect(new Set(round1.map((t) => t.id)).size).toBe(1);
    expect(round1[0]).toMatchObject({ thought: '', tool: '', tool_input: '', observation: '' });
    expect(round1[1]).toMatchObject({ tool: 'eval_expression;current_time', tool_labels: { eval_expression: { en_US: 'Evaluate', zh_Hans: 'Evaluate' }, current_time: { en_US: 'Current Time' } }, observation: '' });
    expect(JSON.parse(round1[1]!.tool_input)).toEqual({ eval_expression: { expression: '6 * 7' }, current_time: {} });
    const observed = JSON.parse(round1[2]!.observation);
    expect(observed.eval_expression).toBe('42');
    expect(observed.current_time).toMatch(/^\d{4}$/);
    const round2 = thoughts.filter((t) => t.position === 2).at(-1)!;
    const answer = frames.filter((f) => f.event === 'agent_message').map((f) => f.answer).join('');
    expect(answer).toMatch(/^6 times 7 is 42 \(year \d{4}\)\.$/);
    expect(round2).toMatchObject({ thought: answer, tool: '', observation: '' });
    // the answer streams after round 2 started and before it is finished
    const idx = (pred: (f: Record<string, any>) => boolean) => frames.findIndex(pred);
    expect(idx((f) => f.event === 'agent_message')).toBeGreaterThan(idx((f) => f.event === 'agent_thought' && f.position === 2));

    // usage sums both model calls, as reported by the provider
    expect(end.metadata.usage.total_tokens).toBeGreaterThan(0);
    validateSchema('Usage', end.metadata.usage);

    // what the model saw: the rendered pre_prompt, the query, both tools as functions (time's form params fixed)
    const first = fake.requests[0]!.body;
    expect(first.messages).toEqual([{ role: 'system', content: 'You are a careful calculator.' }, { role: 'user', content: 'What is 6 times 7?' }]);
    expect((first.tools as { function: { name: string; parameters: unknown } }[]).map((t) => t.function.name)).toEqual(['eval_expression', 'current_time']);

    // GET /messages: the answer and the thoughts in Dify's shape
    const [m] = await messages(apiKey, end.conversation_id);
    expect(m).toMatchObject({ id: end.message_id, query: 'What is 6 times 7?', answer, status: 'normal' });
    expect(m!.agent_thoughts).toHaveLength(2);
    expect(m!.agent_thoughts[0]).toEqual({
      id: round1[0]!.id,
      chain_id: null,
      message_id: end.message_id,
      position: 1,
      thought: '',
      tool: 'eval_expression;current_time',
      tool_labels: round1[1]!.tool_labels,
      tool_input: round1[1]!.tool_input,
      created_at: expect.any(Number),
      observation: round1[2]!.observation,
      files: [],
    });
    expect(m!.agent_thoughts[1]).toMatchObject({ position: 2, thought: answer, tool: '' });
  });

  it('blocking is refused as Dify refuses it', async () => {
    const { apiKey } = await s.importApp(agentChatApp({ tools: [MATH] }));
    for (const mode of ['blocking', null, undefined]) {
      const r = await send(apiKey, { inputs: { persona: 'x' }, query: 'hi', user: 'ann', ...(mode !== undefined ? { response_mode: mode } : {}) });
      expect(r.status).toBe(400);
      expect(await r.json()).toEqual({ code: 'invalid_param', message: 'Agent Chat App does not support blocking mode', status: 400 });
    }
    expect(fake.requests).toHaveLength(0);
  });

  it('parallel calls really run at once: two page fetches that are only answered together', async () => {
    barrier.want = 2;
    fake.behaviour = {
      toolCalls: (body) => (toolMessages(body).length === 0 ? [{ name: 'webscraper', arguments: JSON.stringify({ url: `${pageBase}/barrier/a` }) }, { name: 'webscraper', arguments: JSON.stringify({ url: `${pageBase}/barrier/b` }) }] : undefined),
      reply: () => 'both fetched',
    };
    const { apiKey } = await s.importApp(agentChatApp({ tools: [SCRAPER] }));
    const frames = await stream(apiKey, { query: 'fetch both' });
    expect(frames.filter((f) => f.event === 'agent_message').map((f) => f.answer).join('')).toBe('both fetched');
    expect(toolMessages(fake.requests[1]!.body).map((m) => m.content)).toEqual(['page body', 'page body']);
  });

  it('a failing tool is an observation; max_iteration ends the loop with the last answer', async () => {
    // every round with tools asks again; the third (last) round gets no tools and must answer
    fake.behaviour = {
      toolCalls: (body) => (body.tools ? [{ name: 'eval_expression', arguments: JSON.stringify({ expression: '1 +* 2' }) }, { name: 'no_such_tool', arguments: '{}' }] : undefined),
      reply: () => 'I could not compute it.',
    };
    const { apiKey } = await s.importApp(agentChatApp({ tools: [MATH], maxIteration: 3 }));
    const frames = await stream(apiKey, { query: 'x' });
    expect(fake.requests.map((r) => Boolean(r.body.tools))).toEqual([true, true, false]);
    expect(frames.at(-1)!.event).toBe('message_end');
    expect(frames.filter((f) => f.event === 'agent_message').map((f) => f.answer).join('')).toBe('I could not compute it.');
    const obs = JSON.parse(frames.filter((f) => f.event === 'agent_thought' && f.position === 1).at(-1)!.observation);
    expect(obs.eval_expression).toMatch(/^tool invoke error: Invalid expression "1 \+\* 2"/);
    expect(obs.no_such_tool).toBe('there is not a tool named no_such_tool');
    const [m] = await messages(apiKey, frames.at(-1)!.conversation_id);
    expect(m!.agent_thoughts.map((t: { position: number }) => t.position)).toEqual([1, 2, 3]);
    expect(m!.status).toBe('normal');
  });

  it('max_iteration over AGENT_MAX_ITERATIONS is an error naming the setting', async () => {
    const { apiKey } = await s.importApp(agentChatApp({ tools: [MATH], maxIteration: 9 }));
    const frames = await stream(apiKey, { query: 'x' });
    expect(frames.at(-1)).toMatchObject({ event: 'error', code: 'completion_request_error', status: 400, message: 'model_config.agent_mode.max_iteration is 9, over the limit of 8 (AGENT_MAX_ITERATIONS)' });
    expect(fake.requests).toHaveLength(0);
  });

  it('a tool that cannot run here: an import warning, and the answer fails naming the tool and its setting', async () => {
    const { apiKey, appId } = await s.importApp(agentChatApp({ tools: [MATH, { provider: 'tavily', name: 'tavily_search', params: { search_depth: 'basic' } }, { ...TIME, enabled: false }] }));
    const app = (await s.runtime.apps.find(appId))!;
    expect(await s.runtime.appWarnings(app)).toEqual([
      {
        node_id: 'model_config.agent_mode.tools[1]',
        node_type: 'agent-chat',
        part: 'tool tavily/tavily_search',
        setting: 'TAVILY_API_KEY',
        message: 'model_config.agent_mode.tools[1] (agent-chat): tool "tavily_search" of provider "tavily" is not configured: set TAVILY_API_KEY (or tools.tavily.api_key in dovetail.yaml)',
      },
    ]);
    const frames = await stream(apiKey, { query: 'search' });
    expect(frames.at(-1)).toMatchObject({ event: 'error', code: 'completion_request_error', status: 400 });
    expect(frames.at(-1)!.message).toBe(
      'agent-chat app "Calculator agent" (model_config.agent_mode.tools): tool "tavily_search" of provider "tavily" is not configured: set TAVILY_API_KEY (or tools.tavily.api_key in dovetail.yaml)',
    );
    expect(fake.requests).toHaveLength(0);
    const [m] = await messages(apiKey, frames.at(-1)!.conversation_id);
    expect(m).toMatchObject({ status: 'error', error: frames.at(-1)!.message });
  });

  it('a stop during a tool call aborts the call; the message ends stopped with its thoughts so far', async () => {
    fake.behaviour = { toolCalls: () => [{ name: 'webscraper', arguments: JSON.stringify({ url: `${pageBase}/hang` }) }] };
    const { apiKey } = await s.importApp(agentChatApp({ tools: [SCRAPER] }));
    const r = await send(apiKey, { inputs: { persona: 'x' }, query: 'fetch', user: 'ann', response_mode: 'streaming' });
    const frames: SseFrame[] = [];
    const before = hang.arrived;
    for await (const f of readSse(r)) {
      frames.push(f);
      if (f.kind === 'data' && f.data.event === 'agent_thought' && f.data.tool === 'webscraper' && f.data.observation === '') {
        while (hang.arrived === before) await new Promise((resolve) => setTimeout(resolve, 10));
        // someone else's stop does nothing; the owner's stops the tool call
        const other = await fetch(`${s.api}/chat-messages/${String(f.data.task_id)}/stop`, { method: 'POST', headers: headers(apiKey), body: JSON.stringify({ user: 'bob' }) });
        expect(await other.json()).toEqual({ result: 'success' });
        const stop = await fetch(`${s.api}/chat-messages/${String(f.data.task_id)}/stop`, { method: 'POST', headers: headers(apiKey), body: JSON.stringify({ user: 'ann' }) });
        expect(await stop.json()).toEqual({ result: 'success' });
      }
    }
    const events = dataFrames(frames);
    for (const e of events) validateSchema('ChunkChatEvent', e);
    expect(events.at(-1)!.event).toBe('message_end');
    for (let i = 0; i < 200 && hang.closed < hang.arrived; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(hang.closed).toBe(hang.arrived);
    const [m] = await messages(apiKey, events.at(-1)!.conversation_id as string);
    expect(m!.status).toBe('stopped');
    expect(m!.agent_thoughts).toHaveLength(1);
    expect(m!.agent_thoughts[0]).toMatchObject({ tool: 'webscraper', observation: '' });
  });
});

describe('agent-chat apps calling a workflow of this server as a tool', () => {
  it('the workflow runs as a run of the answer\'s end user, its outputs are the observation', async () => {
    const inner = await s.importApp(workflowDsl([startNode([{ variable: 'name' }]), endNode({ greeting: ['start', 'name'] })], [['start', 'end']], { name: 'echo' }));
    fake.behaviour = {
      toolCalls: (body) => (toolMessages(body).length === 0 ? [{ name: 'echo', arguments: JSON.stringify({ name: 'Ada' }) }] : undefined),
      reply: (body) => `The tool said ${toolMessages(body)[0]!.content}`,
    };
    const { apiKey } = await s.importApp(agentChatApp({ tools: [{ provider: inner.appId, type: 'workflow', name: 'echo', params: {} }], name: 'Workflow agent' }));
    const frames = await stream(apiKey, { query: 'Greet Ada' });
    const answer = frames.filter((f) => f.event === 'agent_message').map((f) => f.answer).join('');
    expect(answer).toBe('The tool said {"greeting": "Ada"}');
    // the inner run is in the inner app's logs, as a run of the same `user`
    const logs = await fetch(`${s.api}/workflows/logs`, { headers: headers(inner.apiKey) });
    const runs = (await logs.json()).data as Record<string, any>[];
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({ workflow_run: { status: 'succeeded' }, created_by_end_user: { session_id: 'ann' } });
  });
});

describe('agent-chat apps: ReAct, conversations, feedback', () => {
  it('strategy react: Dify\'s ReAct prompt, the action as the thought\'s tool, the final answer streamed', async () => {
    fake.behaviour = {
      reply: (body) => {
        const msgs = body.messages as { role: string }[];
        if (!msgs.some((m) => m.role === 'assistant')) return 'Thought: I should compute.\nAction:\n```\n{"action": "eval_expression", "action_input": {"expression": "6*7"}}\n```\n';
        return 'Thought: I know what to respond\nAction:\n```\n{"action": "Final Answer", "action_input": "The answer is 42"}\n```';
      },
    };
    const { apiKey } = await s.importApp(agentChatApp({ tools: [MATH], strategy: 'react' }));
    const frames = await stream(apiKey, { query: 'what is 6*7?' });
    expect(fake.requests[0]!.body.tools).toBeUndefined();
    expect((fake.requests[0]!.body.messages as { content: string }[])[0]!.content).toContain('You are a careful calculator.\n\nYou have access to the following tools:');
    expect(frames.filter((f) => f.event === 'agent_message').map((f) => f.answer).join('')).toBe('The answer is 42');
    const r1 = frames.filter((f) => f.event === 'agent_thought' && f.position === 1).at(-1)!;
    expect(r1).toMatchObject({ thought: 'I should compute.', tool: 'eval_expression', tool_input: JSON.stringify({ eval_expression: { expression: '6*7' } }), observation: JSON.stringify({ eval_expression: '42' }) });
  });

  it('a conversation continues with its history; feedback, conversations list and delete work as for chat apps', async () => {
    const { apiKey } = await s.importApp(agentChatApp({ tools: [MATH] }));
    fake.behaviour = { reply: 'First answer.' };
    const one = await stream(apiKey, { query: 'first' });
    const conversationId = one.at(-1)!.conversation_id as string;
    fake.behaviour = { reply: 'Second answer.' };
    const two = await stream(apiKey, { query: 'second', conversation_id: conversationId, inputs: {} });
    expect(two.at(-1)!.conversation_id).toBe(conversationId);
    // the second request carried the first exchange, after the system prompt of the conversation's inputs
    expect(fake.requests.at(-1)!.body.messages).toEqual([
      { role: 'system', content: 'You are a careful calculator.' },
      { role: 'user', content: 'first' },
      { role: 'assistant', content: 'First answer.' },
      { role: 'user', content: 'second' },
    ]);
    const list = await messages(apiKey, conversationId);
    expect(list.map((m) => m.answer)).toEqual(['First answer.', 'Second answer.']);
    expect(list.map((m) => m.agent_thoughts.length)).toEqual([1, 1]);

    const fb = await fetch(`${s.api}/messages/${String(two.at(-1)!.message_id)}/feedbacks`, { method: 'POST', headers: headers(apiKey), body: JSON.stringify({ rating: 'like', user: 'ann' }) });
    expect(fb.status).toBe(200);
    expect(await fb.json()).toEqual({ result: 'success' });
    const convs = await (await fetch(`${s.api}/conversations?user=ann`, { headers: headers(apiKey) })).json();
    expect(convs.data.map((c: { id: string }) => c.id)).toContain(conversationId);
    const del = await fetch(`${s.api}/conversations/${conversationId}`, { method: 'DELETE', headers: headers(apiKey), body: JSON.stringify({ user: 'ann' }) });
    expect(del.status).toBe(204);
    const gone = await s.runtime.store.db.selectFrom('message_agent_thoughts').select('id').where('message_id', 'in', list.map((m) => m.id as string)).execute();
    expect(gone).toEqual([]);
  });

  it('annotation reply answers instead of the agent, as Dify\'s direct output (`message` events)', async () => {
    const { apiKey } = await s.importApp(agentChatApp({ tools: [MATH] }));
    const api = (path: string, body?: unknown) => fetch(`${s.api}${path}`, { method: body === undefined ? 'GET' : 'POST', headers: headers(apiKey), ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
    expect((await api('/apps/annotations', { question: 'What is the house rule?', answer: 'Always carry the one.' })).status).toBe(201);
    const started = await (await api('/apps/annotation-reply/enable', { score_threshold: 0.5, embedding_provider_name: 'openai', embedding_model_name: 'text-embedding-3-small' })).json();
    for (;;) {
      const st = await (await api(`/apps/annotation-reply/enable/status/${String(started.job_id)}`)).json();
      if (st.job_status === 'completed') break;
      expect(st.job_status).not.toBe('error');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    fake.requests.length = 0;
    const frames = await stream(apiKey, { query: 'What is the house rule?' });
    expect(fake.requests.filter((r) => r.path.endsWith('/chat/completions'))).toHaveLength(0);
    expect(frames.filter((f) => f.event === 'agent_thought' || f.event === 'agent_message')).toEqual([]);
    expect(frames.filter((f) => f.event === 'message').map((f) => f.answer).join('')).toBe('Always carry the one.');
    expect(frames.at(-1)).toMatchObject({ event: 'message_end', metadata: { annotation_reply: { id: expect.any(String) } } });
    const [m] = await messages(apiKey, frames.at(-1)!.conversation_id);
    expect(m).toMatchObject({ answer: 'Always carry the one.', agent_thoughts: [] });
  });

  it('GET /parameters shows the opening statement, suggested questions and the input form', async () => {
    const { apiKey } = await s.importApp(agentChatApp({ tools: [MATH] }));
    const p = await (await fetch(`${s.api}/parameters`, { headers: headers(apiKey) })).json();
    expect(p).toMatchObject({ opening_statement: 'Ask me a sum.', suggested_questions: ['What is 6 times 7?'], user_input_form: [{ 'text-input': { variable: 'persona', required: true } }] });
    const info = await (await fetch(`${s.api}/info`, { headers: headers(apiKey) })).json();
    expect(info.mode).toBe('agent-chat');
  });
});

describe('agent-chat apps through the official dify-client ChatClient', () => {
  it('a streamed agent answer with a tool call, then the conversation\'s messages with their thoughts', async () => {
    fake.behaviour = {
      toolCalls: (body) => (toolMessages(body).length === 0 ? [{ name: 'eval_expression', arguments: JSON.stringify({ expression: '2^10' }) }] : undefined),
      reply: (body) => `It is ${toolMessages(body)[0]!.content}.`,
    };
    const { apiKey } = await s.importApp(agentChatApp({ tools: [MATH] }));
    const chat = new ChatClient(apiKey, s.api);
    const user = 'sdk-user' as unknown as object;
    const r = await chat.createChatMessage({ persona: 'quick' }, 'What is 2 to the 10th?', user, true);
    let text = '';
    for await (const chunk of r.data as Readable) text += (chunk as Buffer).toString('utf8');
    const frames = dataFrames(parseSse(text));
    for (const f of frames) validateSchema('ChunkChatEvent', f);
    expect(frames.filter((f) => f.event === 'agent_message').map((f) => f.answer).join('')).toBe('It is 1024.');
    const conversationId = frames.at(-1)!.conversation_id as string;
    const msgs = await chat.getConversationMessages(user, conversationId);
    validateResponse('/messages', 'get', 200, msgs.data);
    expect(msgs.data.data[0].agent_thoughts.map((t: { tool: string }) => t.tool)).toEqual(['eval_expression', '']);
    const blocking = await chat.createChatMessage({ persona: 'quick' }, 'again', user, false).catch((e: { response: { status: number; data: unknown } }) => e.response);
    expect(blocking).toMatchObject({ status: 400, data: { code: 'invalid_param', message: 'Agent Chat App does not support blocking mode', status: 400 } });
  });
});
