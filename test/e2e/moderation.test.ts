import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.js';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { dataFrames, parseSse } from '../helpers/sse.js';
import { parse, stringify } from 'yaml';
import { llmNode, startNode, workflowDsl, type NodeSpec } from '../helpers/workflow-dsl.js';
import { validateSchema } from '../helpers/openapi.js';

/**
 * Issue 41, "Moderation is ignored": an app's `sensitive_word_avoidance` (keywords,
 * openai_moderation, api) and `external_data_tools` act on the real server, with the model and
 * the API-based extension as local HTTP servers.
 */

interface ExtensionCall {
  readonly authorization: string | undefined;
  readonly body: { point: string; params: Record<string, unknown> };
}

/** A local API-based extension (Dify's protocol): answers each point with `answer(body)`. */
async function startExtension(answer: (body: ExtensionCall['body']) => Record<string, unknown>) {
  const calls: ExtensionCall[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString()) as ExtensionCall['body'];
      calls.push({ authorization: req.headers.authorization, body });
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer(body)));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/moderate`,
    calls,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/** A chat-family app of `mode` with `extra` under `model_config` (YAML, indented two spaces). */
function app(name: string, extra: string, mode: 'chat' | 'completion' | 'agent-chat' = 'chat', prePrompt = 'You are {{persona}}.'): string {
  return `app:
  mode: ${mode}
  name: ${name}
kind: app
version: 0.3.1
model_config:
  model:
    provider: openai
    name: gpt-4o-mini
    mode: chat
    completion_params: {}
  pre_prompt: '${prePrompt}'
  user_input_form:
    - text-input:
        label: Persona
        variable: persona
        required: false
${extra}`;
}

const keywords = (inputs: boolean, outputs: boolean) => `  sensitive_word_avoidance:
    enabled: true
    type: keywords
    config:
      keywords: "badword\\nEvil Plan\\n"
      inputs_config:
        enabled: ${inputs}
        preset_response: Input refused.
      outputs_config:
        enabled: ${outputs}
        preset_response: Output refused.
`;

const apiModeration = (extensionId: string) => `  sensitive_word_avoidance:
    enabled: true
    type: api
    config:
      api_based_extension_id: ${extensionId}
      inputs_config:
        enabled: true
      outputs_config:
        enabled: true
`;

/** A chatflow answering `you said <query>` (or the model's answer), with keywords moderation in its `features` (inputs and outputs on). */
function chatflow(answer = 'you said {{#sys.query#}}', model = false): string {
  const nodes: NodeSpec[] = model ? [startNode(), llmNode('llm', '{{#sys.query#}}'), { id: 'answer', type: 'answer', answer: '{{#llm.text#}}' }] : [startNode(), { id: 'answer', type: 'answer', answer }];
  const edges: [string, string][] = model ? [['start', 'llm'], ['llm', 'answer']] : [['start', 'answer']];
  const doc = parse(workflowDsl(nodes, edges, { mode: 'advanced-chat', name: 'moderated chatflow' })) as { workflow: Record<string, unknown> };
  doc.workflow.features = {
    sensitive_word_avoidance: { enabled: true, type: 'keywords', config: { keywords: 'badword', inputs_config: { enabled: true, preset_response: 'Chatflow refused.' }, outputs_config: { enabled: true, preset_response: 'Chatflow answer refused.' } } },
  };
  return stringify(doc);
}

let fake: FakeOpenAI;
let ext: Awaited<ReturnType<typeof startExtension>>;
let s: TestServer;
let dir: string;
const keys: Record<string, string> = {};
const appIds: Record<string, string> = {};

beforeAll(async () => {
  fake = await startFakeOpenAI();
  ext = await startExtension(({ point, params }) => {
    if (point === 'app.moderation.input') {
      const q = String(params.query);
      if (q.includes('badword')) return { flagged: true, action: 'direct_output', preset_response: 'The extension refused.' };
      if (q.includes('rewrite me')) return { flagged: true, action: 'overridden', inputs: { persona: 'a librarian' }, query: 'a polite question' };
      return { flagged: false, action: 'direct_output' };
    }
    if (point === 'app.moderation.output') {
      const t = String(params.text);
      return t.includes('secret') ? { flagged: true, action: 'overridden', text: t.replaceAll('secret', '[redacted]') } : { flagged: false, action: 'direct_output' };
    }
    if (point === 'app.external_data_tool.query') return { result: `sunny for ${String((params.inputs as Record<string, unknown>).persona)}` };
    return {};
  });
  dir = mkdtempSync(path.join(os.tmpdir(), 'dovetail-moderation-'));
  const settings = path.join(dir, 'dovetail.yaml');
  writeFileSync(settings, `api_based_extensions:\n  - id: ext-1\n    name: house rules\n    api_endpoint: ${ext.url}\n    api_key: ext-secret-key\n`);
  s = await startServer({ env: { OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: fake.baseUrl, DOVETAIL_CONFIG: settings, SSRF_ALLOW_HOSTS: '127.0.0.1', MODERATION_BUFFER_SIZE: '8' } });
  const apps: Record<string, string> = {
    chat: app('keywords chat', keywords(true, true)),
    completion: app('keywords completion', keywords(true, true), 'completion'),
    outputsOnly: app('keywords outputs', keywords(false, true)),
    openai: app('openai moderation', `  sensitive_word_avoidance:
    enabled: true
    type: openai_moderation
    config:
      inputs_config:
        enabled: true
        preset_response: OpenAI says no.
      outputs_config:
        enabled: true
        preset_response: OpenAI says no to that answer.
`),
    api: app('api moderation', apiModeration('ext-1')),
    external: app('external data', `  external_data_tools:
    - variable: weather
      type: api
      enabled: true
      config:
        api_based_extension_id: ext-1
`, 'chat', 'The weather is {{weather}}.'),
    missing: app('missing extension', apiModeration('ext-missing')),
    chatflow: chatflow(),
    chatflowOut: chatflow('here is a badword for {{#sys.query#}}'),
    chatflowModel: chatflow(undefined, true),
    agent: app('keywords agent', `${keywords(true, true)}  agent_mode:
    enabled: true
    max_iteration: 3
    strategy: function_call
    tools: []
`, 'agent-chat'),
  };
  for (const [k, yaml] of Object.entries(apps)) {
    const r = await s.importApp(yaml);
    keys[k] = r.apiKey;
    appIds[k] = r.appId;
  }
});
afterAll(async () => {
  await s?.close();
  await fake?.close();
  await ext?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});
beforeEach(() => {
  fake.behaviour = {};
  fake.requests.length = 0;
  ext.calls.length = 0;
});

const send = (k: string, body: Record<string, unknown>, route = '/chat-messages') =>
  fetch(`${s.api}${route}`, { method: 'POST', headers: { authorization: `Bearer ${keys[k]}`, 'content-type': 'application/json' }, body: JSON.stringify({ inputs: {}, user: 'mod-user', ...body }) });
const stream = async (k: string, body: Record<string, unknown>, route = '/chat-messages') => {
  const r = await send(k, { ...body, response_mode: 'streaming' }, route);
  expect(r.status).toBe(200);
  return dataFrames(parseSse(await r.text()));
};
const modelCalls = () => fake.requests.filter((r) => r.path.endsWith('/chat/completions'));
const storedAnswer = async (k: string, conversationId: string) => {
  const r = await fetch(`${s.api}/messages?user=mod-user&conversation_id=${conversationId}`, { headers: { authorization: `Bearer ${keys[k]}` } });
  const body = (await r.json()) as { data: { answer: string; query: string }[] };
  return body.data.at(-1)!;
};

describe('keywords moderation', () => {
  it('a flagged query is answered with the preset response and never reaches the model (blocking)', async () => {
    const r = await send('chat', { query: 'say BADWORD please' });
    expect(r.status).toBe(200);
    const body = await r.json();
    expect(body).toMatchObject({ event: 'message', mode: 'chat', answer: 'Input refused.' });
    expect(modelCalls()).toEqual([]);
    expect(await storedAnswer('chat', body.conversation_id)).toMatchObject({ query: 'say BADWORD please', answer: 'Input refused.' });
  });

  it('a flagged input value counts too, and streaming sends the preset response as message events, then message_end', async () => {
    const frames = await stream('chat', { query: 'hello', inputs: { persona: 'someone with an evil plan' } });
    expect(modelCalls()).toEqual([]);
    expect(new Set(frames.slice(0, -1).map((f) => f.event))).toEqual(new Set(['message']));
    expect(frames.at(-1)!.event).toBe('message_end');
    expect(frames.filter((f) => f.event === 'message').map((f) => f.answer).join('')).toBe('Input refused.');
  });

  it('completion apps: a flagged query is answered with the preset response without a model call; a flagged answer is replaced', async () => {
    const r = await send('completion', { query: 'badword' }, '/completion-messages');
    expect(await r.json()).toMatchObject({ mode: 'completion', answer: 'Input refused.' });
    expect(modelCalls()).toEqual([]);
    fake.behaviour = { reply: 'the BadWord' };
    const frames = await stream('completion', { query: 'say it' }, '/completion-messages');
    expect(modelCalls()).toHaveLength(1);
    expect(frames.map((f) => f.event).slice(-2)).toEqual(['message_replace', 'message_end']);
    expect(frames.at(-2)).toMatchObject({ answer: 'Output refused.', reason: 'output_moderation' });
    validateSchema('StreamEventMessageReplace', frames.at(-2));
    expect(frames.at(-2)).not.toHaveProperty('conversation_id');
  });

  it('a clean query reaches the model and a clean answer is not replaced', async () => {
    fake.behaviour = { reply: 'All good here, nothing to see.' };
    const frames = await stream('chat', { query: 'hello there' });
    expect(modelCalls()).toHaveLength(1);
    expect(frames.filter((f) => f.event === 'message').map((f) => f.answer).join('')).toBe('All good here, nothing to see.');
    expect(frames.map((f) => f.event)).not.toContain('message_replace');
  });

  it('a flagged answer is replaced while it streams: message_replace with the preset response, the model call is stopped, the stored answer is the preset', async () => {
    // the model sends "badword" and then holds the stream open: only moderation can end this answer
    fake.behaviour = { reply: 'Sure, here is a badword and then a long tail nobody should read', chunkSize: 4, holdAfterChunks: 6 };
    const frames = await stream('outputsOnly', { query: 'tell me' });
    const replaced = frames.find((f) => f.event === 'message_replace');
    expect(replaced).toMatchObject({ answer: 'Output refused.', reason: 'output_moderation' });
    for (const f of frames.filter((x) => x.event === 'message_replace')) validateSchema('StreamEventChatMessageReplace', f);
    // nothing streams after the replacement, and it is not sent twice
    expect(frames.slice(frames.indexOf(replaced!) + 1).map((f) => f.event)).toEqual(['message_end']);
    await fake.waitForAbort();
    expect(await storedAnswer('outputsOnly', frames[0]!.conversation_id as string)).toMatchObject({ answer: 'Output refused.' });
  });

  it('blocking: a flagged answer comes back as the preset response', async () => {
    fake.behaviour = { reply: 'The evil plan is simple.' };
    const body = await (await send('outputsOnly', { query: 'tell me' })).json();
    expect(body.answer).toBe('Output refused.');
  });
});

describe('agent-chat apps', () => {
  it('a flagged query gets the preset response without a model call; a flagged answer is replaced and stored as the preset', async () => {
    const refused = await stream('agent', { query: 'badword' });
    expect(modelCalls()).toEqual([]);
    expect(refused.filter((f) => f.event === 'message').map((f) => f.answer).join('')).toBe('Input refused.');
    fake.behaviour = { reply: 'my evil plan, in detail' };
    const frames = await stream('agent', { query: 'what is your plan?' });
    expect(modelCalls()).toHaveLength(1);
    expect(frames.some((f) => f.event === 'agent_message')).toBe(true);
    expect(frames.filter((f) => f.event === 'message_replace').map((f) => [f.answer, f.reason])).toEqual([['Output refused.', 'output_moderation']]);
    expect(frames.at(-1)!.event).toBe('message_end');
    expect(await storedAnswer('agent', frames[0]!.conversation_id as string)).toMatchObject({ answer: 'Output refused.' });
  });
});

describe('openai_moderation', () => {
  it('asks the openai provider\'s /moderations; a flagged query gets the preset response and no model call', async () => {
    fake.behaviour = { flagWords: ['badword'] };
    const body = await (await send('openai', { query: 'say badword', inputs: { persona: 'a cat' } })).json();
    expect(body.answer).toBe('OpenAI says no.');
    expect(modelCalls()).toEqual([]);
    const mods = fake.requests.filter((r) => r.path.endsWith('/moderations'));
    expect(mods).toHaveLength(1);
    expect(mods[0]!.body).toEqual({ model: 'omni-moderation-latest', input: ['a cat\nsay badword'] });
    expect(mods[0]!.headers.authorization).toBe('Bearer sk-test');
  });

  it('a clean query reaches the model, and a flagged answer is replaced', async () => {
    fake.behaviour = { flagWords: ['forbidden'], reply: 'a forbidden answer' };
    const body = await (await send('openai', { query: 'hello' })).json();
    expect(modelCalls()).toHaveLength(1);
    expect(body.answer).toBe('OpenAI says no to that answer.');
  });
});

describe('api moderation (API-based extension)', () => {
  it('posts app.moderation.input with the bearer key; direct_output answers with the extension\'s preset response', async () => {
    const body = await (await send('api', { query: 'a badword here', inputs: { persona: 'a cat' } })).json();
    expect(body.answer).toBe('The extension refused.');
    expect(modelCalls()).toEqual([]);
    expect(ext.calls).toEqual([{ authorization: 'Bearer ext-secret-key', body: { point: 'app.moderation.input', params: { app_id: appIds.api, inputs: { persona: 'a cat' }, query: 'a badword here' } } }]);
  });

  it('overridden: the extension\'s inputs and query go to the model; the message keeps the caller\'s query', async () => {
    fake.behaviour = { reply: 'fine' };
    const body = await (await send('api', { query: 'rewrite me', inputs: { persona: 'a pirate' } })).json();
    expect(modelCalls()).toHaveLength(1);
    expect(modelCalls()[0]!.body.messages).toEqual([
      { role: 'system', content: 'You are a librarian.' },
      { role: 'user', content: 'a polite question' },
    ]);
    expect(await storedAnswer('api', body.conversation_id)).toMatchObject({ query: 'rewrite me', answer: 'fine' });
  });

  it('output: app.moderation.output with the answer; overridden text replaces it', async () => {
    fake.behaviour = { reply: 'the secret is out' };
    const frames = await stream('api', { query: 'hello' });
    expect(frames.at(-2)).toMatchObject({ event: 'message_replace', answer: 'the [redacted] is out' });
    expect(ext.calls.some((c) => c.body.point === 'app.moderation.output' && c.body.params.text === 'the secret is out' && c.body.params.app_id === appIds.api)).toBe(true);
    expect(await storedAnswer('api', frames[0]!.conversation_id as string)).toMatchObject({ answer: 'the [redacted] is out' });
  });
});

describe('external_data_tools', () => {
  it('fills the variable from app.external_data_tool.query before the prompt is built', async () => {
    fake.behaviour = { reply: 'ok' };
    const r = await send('external', { query: 'how is the weather?', inputs: { persona: 'Ann' } });
    expect(r.status).toBe(200);
    expect(ext.calls).toEqual([{ authorization: 'Bearer ext-secret-key', body: { point: 'app.external_data_tool.query', params: { app_id: appIds.external, tool_variable: 'weather', inputs: { persona: 'Ann' }, query: 'how is the weather?' } } }]);
    expect(modelCalls()[0]!.body.messages).toEqual([
      { role: 'system', content: 'The weather is sunny for Ann.' },
      { role: 'user', content: 'how is the weather?' },
    ]);
  });
});

describe('an extension missing from dovetail.yaml', () => {
  it('is an import warning naming it and api_based_extensions', async () => {
    const a = (await s.runtime.apps.find(appIds.missing!))!;
    const warnings = await s.runtime.appWarnings(a);
    expect(warnings).toEqual([
      expect.objectContaining({ node_id: 'sensitive_word_avoidance.config.api_based_extension_id', setting: 'api_based_extensions', message: expect.stringContaining('"ext-missing"') }),
    ]);
    expect(await s.runtime.appWarnings((await s.runtime.apps.find(appIds.api!))!)).toEqual([]);
  });

  it('fails a run with 400 invalid_param naming the extension id and the setting, before any model call', async () => {
    const r = await send('missing', { query: 'hello' });
    expect(r.status).toBe(400);
    const body = await r.json();
    expect(body.code).toBe('invalid_param');
    expect(body.message).toContain('ext-missing');
    expect(body.message).toContain('sensitive_word_avoidance.config.api_based_extension_id');
    expect(body.message).toContain('api_based_extensions');
    expect(modelCalls()).toEqual([]);
  });
});

describe('chatflows (features.sensitive_word_avoidance)', () => {
  it('a flagged query is answered with the preset response and no workflow run', async () => {
    const frames = await stream('chatflow', { query: 'a badword' });
    expect(frames.map((f) => f.event)).toEqual(['message', 'message_end']);
    expect(frames[0]).toMatchObject({ answer: 'Chatflow refused.' });
    expect(await storedAnswer('chatflow', frames[0]!.conversation_id as string)).toMatchObject({ query: 'a badword', answer: 'Chatflow refused.' });
    const blocking = await (await send('chatflow', { query: 'BADWORD again' })).json();
    expect(blocking).toMatchObject({ mode: 'advanced-chat', answer: 'Chatflow refused.' });
  });

  it('a clean query runs the workflow', async () => {
    const body = await (await send('chatflow', { query: 'hello' })).json();
    expect(body.answer).toBe('you said hello');
  });

  it('a flagged answer is replaced: message_replace before message_end, no answer text after it, the stored and blocking answer is the preset', async () => {
    // `chatflow` answers "you said <query>"; `chatflowOut`'s answer contains the keyword
    const frames = await stream('chatflow', { query: 'hello', inputs: {} });
    expect(frames.map((f) => f.event)).not.toContain('message_replace');
    const flaggedAnswer = await stream('chatflowOut', { query: 'hello' });
    const events = flaggedAnswer.map((f) => f.event);
    const after = events.slice(events.indexOf('message_replace'));
    expect(after.filter((e) => e === 'message_replace' || e === 'message' || e === 'message_end' || e === 'workflow_finished')).toEqual(['message_replace', 'message_end', 'workflow_finished']);
    const replace = flaggedAnswer.find((f) => f.event === 'message_replace')!;
    expect(replace).toMatchObject({ answer: 'Chatflow answer refused.', reason: 'output_moderation' });
    validateSchema('StreamEventChatMessageReplace', replace);
    expect(await storedAnswer('chatflowOut', replace.conversation_id as string)).toMatchObject({ answer: 'Chatflow answer refused.' });
    expect(await (await send('chatflowOut', { query: 'again' })).json()).toMatchObject({ answer: 'Chatflow answer refused.' });
    expect(await s.runtime.appWarnings((await s.runtime.apps.find(appIds.chatflow!))!)).toEqual([]);
  });

  it('a flagged answer is replaced while it streams (MODERATION_BUFFER_SIZE=8): no answer text after it, the model call is stopped, message_replace before message_end', async () => {
    // the model streams "badword" and then holds the stream open: only moderation can end this run
    const reply = 'Sure, here is a badword and then a long tail nobody should read';
    fake.behaviour = { reply, chunkSize: 4, holdAfterChunks: 6 };
    const frames = await stream('chatflowModel', { query: 'tell me' });
    const events = frames.map((f) => f.event);
    const at = events.indexOf('message_replace');
    expect(at).toBeGreaterThan(-1);
    expect(frames[at]).toMatchObject({ answer: 'Chatflow answer refused.', reason: 'output_moderation' });
    validateSchema('StreamEventChatMessageReplace', frames[at]!);
    // replaced once; no answer text after it; what streamed before is what the model sent up to the flagged check
    expect(events.filter((e) => e === 'message_replace')).toHaveLength(1);
    expect(events.slice(at + 1)).not.toContain('message');
    const streamed = frames.filter((f) => f.event === 'message').map((f) => f.answer as string).join('');
    expect(reply.startsWith(streamed)).toBe(true);
    expect(streamed.length).toBeLessThanOrEqual('Sure, here is a badword '.length);
    expect(events.indexOf('message_end')).toBeGreaterThan(at);
    // as Dify's advanced-chat pipeline: output moderation stops the run
    expect(frames.find((f) => f.event === 'workflow_finished')).toMatchObject({ data: { status: 'stopped' } });
    await fake.waitForAbort();
    expect(await storedAnswer('chatflowModel', frames[at]!.conversation_id as string)).toMatchObject({ answer: 'Chatflow answer refused.' });
    fake.behaviour = { reply, chunkSize: 4, holdAfterChunks: 6 };
    expect(await (await send('chatflowModel', { query: 'again' })).json()).toMatchObject({ answer: 'Chatflow answer refused.' });
  });
});
