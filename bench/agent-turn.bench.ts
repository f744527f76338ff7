import { stringify } from 'yaml';
import { benchServer, fmt, median, percentile } from './lib.js';
import { startFakeOpenAI } from '../test/helpers/fake-openai.js';
import { openAiCompatibleProviders } from '../test/helpers/openai-providers.js';
import { builtinToolRegistry } from '../src/tools/tool-registry.js';
import { readToolsConfig } from '../src/tools/tool-config.js';

const RUNS = 100;
const WARMUP = 10;
const EXPRESSIONS = ['6 * 7', 'sqrt(144) + 1', '2 ^ 10'];

/** How many tool answers a request carries: the model asks for the next tool until it has all three. */
const toolAnswers = (body: Record<string, unknown>) => (body.messages as { role: string }[]).filter((m) => m.role === 'tool').length;

function dsl(): string {
  return stringify({
    app: { name: 'agent-bench', mode: 'workflow' },
    kind: 'app',
    version: '0.3.1',
    workflow: {
      graph: {
        nodes: [
          { id: 'start', data: { type: 'start', title: 'Start', variables: [{ variable: 'q', label: 'q', type: 'text-input', required: true }] } },
          {
            id: 'agent',
            data: {
              type: 'agent',
              title: 'Agent',
              agent_strategy_provider_name: 'langgenius/agent/agent',
              agent_strategy_name: 'function_calling',
              agent_parameters: {
                model: { type: 'constant', value: { provider: 'openai', model: 'gpt-bench', mode: 'chat', completion_params: {} } },
                tools: { type: 'constant', value: [{ enabled: true, provider_name: 'math', tool_name: 'eval_expression', type: 'builtin' }] },
                instruction: { type: 'constant', value: 'Compute.' },
                query: { type: 'constant', value: '{{#start.q#}}' },
                maximum_iterations: { type: 'constant', value: 5 },
              },
            },
          },
          { id: 'end', data: { type: 'end', title: 'End', outputs: [{ variable: 'out', value_selector: ['agent', 'text'] }] } },
        ],
        edges: [
          { source: 'start', target: 'agent' },
          { source: 'agent', target: 'end' },
        ],
      },
    },
  });
}

/** The same agent as an agent-chat app (Dify's "Agent"): its turns stream on POST /chat-messages. */
function agentChatDsl(): string {
  return stringify({
    app: { name: 'agent-chat-bench', mode: 'agent-chat' },
    kind: 'app',
    version: '0.3.1',
    model_config: {
      model: { provider: 'openai', name: 'gpt-bench', mode: 'chat', completion_params: {} },
      pre_prompt: 'Compute.',
      agent_mode: {
        enabled: true,
        strategy: 'function_call',
        max_iteration: 5,
        tools: [{ enabled: true, provider_id: 'math', provider_name: 'math', provider_type: 'builtin', tool_name: 'eval_expression', tool_label: 'Math', tool_parameters: {} }],
      },
      user_input_form: [],
    },
  });
}

async function timed(n: number, f: () => Promise<void>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n + WARMUP; i++) {
    const t = performance.now();
    await f();
    if (i >= WARMUP) out.push(performance.now() - t);
  }
  return out;
}

/**
 * One agent turn with three tool calls (function calling against a local fake model, the built-in
 * math tool): 4 model calls + 3 tool calls = 7 steps. Baseline in the same process: the same 4
 * streamed model requests sent straight to the fake model, plus the 3 tool calls through the tool
 * registry directly. Dovetail's added time per step = (run p50 − direct p50) / 7; the run also
 * pays the workflow run itself (HTTP, auth, events). The same turn as an agent-chat app (streamed
 * `agent_thought` / `agent_message` events, the message and its thoughts stored) against the same
 * baseline.
 */
export async function run(): Promise<void> {
  const fake = await startFakeOpenAI({
    toolCalls: (body) => {
      const n = toolAnswers(body);
      return n < EXPRESSIONS.length ? [{ name: 'eval_expression', arguments: JSON.stringify({ expression: EXPRESSIONS[n]! }) }] : undefined;
    },
    reply: 'The answers are 42, 13 and 1024.',
  });
  const s = await benchServer({}, {}, { providers: openAiCompatibleProviders(fake.baseUrl) });
  const a = await s.runtime.apps.importDsl(dsl());
  const key = (await s.runtime.keys.create('app', a.workspaceId, a.id)).apiKey;
  const agent = await timed(RUNS, async () => {
    const r = await fetch(`${s.url}/v1/workflows/run`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ inputs: { q: 'compute three things' }, response_mode: 'blocking', user: 'bench' }) });
    const b = (await r.json()) as { data: { status: string; outputs: { out: string } } };
    if (b.data.status !== 'succeeded' || !b.data.outputs.out.startsWith('The answers')) throw new Error(`run failed: ${JSON.stringify(b).slice(0, 300)}`);
  });

  // the direct baseline: the same requests the agent sends, then the tools in process
  const registry = builtinToolRegistry(readToolsConfig({}, {}), []);
  const found = await registry.resolve({ providerType: 'builtin', providerId: 'math', toolName: 'eval_expression' });
  if ('error' in found || !found.tool) throw new Error('math tool missing');
  const tool = found.tool;
  const requests = fake.requests.slice(-4).map((r) => r.body);
  const signal = new AbortController().signal;
  const direct = await timed(RUNS, async () => {
    for (const [i, body] of requests.entries()) {
      const r = await fetch(`${fake.baseUrl}/chat/completions`, { method: 'POST', headers: { authorization: 'Bearer test-key', 'content-type': 'application/json' }, body: JSON.stringify(body) });
      await r.text();
      if (i < EXPRESSIONS.length) await registry.invoke(tool, { expression: EXPRESSIONS[i] }, { signal, now: Date.now });
    }
  });
  const perStep = (median(agent) - median(direct)) / 7;

  const chatApp = await s.runtime.apps.importDsl(agentChatDsl());
  const chatKey = (await s.runtime.keys.create('app', chatApp.workspaceId, chatApp.id)).apiKey;
  const chat = await timed(RUNS, async () => {
    const r = await fetch(`${s.url}/v1/chat-messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${chatKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ inputs: {}, query: 'compute three things', response_mode: 'streaming', user: 'bench' }),
    });
    const text = await r.text();
    const frames = text.split('\n\n').filter((f) => f.startsWith('data: ')).map((f) => JSON.parse(f.slice(6)) as { event: string; answer?: string; tool?: string });
    const answer = frames.filter((f) => f.event === 'agent_message').map((f) => f.answer).join('');
    const calls = frames.filter((f) => f.event === 'agent_thought' && f.tool === 'eval_expression').length;
    if (frames.at(-1)?.event !== 'message_end' || !answer.startsWith('The answers') || calls === 0) throw new Error(`agent-chat turn failed: ${text.slice(-300)}`);
  });
  const chatPerStep = (median(chat) - median(direct)) / 7;
  process.stdout.write(
    [
      `agent turn (function_calling, 3 tool calls = 4 model + 3 tool steps)   p50 ${fmt(median(agent), 2)} ms  p95 ${fmt(percentile(agent, 95), 2)} ms`,
      `agent-chat turn (POST /chat-messages streaming, same 3 tool calls)    p50 ${fmt(median(chat), 2)} ms  p95 ${fmt(percentile(chat, 95), 2)} ms`,
      `  baseline: the same 4 model requests + 3 tool calls, direct            p50 ${fmt(median(direct), 2)} ms`,
      `  added by Dovetail per step, workflow agent node ((run p50 − direct p50) / 7)   ${fmt(perStep, 2)} ms`,
      `  added by Dovetail per step, agent-chat app ((turn p50 − direct p50) / 7)       ${fmt(chatPerStep, 2)} ms`,
    ].join('\n') + '\n',
  );
  await s.close();
  await fake.close();
}
