import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ChatClient } from 'dify-client';
import { startServer, type TestServer } from '../helpers/server.js';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { openAiCompatibleProviders } from '../helpers/openai-providers.js';
import { completionApp } from '../helpers/apps.js';
import { example } from '../helpers/fixtures.js';
import { validateResponse } from '../helpers/openapi.js';

/** `GET /messages/{message_id}/suggested`: Dify's follow-up questions after an answer. */
function chatApp(feature: string): string {
  return `app:
  mode: chat
  name: Suggesting helper
kind: app
version: 0.3.1
model_config:
  model:
    provider: langgenius/openai/openai
    name: gpt-app
    mode: chat
    completion_params:
      temperature: 0.9
      max_tokens: 900
  pre_prompt: 'You are helpful.'
${feature}`;
}
const ENABLED = '  suggested_questions_after_answer:\n    enabled: true\n';

/** Dify's default instruction prompt, spelled out here so a drift in the source shows. */
const DIFY_INSTRUCTIONS =
  'Please help me predict the three most likely questions that human would ask, and keep each question under 20 characters.\n' +
  "MAKE SURE your output is the SAME language as the Assistant's latest response. The output must be an array in JSON format following the specified schema:\n" +
  '["question1","question2","question3"]\n';

const QUESTIONS = ['What is a tenon?', 'Which wood?', 'How long?'];

let fake: FakeOpenAI;
let s: TestServer;
let key: string;
let appId: string;

/** The fake model answers chat turns with `A:<query>` and the suggestion prompt with a fenced JSON array. */
function replies(suggestion = `Sure:\n\`\`\`json\n${JSON.stringify(QUESTIONS)}\n\`\`\``) {
  return (body: Record<string, unknown>) => {
    const msgs = body.messages as { content: string }[];
    const last = String(msgs.at(-1)!.content);
    return last.endsWith('questions:\n') ? suggestion : `A:${last}`;
  };
}

beforeAll(async () => {
  fake = await startFakeOpenAI();
  // Chat apps read OPENAI_*; chatflow LLM nodes take the providers handed to the runtime.
  s = await startServer({ env: { OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: fake.baseUrl }, runtime: { providers: openAiCompatibleProviders(fake.baseUrl) } });
  ({ apiKey: key, appId } = await s.importApp(chatApp(ENABLED)));
});
afterAll(async () => {
  await s?.close();
  await fake?.close();
});
beforeEach(() => {
  fake.behaviour = { reply: replies() };
  fake.requests.length = 0;
});

const auth = (k = key) => ({ authorization: `Bearer ${k}` });

async function chat(query: string, user: string, conversationId?: string, k = key): Promise<{ id: string; conversation_id: string }> {
  const r = await fetch(`${s.api}/chat-messages`, {
    method: 'POST',
    headers: { ...auth(k), 'content-type': 'application/json' },
    body: JSON.stringify({ inputs: {}, query, user, response_mode: 'blocking', conversation_id: conversationId }),
  });
  expect(r.status).toBe(200);
  return (await r.json()) as { id: string; conversation_id: string };
}

const suggested = (messageId: string, user: string | undefined, k = key) =>
  fetch(`${s.api}/messages/${messageId}/suggested${user === undefined ? '' : `?user=${encodeURIComponent(user)}`}`, { headers: auth(k) });

const lastUpstream = () => fake.requests.at(-1)!.body;

describe('GET /messages/{message_id}/suggested on a chat app', () => {
  it('asks the model with Dify\'s prompt over the conversation\'s history and returns the parsed array', async () => {
    const first = await chat('Q1', 'ann');
    const second = await chat('Q2', 'ann', first.conversation_id);
    const r = await suggested(second.id, 'ann');
    expect(r.status).toBe(200);
    const answer = await r.json();
    validateResponse('/messages/{message_id}/suggested', 'get', 200, answer);
    expect(answer).toEqual({ result: 'success', data: QUESTIONS });
    const body = lastUpstream();
    expect(body.model).toBe('gpt-app');
    expect(body.messages).toEqual([{ role: 'user', content: `Human: Q1\nAssistant: A:Q1\nHuman: Q2\nAssistant: A:Q2\n${DIFY_INSTRUCTIONS}\nquestions:\n` }]);
    // Dify's tuning for the default model, not the app's completion_params.
    expect(body.temperature).toBe(0);
    expect(body.max_tokens ?? body.max_completion_tokens).toBe(256);
  });

  it('shows the model only the conversation\'s last three messages, whichever message is asked about', async () => {
    let c = await chat('M1', 'bo');
    const firstId = c.id;
    for (const q of ['M2', 'M3', 'M4']) c = await chat(q, 'bo', c.conversation_id);
    await suggested(firstId, 'bo');
    const content = (lastUpstream().messages as { content: string }[])[0]!.content;
    expect(content.startsWith('Human: M2\nAssistant: A:M2\nHuman: M3\nAssistant: A:M3\nHuman: M4\nAssistant: A:M4\n')).toBe(true);
  });

  it('a newest message still being answered is left out of the history (as Dify)', async () => {
    const m = await chat('done', 'ron');
    const endUser = await s.runtime.endUsers.getOrCreate(appId, 'ron');
    await s.runtime.messages.insert({ id: crypto.randomUUID(), appId: appId, conversationId: m.conversation_id, endUserId: endUser.id, taskId: crypto.randomUUID(), mode: 'chat', inputs: {}, query: 'pending', files: [], createdAt: Date.now() + 1000 });
    await suggested(m.id, 'ron');
    expect((lastUpstream().messages as { content: string }[])[0]!.content.startsWith(`Human: done\nAssistant: A:done\n${DIFY_INSTRUCTIONS}`)).toBe(true);
  });

  it('404 not_found for an unknown, malformed, another user\'s or another app\'s message', async () => {
    const mine = await chat('secret', 'cy');
    await chat('hello', 'dee');
    const { apiKey: otherApp } = await s.importApp(chatApp(ENABLED));
    const theirs = await chat('elsewhere', 'cy', undefined, otherApp);
    const notExists = { code: 'not_found', message: 'Message Not Exists.', status: 404 };
    for (const [id, user] of [['0b6a3c1e-1d7f-4d2b-9a61-4f0c8a9e2b11', 'cy'], ['nope', 'cy'], [mine.id, 'dee'], [theirs.id, 'cy']] as const) {
      const r = await suggested(id, user);
      expect(r.status).toBe(404);
      expect(await r.json()).toEqual(notExists);
    }
    expect(fake.requests.filter((q) => String((q.body.messages as { content: string }[])[0]!.content).endsWith('questions:\n'))).toEqual([]);
  });

  it('400 invalid_param without user', async () => {
    const m = await chat('hi', 'eve');
    const r = await suggested(m.id, undefined);
    expect(r.status).toBe(400);
    expect(await r.json()).toEqual({ code: 'invalid_param', message: 'Arg user must be provided.', status: 400 });
  });

  it('400 bad_request when the app does not enable suggested_questions_after_answer', async () => {
    for (const feature of ['', '  suggested_questions_after_answer:\n    enabled: false\n']) {
      const { apiKey } = await s.importApp(chatApp(feature));
      const m = await chat('hi', 'fay', undefined, apiKey);
      const r = await suggested(m.id, 'fay', apiKey);
      expect(r.status).toBe(400);
      expect(await r.json()).toEqual({ code: 'bad_request', message: 'Suggested Questions Is Disabled.', status: 400 });
    }
  });

  it('400 not_chat_app on a text generator', async () => {
    const { apiKey } = await s.importApp(completionApp());
    const r = await suggested('0b6a3c1e-1d7f-4d2b-9a61-4f0c8a9e2b11', 'gus', apiKey);
    expect(r.status).toBe(400);
    expect(await r.json()).toEqual({ code: 'not_chat_app', message: 'Please check if your app mode matches the right API route.', status: 400 });
  });

  it('a failing or unparsable model gives an empty list, as Dify', async () => {
    const m = await chat('hi', 'hal');
    fake.behaviour = { failStatus: 500, failMessage: 'upstream down' };
    expect(await (await suggested(m.id, 'hal')).json()).toEqual({ result: 'success', data: [] });
    fake.behaviour = { reply: replies('I would rather not say.') };
    expect(await (await suggested(m.id, 'hal')).json()).toEqual({ result: 'success', data: [] });
    // Reasoning blocks are skipped; non-string items are dropped; nothing is capped.
    fake.behaviour = { reply: replies('<think>maybe ["draft"]</think>["a", 1, "b", "c", "d"]') };
    expect(await (await suggested(m.id, 'hal')).json()).toEqual({ result: 'success', data: ['a', 'b', 'c', 'd'] });
  });

  it('the feature\'s own model and prompt win, with its completion_params', async () => {
    const { apiKey } = await s.importApp(
      chatApp(`  suggested_questions_after_answer:
    enabled: true
    prompt: Ask like a carpenter.
    model:
      provider: openai
      name: gpt-follow-up
      completion_params:
        temperature: 0.4
        max_tokens: 0
`),
    );
    const m = await chat('hi', 'ivy', undefined, apiKey);
    const r = await suggested(m.id, 'ivy', apiKey);
    expect(await r.json()).toEqual({ result: 'success', data: QUESTIONS });
    const body = lastUpstream();
    expect(body.model).toBe('gpt-follow-up');
    expect(body.temperature).toBe(0.4);
    // A non-positive max_tokens is dropped (Dify's `_normalize_completion_params`).
    expect(body.max_tokens ?? body.max_completion_tokens).toBeUndefined();
    expect((body.messages as { content: string }[])[0]!.content).toBe(
      'Human: hi\nAssistant: A:hi\nAsk like a carpenter.\nYou must output a JSON array like ["question1", "question2", "question3"].\nquestions:\n',
    );
  });

  it('dify-client: the SDK\'s request gets the questions', async () => {
    const client = new ChatClient(key, s.api);
    const m = await chat('sdk question', 'jo');
    // dify-client 2.3.2 has no getSuggested helper; its 3.x `getSuggested` sends this same request.
    const r = await client.sendRequest('GET', `/messages/${m.id}/suggested`, null, { user: 'jo' });
    expect(r.status).toBe(200);
    expect(r.data).toEqual({ result: 'success', data: QUESTIONS });
  });
});

describe('GET /messages/{message_id}/suggested on a chatflow', () => {
  it('without SUGGESTED_QUESTIONS_MODEL, the first LLM node\'s model is asked', async () => {
    const yaml = example('chatflow-assistant.yml')
      .replace('provider: mock, name: mock-chat', 'provider: openai, name: gpt-node')
      .replace('  conversation_variables: []\n', '  conversation_variables: []\n  features:\n    suggested_questions_after_answer:\n      enabled: true\n');
    const { apiKey } = await s.importApp(yaml);
    const m = await chat('flow question', 'kim', undefined, apiKey);
    const r = await suggested(m.id, 'kim', apiKey);
    expect(await r.json()).toEqual({ result: 'success', data: QUESTIONS });
    expect(lastUpstream().model).toBe('gpt-node');
    expect((lastUpstream().messages as { content: string }[])[0]!.content.startsWith('Human: flow question\nAssistant: A:flow question\n')).toBe(true);
  });
});

describe('SUGGESTED_QUESTIONS_* settings', () => {
  it('SUGGESTED_QUESTIONS_MODEL stands in for Dify\'s workspace default model; the limits are settings', async () => {
    const other = await startServer({
      env: {
        SUGGESTED_QUESTIONS_MODEL: 'openai/gpt-default',
        SUGGESTED_QUESTIONS_MAX_TOKENS: '99',
        SUGGESTED_QUESTIONS_HISTORY_MESSAGES: '1',
        SUGGESTED_QUESTIONS_TIMEOUT: '1',
        OPENAI_API_KEY: 'sk-test',
        OPENAI_BASE_URL: fake.baseUrl,
      },
      runtime: { providers: openAiCompatibleProviders(fake.baseUrl) },
    });
    try {
      const { apiKey } = await other.importApp(chatApp(ENABLED));
      const send = async (query: string, conversationId?: string) => {
        const r = await fetch(`${other.api}/chat-messages`, {
          method: 'POST',
          headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
          body: JSON.stringify({ inputs: {}, query, user: 'lee', response_mode: 'blocking', conversation_id: conversationId }),
        });
        return (await r.json()) as { id: string; conversation_id: string };
      };
      const first = await send('hello');
      await send('again', first.conversation_id);
      const r = await fetch(`${other.api}/messages/${first.id}/suggested?user=lee`, { headers: { authorization: `Bearer ${apiKey}` } });
      expect(await r.json()).toEqual({ result: 'success', data: QUESTIONS });
      const body = lastUpstream();
      expect(body.model).toBe('gpt-default');
      expect(body.max_tokens ?? body.max_completion_tokens).toBe(99);
      expect((body.messages as { content: string }[])[0]!.content).toBe(`Human: again\nAssistant: A:again\n${DIFY_INSTRUCTIONS}\nquestions:\n`);
      // A model that never answers is given up after SUGGESTED_QUESTIONS_TIMEOUT: an empty list, as Dify.
      fake.behaviour = { hang: true };
      const late = await fetch(`${other.api}/messages/${first.id}/suggested?user=lee`, { headers: { authorization: `Bearer ${apiKey}` } });
      expect(await late.json()).toEqual({ result: 'success', data: [] });
      expect((await fake.waitForAbort()).body.model).toBe('gpt-default');
    } finally {
      await other.close();
    }
  });
});
