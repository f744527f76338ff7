import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ChatClient } from 'dify-client';
import { parse, stringify } from 'yaml';
import { startServer, type TestServer } from '../helpers/server.js';
import { SPEECH_CHUNKS, startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { endNode, startNode, workflowDsl } from '../helpers/workflow-dsl.js';
import { validateResponse, validateSchema } from '../helpers/openapi.js';

/** `POST /audio-to-text` and `POST /text-to-audio` (Dify's `AudioService`), against a local OpenAI-compatible upstream. */
function chatApp(features: string, name = 'Talking helper'): string {
  return `app:
  mode: chat
  name: ${name}
kind: app
version: 0.3.1
model_config:
  model:
    provider: langgenius/openai/openai
    name: gpt-app
    mode: chat
    completion_params: {}
  pre_prompt: 'You are helpful.'
${features}`;
}
const BOTH_ON = '  speech_to_text:\n    enabled: true\n  text_to_speech:\n    enabled: true\n    voice: nova\n    language: en-US\n';
const BOTH_OFF = '  speech_to_text:\n    enabled: false\n  text_to_speech:\n    enabled: false\n';

/** A workflow app (start → end) with `features` in its DSL. */
function workflowApp(features: Record<string, unknown>): string {
  const doc = parse(workflowDsl([startNode(), endNode({})], [['start', 'end']], { name: 'voice flow' })) as { workflow: Record<string, unknown> };
  doc.workflow.features = features;
  return stringify(doc);
}

const AUDIO = Buffer.from(Array.from({ length: 3000 }, (_, i) => i % 251));

let fake: FakeOpenAI;
let s: TestServer;
let key: string;
let offKey: string;
let otherKey: string;
let flowKey: string;

beforeAll(async () => {
  fake = await startFakeOpenAI();
  s = await startServer({ env: { OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: fake.baseUrl, AUDIO_TO_TEXT_FILE_SIZE_LIMIT: '1' } });
  ({ apiKey: key } = await s.importApp(chatApp(BOTH_ON)));
  ({ apiKey: offKey } = await s.importApp(chatApp(BOTH_OFF, 'Quiet helper')));
  ({ apiKey: otherKey } = await s.importApp(chatApp(BOTH_ON, 'Other helper')));
  ({ apiKey: flowKey } = await s.importApp(workflowApp({ speech_to_text: { enabled: true }, text_to_speech: { enabled: true, voice: '' } })));
});
afterAll(async () => {
  await s?.close();
  await fake?.close();
});
beforeEach(() => {
  fake.behaviour = {};
  fake.requests.length = 0;
});

const auth = (k: string) => ({ authorization: `Bearer ${k}` });

function audioForm(opts: { bytes?: Buffer; type?: string; name?: string; user?: string; field?: string } = {}): FormData {
  const form = new FormData();
  if (opts.user !== undefined) form.append('user', opts.user);
  if (opts.field !== '') form.append(opts.field ?? 'file', new Blob([new Uint8Array(opts.bytes ?? AUDIO)], { type: opts.type ?? 'audio/mp3' }), opts.name ?? 'question.mp3');
  return form;
}

const audioToText = (form: FormData, k = key) => fetch(`${s.api}/audio-to-text`, { method: 'POST', headers: auth(k), body: form });
const textToAudio = (body: Record<string, unknown>, k = key, server = s) =>
  fetch(`${server.api}/text-to-audio`, { method: 'POST', headers: { ...auth(k), 'content-type': 'application/json' }, body: JSON.stringify(body) });

async function expectError(r: Response, status: number, code: string, message?: string | RegExp): Promise<void> {
  const body = (await r.json()) as { status: number; code: string; message: string };
  expect({ status: r.status, code: body.code }).toEqual({ status, code });
  expect(body.status).toBe(status);
  if (typeof message === 'string') expect(body.message).toBe(message);
  else if (message) expect(body.message).toMatch(message);
}

async function chat(query: string, k = key): Promise<{ id: string; answer: string }> {
  const r = await fetch(`${s.api}/chat-messages`, {
    method: 'POST',
    headers: { ...auth(k), 'content-type': 'application/json' },
    body: JSON.stringify({ inputs: {}, query, user: 'ann', response_mode: 'blocking' }),
  });
  expect(r.status).toBe(200);
  return (await r.json()) as { id: string; answer: string };
}

describe('POST /audio-to-text', () => {
  it('sends the audio to SPEECH_TO_TEXT_MODEL (default openai/whisper-1) and answers {text}', async () => {
    fake.behaviour = { transcript: 'How long does glue take to set?' };
    const r = await audioToText(audioForm({ user: 'ann' }));
    expect(r.status).toBe(200);
    const body = await r.json();
    validateResponse('/audio-to-text', 'post', 200, body);
    expect(body).toEqual({ text: 'How long does glue take to set?' });
    const up = fake.requests.at(-1)!;
    expect(up.path).toBe('/v1/audio/transcriptions');
    expect(up.headers.authorization).toBe('Bearer sk-test');
    expect(up.body.model).toBe('whisper-1');
    expect(up.audio!.filename).toBe('question.mp3');
    expect(up.audio!.mimeType).toBe('audio/mp3');
    expect(up.audio!.bytes.equals(AUDIO)).toBe(true);
  });

  it('a workflow app reads features.speech_to_text; MIME parameters are ignored (audio/webm;codecs=opus)', async () => {
    const r = await audioToText(audioForm({ type: 'audio/webm;codecs=opus', name: 'rec.webm' }), flowKey);
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({ text: `heard ${AUDIO.length} bytes` });
    expect(fake.requests.at(-1)!.audio!.filename).toBe('rec.webm');
  });

  it('speech_to_text disabled: 400 speech_to_text_disabled, nothing sent upstream', async () => {
    await expectError(await audioToText(audioForm(), offKey), 400, 'speech_to_text_disabled', 'Speech to text is disabled.');
    await expectError(await audioToText(audioForm(), await workflowKey({})), 400, 'speech_to_text_disabled');
    expect(fake.requests).toHaveLength(0);
  });

  it('no file part, or no multipart body at all: 400 no_audio_uploaded', async () => {
    await expectError(await audioToText(audioForm({ field: '', user: 'ann' })), 400, 'no_audio_uploaded', 'Please upload your audio.');
    await expectError(await audioToText(audioForm({ field: 'audio' })), 400, 'no_audio_uploaded');
    const json = await fetch(`${s.api}/audio-to-text`, { method: 'POST', headers: { ...auth(key), 'content-type': 'application/json' }, body: '{}' });
    await expectError(json, 400, 'no_audio_uploaded');
    expect(fake.requests).toHaveLength(0);
  });

  it('a type Dify does not accept: 415 unsupported_audio_type naming the type', async () => {
    await expectError(await audioToText(audioForm({ type: 'audio/ogg', name: 'a.ogg' })), 415, 'unsupported_audio_type', /^Audio type not allowed\. Got "audio\/ogg"; allowed: audio\/mp3, /);
    await expectError(await audioToText(audioForm({ type: 'text/plain', name: 'a.mp3' })), 415, 'unsupported_audio_type');
    expect(fake.requests).toHaveLength(0);
  });

  it('larger than AUDIO_TO_TEXT_FILE_SIZE_LIMIT: 413 audio_too_large naming the limit', async () => {
    const big = Buffer.alloc(1024 * 1024 + 1, 7);
    await expectError(await audioToText(audioForm({ bytes: big })), 413, 'audio_too_large', 'Audio size larger than 1 mb (AUDIO_TO_TEXT_FILE_SIZE_LIMIT).');
    expect(fake.requests).toHaveLength(0);
    // Exactly the limit passes.
    const r = await audioToText(audioForm({ bytes: Buffer.alloc(1024 * 1024, 7) }));
    expect(r.status).toBe(200);
    expect(fake.requests.at(-1)!.audio!.bytes.length).toBe(1024 * 1024);
  });

  it('an upstream failure: 400 completion_request_error with the upstream message', async () => {
    fake.behaviour = { failStatus: 500, failMessage: 'whisper is down' };
    await expectError(await audioToText(audioForm()), 400, 'completion_request_error', /whisper is down/);
  });
});

describe('POST /text-to-audio', () => {
  it('streams the upstream audio for `text` in the app\'s voice with TEXT_TO_SPEECH_MODEL (default openai/tts-1)', async () => {
    const r = await textToAudio({ text: '  Hello there  ', user: 'ann', streaming: false });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('audio/mpeg');
    // Streamed through: chunked, no length known up front.
    expect(r.headers.get('content-length')).toBeNull();
    expect(Buffer.from(await r.arrayBuffer()).equals(Buffer.concat(SPEECH_CHUNKS))).toBe(true);
    const up = fake.requests.at(-1)!;
    expect(up.path).toBe('/v1/audio/speech');
    expect(up.body).toMatchObject({ model: 'tts-1', input: 'Hello there', voice: 'nova' });
  });

  it('the first audio bytes reach the client before the upstream has finished', async () => {
    fake.behaviour = { delayMs: 300 };
    const r = await textToAudio({ text: 'slowly', user: 'ann' });
    expect(r.status).toBe(200);
    const reader = r.body!.getReader();
    const first = await reader.read();
    expect(Buffer.from(first.value!).toString()).toBe(SPEECH_CHUNKS[0]!.toString());
    expect(fake.requests.at(-1)!.finished).toBe(false);
    await reader.cancel();
  });

  it('a client that goes away mid-audio closes the upstream request', async () => {
    fake.behaviour = { delayMs: 300 };
    const ac = new AbortController();
    const r = await fetch(`${s.api}/text-to-audio`, { method: 'POST', headers: { ...auth(key), 'content-type': 'application/json' }, body: JSON.stringify({ text: 'long story' }), signal: ac.signal });
    await r.body!.getReader().read();
    ac.abort();
    const up = await fake.waitForAbort(3000);
    expect(up.path).toBe('/v1/audio/speech');
  });

  it('the request voice wins; message_id voices that message\'s answer (and wins over text)', async () => {
    const m = await chat('what is a dovetail');
    const r = await textToAudio({ message_id: m.id, text: 'ignored', voice: 'echo', user: 'bob' });
    expect(r.status).toBe(200);
    await r.arrayBuffer();
    expect(fake.requests.at(-1)!.body).toMatchObject({ input: m.answer, voice: 'echo', model: 'tts-1' });
    expect(m.answer).toBe('echo: what is a dovetail');
  });

  it('a workflow app without a voice uses TEXT_TO_SPEECH_DEFAULT_VOICE (alloy)', async () => {
    const r = await textToAudio({ text: 'flow speaking' }, flowKey);
    expect(r.status).toBe(200);
    await r.arrayBuffer();
    expect(fake.requests.at(-1)!.body).toMatchObject({ input: 'flow speaking', voice: 'alloy' });
  });

  it('text_to_speech disabled: 400 invalid_param "TTS is not enabled", even with a voice', async () => {
    await expectError(await textToAudio({ text: 'hi', voice: 'nova' }, offKey), 400, 'invalid_param', 'TTS is not enabled');
    await expectError(await textToAudio({ text: 'hi' }, await workflowKey({ speech_to_text: { enabled: true } })), 400, 'invalid_param', 'TTS is not enabled');
    expect(fake.requests).toHaveLength(0);
  });

  it('neither message_id nor text (or blank text): 400 invalid_param "Text is required"', async () => {
    validateSchema('TextToAudioRequest', { user: 'ann' });
    await expectError(await textToAudio({ user: 'ann' }), 400, 'invalid_param', 'Text is required');
    await expectError(await textToAudio({ text: '   ', user: 'ann' }), 400, 'invalid_param', 'Text is required');
    expect(fake.requests).toHaveLength(0);
  });

  it('message_id of another app, unknown or malformed: 404 not_found "Message Not Exists."', async () => {
    const foreign = await chat('not yours', otherKey);
    fake.requests.length = 0;
    await expectError(await textToAudio({ message_id: foreign.id, user: 'ann' }), 404, 'not_found', 'Message Not Exists.');
    await expectError(await textToAudio({ message_id: '00000000-0000-4000-8000-000000000000', user: 'ann' }), 404, 'not_found', 'Message Not Exists.');
    await expectError(await textToAudio({ message_id: 'nope', text: 'fallback?', user: 'ann' }), 404, 'not_found');
    expect(fake.requests).toHaveLength(0);
  });

  it('text longer than TEXT_TO_SPEECH_MAX_CHARS: 400 invalid_param naming the limit', async () => {
    await expectError(await textToAudio({ text: 'x'.repeat(4097) }), 400, 'invalid_param', 'Text is too long: 4097 characters, at most 4096 (TEXT_TO_SPEECH_MAX_CHARS).');
  });

  it('an upstream refusal: 400 completion_request_error with the upstream message, before any audio', async () => {
    fake.behaviour = { failStatus: 400, failMessage: 'voice "nova" is not available' };
    await expectError(await textToAudio({ text: 'hi' }), 400, 'completion_request_error', /voice "nova" is not available/);
  });

  it('a non-JSON body: 415 unsupported_media_type', async () => {
    const r = await fetch(`${s.api}/text-to-audio`, { method: 'POST', headers: { ...auth(key), 'content-type': 'text/plain' }, body: 'hi' });
    await expectError(r, 415, 'unsupported_media_type');
  });

  it('dify-client: the SDK\'s request gets the audio bytes', async () => {
    const client = new ChatClient(key, s.api);
    // dify-client 2.3.2 has no audio helper; its 3.x `textToAudio` sends this same JSON request.
    const r = await client.sendRequest('POST', '/text-to-audio', { text: 'from the sdk', user: 'sdk' }, undefined, true);
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toBe('audio/mpeg');
    const chunks: Buffer[] = [];
    for await (const c of r.data as AsyncIterable<Buffer>) chunks.push(c);
    expect(Buffer.concat(chunks).equals(Buffer.concat(SPEECH_CHUNKS))).toBe(true);
    expect(fake.requests.at(-1)!.body).toMatchObject({ input: 'from the sdk', voice: 'nova' });
  });
});

describe('audio models that cannot be used', () => {
  let mockServer: TestServer;
  let noKeyServer: TestServer;
  beforeAll(async () => {
    mockServer = await startServer({ env: { SPEECH_TO_TEXT_MODEL: 'mock/whisper', TEXT_TO_SPEECH_MODEL: 'mock/tts' } });
    noKeyServer = await startServer({ env: {} });
  });
  afterAll(async () => {
    await mockServer?.close();
    await noKeyServer?.close();
  });

  it('a provider without speech to text: 400 provider_not_support_speech_to_text', async () => {
    const { apiKey } = await mockServer.importApp(chatApp(BOTH_ON));
    const r = await fetch(`${mockServer.api}/audio-to-text`, { method: 'POST', headers: auth(apiKey), body: audioForm() });
    await expectError(r, 400, 'provider_not_support_speech_to_text', /^Provider not support speech to text\. Provider "mock" \(SPEECH_TO_TEXT_MODEL\)/);
  });

  it('a provider without text to speech: 400 model_currently_not_support naming TEXT_TO_SPEECH_MODEL', async () => {
    const { apiKey } = await mockServer.importApp(chatApp(BOTH_ON));
    await expectError(await textToAudio({ text: 'hi' }, apiKey, mockServer), 400, 'model_currently_not_support', 'Provider "mock" (TEXT_TO_SPEECH_MODEL) does not support text to speech.');
  });

  it('no OPENAI_API_KEY: 400 provider_not_initialize for both', async () => {
    const { apiKey } = await noKeyServer.importApp(chatApp(BOTH_ON));
    const r = await fetch(`${noKeyServer.api}/audio-to-text`, { method: 'POST', headers: auth(apiKey), body: audioForm() });
    await expectError(r, 400, 'provider_not_initialize', /OPENAI_API_KEY/);
    await expectError(await textToAudio({ text: 'hi' }, apiKey, noKeyServer), 400, 'provider_not_initialize', /OPENAI_API_KEY/);
  });

  it('a malformed SPEECH_TO_TEXT_MODEL fails at boot, naming the setting', async () => {
    await expect(startServer({ env: { SPEECH_TO_TEXT_MODEL: 'whisper-1' } })).rejects.toThrow(/SPEECH_TO_TEXT_MODEL must be provider\/model/);
  });
});

async function workflowKey(features: Record<string, unknown>): Promise<string> {
  return (await s.importApp(workflowApp(features))).apiKey;
}
