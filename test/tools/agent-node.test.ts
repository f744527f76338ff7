import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { openAiCompatibleProviders } from '../helpers/openai-providers.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { dataFrames, readSse, type SseFrame } from '../helpers/sse.js';
import { endNode, startNode, workflowDsl } from '../helpers/workflow-dsl.js';

/**
 * The agent node against a local fake model that asks for tools (OpenAI tool_calls for
 * function_calling, the ReAct text protocol for ReAct), with real built-in tools: math, time,
 * and the webscraper pointed at a local page server that can hold requests.
 */
let s: TestServer;
let fake: FakeOpenAI;
let pages: Server;
let pageBase = '';
/** Requests to `/barrier/*` are held until `barrier` of them have arrived (proves concurrency). */
const barrier = { want: 0, held: [] as ServerResponse[] };
/** Requests to `/hang` are held forever; `closed` counts those the client gave up. */
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
  s = await startServer({ runtime: { providers: openAiCompatibleProviders(fake.baseUrl) }, env: { SSRF_ALLOW_HOSTS: '127.0.0.1', AGENT_MAX_ITERATIONS: '10' } });
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

const tool = (provider: string, name: string, settings: Record<string, unknown> = {}) => ({
  enabled: true,
  provider_name: provider,
  tool_name: name,
  type: 'builtin',
  parameters: {},
  settings: Object.fromEntries(Object.entries(settings).map(([k, v]) => [k, { value: v }])),
});

function agentApp(strategy: 'function_calling' | 'ReAct', tools: unknown[], maxIterations = 5, provider = 'langgenius/agent/agent'): string {
  return workflowDsl(
    [
      startNode([{ variable: 'q' }]),
      {
        id: 'agent',
        type: 'agent',
        title: 'Agent',
        agent_strategy_provider_name: provider,
        agent_strategy_name: strategy,
        agent_parameters: {
          model: { type: 'constant', value: { provider: 'openai', model: 'gpt-test', mode: 'chat', completion_params: { temperature: 0.1 } } },
          tools: { type: 'constant', value: tools },
          instruction: { type: 'constant', value: 'You are a calculator.' },
          query: { type: 'constant', value: '{{#start.q#}}' },
          maximum_iterations: { type: 'constant', value: maxIterations },
        },
      },
      endNode({ text: ['agent', 'text'], json: ['agent', 'json'] }),
    ],
    [['start', 'agent'], ['agent', 'end']],
  );
}

const headers = (key: string) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' });
async function runStreaming(dsl: string, q: string): Promise<{ events: Record<string, any>[]; key: string }> {
  const { apiKey } = await s.importApp(dsl);
  const r = await fetch(`${s.api}/workflows/run`, { method: 'POST', headers: headers(apiKey), body: JSON.stringify({ inputs: { q }, user: 'u', response_mode: 'streaming' }) });
  expect(r.status).toBe(200);
  const frames: SseFrame[] = [];
  for await (const f of readSse(r)) frames.push(f);
  return { events: dataFrames(frames), key: apiKey };
}
const finished = (events: Record<string, any>[]) => events.find((e) => e.event === 'workflow_finished')!.data;
const toolMessages = (body: Record<string, unknown>) => (body.messages as { role: string }[]).filter((m) => m.role === 'tool');

describe('agent node, function_calling', () => {
  it('calls the tools the model asks for (in parallel), gives their answers back, ends with the model text', async () => {
    // round 1: two calls at once; round 2 (tool answers present): the text answer
    fake.behaviour = {
      toolCalls: (body) => (toolMessages(body).length === 0 ? [{ name: 'eval_expression', arguments: JSON.stringify({ expression: '6 * 7' }) }, { name: 'current_time', arguments: JSON.stringify({}) }] : undefined),
      reply: (body) => `results: ${toolMessages(body).map((m) => (m as unknown as { content: string }).content).join(' | ')}`,
    };
    const { events } = await runStreaming(agentApp('function_calling', [tool('math', 'eval_expression'), tool('time', 'current_time', { format: '%Y', timezone: 'UTC' })]), 'what is 6 times 7?');
    const d = finished(events);
    expect(d.status).toBe('succeeded');
    expect(d.outputs.text).toMatch(/^results: 42 \| \d{4}$/);
    // the request offered both tools as functions with their llm parameters
    const first = fake.requests[0]!.body;
    expect(first.tools).toEqual([
      { type: 'function', function: { name: 'eval_expression', description: expect.any(String), parameters: { type: 'object', properties: { expression: { type: 'string', description: 'The mathematical expression to evaluate' } }, required: ['expression'] } } },
      { type: 'function', function: { name: 'current_time', description: expect.any(String), parameters: { type: 'object', properties: {}, required: [] } } },
    ]);
    expect(first.messages).toEqual([{ role: 'system', content: 'You are a calculator.' }, { role: 'user', content: 'what is 6 times 7?' }]);
    // round 2 carried the assistant's calls and one tool message per call, by id
    const second = fake.requests[1]!.body.messages as Record<string, any>[];
    expect(second[2]).toMatchObject({ role: 'assistant', tool_calls: [{ type: 'function', function: { name: 'eval_expression', arguments: '{"expression":"6 * 7"}' } }, { function: { name: 'current_time' } }] });
    expect(second[3]).toEqual({ role: 'tool', tool_call_id: second[2]!.tool_calls[0].id, content: '42' });
    // agent_log events: each entry sent at start and at its end, with Dify's labels
    const logs = events.filter((e) => e.event === 'agent_log').map((e) => e.data);
    expect(logs.every((l) => l.node_id === 'agent' && typeof l.node_execution_id === 'string' && l.node_execution_id !== '')).toBe(true);
    const ended = logs.filter((l) => l.status !== 'start').map((l) => l.label);
    expect(ended).toEqual(expect.arrayContaining(['ROUND 1', 'gpt-test Thought', 'CALL eval_expression', 'CALL current_time', 'ROUND 2']));
    const call = logs.find((l) => l.label === 'CALL eval_expression' && l.status === 'success');
    expect(call.data.output).toMatchObject({ tool_call_name: 'eval_expression', tool_call_args: { expression: '6 * 7' }, tool_response: '42' });
    expect(call.parent_id).toBe(logs.find((l) => l.label === 'ROUND 1').id);
    expect(d.outputs.json.agent_logs.map((l: { label: string }) => l.label)).toEqual(['ROUND 1', 'gpt-test Thought', 'CALL eval_expression', 'CALL current_time', 'ROUND 2', 'gpt-test Thought']);
  });

  it('parallel calls really run at once: two page fetches that are only answered together', async () => {
    barrier.want = 2;
    fake.behaviour = {
      toolCalls: (body) => (toolMessages(body).length === 0 ? [{ name: 'webscraper', arguments: JSON.stringify({ url: `${pageBase}/barrier/a` }) }, { name: 'webscraper', arguments: JSON.stringify({ url: `${pageBase}/barrier/b` }) }] : undefined),
      reply: () => 'both fetched',
    };
    const { events } = await runStreaming(agentApp('function_calling', [tool('webscraper', 'webscraper')]), 'fetch both');
    expect(finished(events)).toMatchObject({ status: 'succeeded', outputs: { text: 'both fetched' } });
    expect(toolMessages(fake.requests[1]!.body).map((m) => (m as unknown as { content: string }).content)).toEqual(['page body', 'page body']);
  });

  it('a failing tool is an observation for the model, not a run failure', async () => {
    fake.behaviour = {
      toolCalls: (body) => (toolMessages(body).length === 0 ? [{ name: 'eval_expression', arguments: JSON.stringify({ expression: '1 +* 2' }) }, { name: 'no_such_tool', arguments: '{}' }] : undefined),
      reply: () => 'sorry',
    };
    const { events } = await runStreaming(agentApp('function_calling', [tool('math', 'eval_expression')]), 'x');
    expect(finished(events)).toMatchObject({ status: 'succeeded', outputs: { text: 'sorry' } });
    const answers = toolMessages(fake.requests[1]!.body).map((m) => (m as unknown as { content: string }).content);
    expect(answers[0]).toMatch(/^tool invoke error: Invalid expression "1 \+\* 2"/);
    expect(answers[1]).toBe('there is not a tool named no_such_tool');
    expect(events.find((e) => e.event === 'agent_log' && e.data.label === 'CALL eval_expression' && e.data.status === 'error')).toBeDefined();
  });

  it('maximum_iterations ends the loop: the last round offers no tools and its answer is the text', async () => {
    fake.behaviour = { toolCalls: (body) => (body.tools ? [{ name: 'eval_expression', arguments: JSON.stringify({ expression: '1+1' }) }] : undefined), reply: () => 'final after limit' };
    const { events } = await runStreaming(agentApp('function_calling', [tool('math', 'eval_expression')], 3), 'loop');
    expect(finished(events)).toMatchObject({ status: 'succeeded', outputs: { text: 'final after limit' } });
    expect(fake.requests).toHaveLength(3);
    expect(fake.requests.map((r) => Boolean(r.body.tools))).toEqual([true, true, false]);
  });

  it('maximum_iterations over AGENT_MAX_ITERATIONS fails naming the setting', async () => {
    const { events } = await runStreaming(agentApp('function_calling', [], 11), 'x');
    expect(finished(events)).toMatchObject({ status: 'failed', error: 'agent_parameters.maximum_iterations is 11, over the limit of 10 (AGENT_MAX_ITERATIONS)' });
  });

  it('a stop during a tool call aborts the call and ends the run stopped', async () => {
    fake.behaviour = { toolCalls: () => [{ name: 'webscraper', arguments: JSON.stringify({ url: `${pageBase}/hang` }) }] };
    const { apiKey } = await s.importApp(agentApp('function_calling', [tool('webscraper', 'webscraper')]));
    const r = await fetch(`${s.api}/workflows/run`, { method: 'POST', headers: headers(apiKey), body: JSON.stringify({ inputs: { q: 'x' }, user: 'u', response_mode: 'streaming' }) });
    const frames: SseFrame[] = [];
    const before = hang.arrived;
    for await (const f of readSse(r)) {
      frames.push(f);
      if (f.kind === 'data' && f.data.event === 'agent_log' && (f.data.data as { label: string; status: string }).label === 'CALL webscraper' && (f.data.data as { status: string }).status === 'start') {
        while (hang.arrived === before) await new Promise((resolve) => setTimeout(resolve, 10));
        const stop = await fetch(`${s.api}/workflows/tasks/${String(f.data.task_id)}/stop`, { method: 'POST', headers: headers(apiKey), body: JSON.stringify({ user: 'u' }) });
        expect(await stop.json()).toEqual({ result: 'success' });
      }
    }
    const events = dataFrames(frames);
    expect(events.at(-1)).toMatchObject({ event: 'workflow_finished', data: { status: 'stopped' } });
    for (let i = 0; i < 200 && hang.closed < hang.arrived; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(hang.closed).toBe(hang.arrived);
  });

  it('an unknown strategy imports and fails at run time naming it; an unavailable tool fails naming the tool', async () => {
    const unknown = await runStreaming(agentApp('function_calling', [], 3, 'someone/mcp_agent/mcp_agent'), 'x');
    expect(finished(unknown.events).error).toBe(
      'agent node "Agent" (agent): agent strategy "function_calling" of "someone/mcp_agent/mcp_agent" is not available on this server (available: langgenius/agent/agent function_calling, ReAct); choose one of them in the node',
    );
    const missing = await runStreaming(agentApp('function_calling', [tool('langgenius/google/google', 'google_search')]), 'x');
    expect(finished(missing.events).error).toMatch(/^agent node "Agent" \(agent\): tool "google_search" of provider "langgenius\/google\/google": the marketplace plugin/);
  });
});

describe('agent node, ReAct', () => {
  it('Dify\'s ReAct prompt, an Action blob, the Observation back in the scratchpad, then the Final Answer', async () => {
    fake.behaviour = {
      reply: (body) => {
        const msgs = body.messages as { role: string; content: string }[];
        if (!msgs.some((m) => m.role === 'assistant')) return 'Thought: I should compute.\nAction:\n```\n{"action": "eval_expression", "action_input": {"expression": "6*7"}}\n```\n';
        return 'Thought: I know what to respond\nAction:\n```\n{"action": "Final Answer", "action_input": "The answer is 42"}\n```';
      },
    };
    const { events } = await runStreaming(agentApp('ReAct', [tool('math', 'eval_expression')]), 'what is 6*7?');
    expect(finished(events)).toMatchObject({ status: 'succeeded', outputs: { text: 'The answer is 42' } });
    const first = fake.requests[0]!.body;
    expect(first.stop).toEqual(['Observation']);
    expect(first.tools).toBeUndefined();
    const system = (first.messages as { content: string }[])[0]!.content;
    expect(system).toContain('Respond to the human as helpfully and accurately as possible.\n\nYou are a calculator.\n\nYou have access to the following tools:');
    expect(system).toContain('Valid "action" values: "Final Answer" or "eval_expression"');
    const second = fake.requests[1]!.body.messages as { role: string; content: string }[];
    expect(second.slice(-2)).toEqual([
      { role: 'assistant', content: 'Thought: I should compute.\n\nAction: {"action": "eval_expression", "action_input": {"expression": "6*7"}}\n\nObservation: 42\n\n' },
      { role: 'user', content: 'continue' },
    ]);
    const call = events.find((e) => e.event === 'agent_log' && e.data.label === 'CALL eval_expression' && e.data.status === 'success');
    expect(call!.data.data.output.tool_response).toBe('42');
  });

  it('a plain string action_input goes to the tool\'s first parameter; an answer without a blob is final', async () => {
    fake.behaviour = {
      reply: (body) => ((body.messages as { role: string }[]).some((m) => m.role === 'assistant') ? 'It is 5.' : 'Action: {"action": "eval_expression", "action_input": "2+3"}'),
    };
    const { events } = await runStreaming(agentApp('ReAct', [tool('math', 'eval_expression')]), 'x');
    expect(finished(events).outputs.text).toBe('It is 5.');
    expect((fake.requests[1]!.body.messages as { content: string }[]).at(-2)!.content).toContain('Observation: 5');
  });
});
