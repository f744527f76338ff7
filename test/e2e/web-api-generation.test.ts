import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.js';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { dataFrames, parseSse } from '../helpers/sse.js';
import { siteCode, webClient, type WebClient } from '../helpers/web-app.js';
import { endNode, startNode, templateNode, workflowDsl } from '../helpers/workflow-dsl.js';

/** The web app's API for text generators and workflows: more like this, saved messages, files, audio, runs. */
const writer = (name: string) => `app:
  mode: completion
  name: ${name}
kind: app
version: 0.3.1
model_config:
  model:
    provider: langgenius/openai/openai
    name: gpt-4o-mini
    mode: chat
  pre_prompt: 'Write about {{topic}}.'
  more_like_this:
    enabled: true
  speech_to_text:
    enabled: true
  text_to_speech:
    enabled: true
    voice: nova
  user_input_form:
    - text-input:
        label: Topic
        variable: topic
        required: true
        max_length: 40
  file_upload:
    image:
      enabled: true
      number_limits: 3
      detail: high
      transfer_methods: [remote_url, local_file]
`;

let fake: FakeOpenAI;
let s: TestServer;
let files: http.Server;
let filesUrl: string;
let code: string;
let otherCode: string;
let flowCode: string;
const PNG = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex');

beforeAll(async () => {
  fake = await startFakeOpenAI({ reply: 'A poem about the sea' });
  files = http.createServer((_req, res) => res.writeHead(200, { 'content-type': 'image/png' }).end(PNG));
  await new Promise<void>((r) => files.listen(0, '127.0.0.1', r));
  filesUrl = `http://127.0.0.1:${(files.address() as AddressInfo).port}`;
  s = await startServer({ env: { OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: fake.baseUrl, SSRF_ALLOW_HOSTS: '127.0.0.1' } });
  code = await siteCode(s, (await s.importApp(writer('Writer'))).appId);
  otherCode = await siteCode(s, (await s.importApp(writer('Other writer'))).appId);
  const flow = workflowDsl([startNode([{ variable: 'name' }]), templateNode('t', 'Hello {{ name }}', { name: ['start', 'name'] }), endNode({ greeting: ['t', 'output'] })], [['start', 't'], ['t', 'end']], { name: 'Greeter' });
  flowCode = await siteCode(s, (await s.importApp(flow)).appId);
});
afterAll(async () => {
  await s?.close();
  await fake?.close();
  await new Promise((r) => files?.close(r));
});

async function generate(c: WebClient, topic: string): Promise<{ messageId: string; answer: string }> {
  const r = await c.send('POST', '/completion-messages', { inputs: { topic }, response_mode: 'blocking' });
  expect(r.status).toBe(200);
  const body = (await r.json()) as { message_id: string; answer: string; mode: string };
  expect(body.mode).toBe('completion');
  return { messageId: body.message_id, answer: body.answer };
}

describe('text generator', () => {
  it('streams a completion in Dify’s frames; more like this answers a new message for the same inputs', async () => {
    const c = await webClient(s, code);
    const r = await c.send('POST', '/completion-messages', { inputs: { topic: 'the sea' }, response_mode: 'streaming' });
    const frames = dataFrames(parseSse(await r.text()));
    expect(frames.at(-1)!.event).toBe('message_end');
    const messageId = frames.at(-1)!.message_id as string;
    expect(frames.filter((f) => f.event === 'message').map((f) => f.answer).join('')).toBe('A poem about the sea');

    fake.behaviour = { reply: 'Another poem' };
    const more = await c.get(`/messages/${messageId}/more-like-this?response_mode=blocking`);
    expect(more.status).toBe(200);
    const body = (await more.json()) as { message_id: string; answer: string };
    expect(body.answer).toBe('Another poem');
    expect(body.message_id).not.toBe(messageId);
    expect(JSON.stringify(fake.requests.at(-1)!.body)).toContain('Write about the sea.');
    const streamed = dataFrames(parseSse(await (await c.get(`/messages/${messageId}/more-like-this?response_mode=streaming`)).text()));
    expect(streamed.at(-1)!.event).toBe('message_end');

    // another end user's message, a chat-only route, a missing mode
    const stranger = await webClient(s, code);
    const notMine = await stranger.get(`/messages/${messageId}/more-like-this?response_mode=blocking`);
    expect(notMine.status).toBe(404);
    expect(await notMine.json()).toEqual({ code: 'not_found', message: 'Message Not Exists.', status: 404 });
    expect((await c.get(`/messages/${messageId}/more-like-this`)).status).toBe(400);
    const chat = await c.send('POST', '/chat-messages', { inputs: {}, query: 'hi', response_mode: 'streaming' });
    expect(((await chat.json()) as { code: string }).code).toBe('not_chat_app');
    fake.behaviour = { reply: 'A poem about the sea' };
  });

  it('saves, lists and removes the end user’s messages; nobody else sees them', async () => {
    const c = await webClient(s, code);
    const a = await generate(c, 'rain');
    const b = await generate(c, 'snow');
    for (const m of [a, b]) expect(await (await c.send('POST', '/saved-messages', { message_id: m.messageId })).json()).toEqual({ result: 'success' });
    expect((await c.send('POST', '/saved-messages', { message_id: a.messageId })).status).toBe(200);
    const list = (await (await c.get('/saved-messages')).json()) as { limit: number; has_more: boolean; data: { id: string; inputs: unknown; answer: string; feedback: unknown }[] };
    expect(list.data.map((m) => m.id)).toEqual([b.messageId, a.messageId]);
    expect(list.data[1]).toMatchObject({ inputs: { topic: 'rain' }, answer: 'A poem about the sea', feedback: null });
    const page = (await (await c.get(`/saved-messages?limit=1&last_id=${b.messageId}`)).json()) as { has_more: boolean; data: { id: string }[] };
    expect(page.data.map((m) => m.id)).toEqual([a.messageId]);
    expect(page.has_more).toBe(false);

    const stranger = await webClient(s, code);
    expect(((await (await stranger.get('/saved-messages')).json()) as { data: unknown[] }).data).toEqual([]);
    const steal = await stranger.send('POST', '/saved-messages', { message_id: a.messageId });
    expect(steal.status).toBe(404);
    const other = await webClient(s, otherCode);
    expect((await other.send('POST', '/saved-messages', { message_id: a.messageId })).status).toBe(404);
    await stranger.send('DELETE', `/saved-messages/${a.messageId}`);

    expect((await c.send('DELETE', `/saved-messages/${a.messageId}`)).status).toBe(204);
    expect(((await (await c.get('/saved-messages')).json()) as { data: { id: string }[] }).data.map((m) => m.id)).toEqual([b.messageId]);
  });
});

describe('files and audio', () => {
  it('uploads a file and a remote file as the end user’s, and uses it in a generation', async () => {
    const c = await webClient(s, code);
    const form = new FormData();
    form.append('file', new Blob([PNG], { type: 'image/png' }), 'dot.png');
    const up = await fetch(`${s.url}/api/files/upload`, { method: 'POST', headers: c.headers(), body: form });
    expect(up.status).toBe(201);
    const file = (await up.json()) as { id: string; name: string; created_by: string };
    const site = (await (await c.get('/site')).json()) as { end_user_id: string };
    expect(file).toMatchObject({ name: 'dot.png', created_by: site.end_user_id });

    const remote = await c.send('POST', '/remote-files/upload', { url: `${filesUrl}/pic.png` });
    expect(remote.status).toBe(201);
    const rf = (await remote.json()) as Record<string, unknown>;
    expect(Object.keys(rf)).toEqual(['id', 'name', 'size', 'extension', 'url', 'mime_type', 'created_by', 'created_at']);
    expect(rf).toMatchObject({ name: 'pic.png', size: PNG.length, extension: 'png', mime_type: 'image/png', created_by: site.end_user_id });
    const bad = await c.send('POST', '/remote-files/upload', { url: 'http://169.254.169.254/latest' });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { code: string }).code).toBe('remote_file_upload_failed');

    const r = await c.send('POST', '/completion-messages', { inputs: { topic: 'dots' }, response_mode: 'blocking', files: [{ type: 'image', transfer_method: 'local_file', upload_file_id: file.id }] });
    expect(r.status).toBe(200);
    // another app's end user cannot send it
    const stranger = await webClient(s, otherCode);
    const theirs = await stranger.send('POST', '/completion-messages', { inputs: { topic: 'dots' }, response_mode: 'blocking', files: [{ type: 'image', transfer_method: 'local_file', upload_file_id: file.id }] });
    expect(theirs.status).toBeGreaterThanOrEqual(400);
    expect(theirs.status).toBeLessThan(500);
  });

  it('speech to text and text to speech for the passport’s app', async () => {
    const c = await webClient(s, code);
    const form = new FormData();
    form.append('file', new Blob([Buffer.from('ID3audio')], { type: 'audio/mp3' }), 'q.mp3');
    const r = await fetch(`${s.url}/api/audio-to-text`, { method: 'POST', headers: c.headers(), body: form });
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({ text: 'heard 8 bytes' });
    const speech = await c.send('POST', '/text-to-audio', { text: 'hello' });
    expect(speech.status).toBe(200);
    expect(speech.headers.get('content-type')).toContain('audio');
    expect((await speech.arrayBuffer()).byteLength).toBeGreaterThan(0);
  });
});

describe('workflow', () => {
  it('runs, streams Dify’s workflow frames, and reopens the run’s events only for its end user', async () => {
    const c = await webClient(s, flowCode);
    const r = await c.send('POST', '/workflows/run', { inputs: { name: 'Ada' }, response_mode: 'streaming' });
    const frames = dataFrames(parseSse(await r.text()));
    expect(frames[0]!.event).toBe('workflow_started');
    const end = frames.at(-1)!;
    expect(end.event).toBe('workflow_finished');
    expect((end.data as { outputs: unknown }).outputs).toEqual({ greeting: 'Hello Ada' });
    const runId = end.workflow_run_id as string;
    const events = dataFrames(parseSse(await (await c.get(`/workflow/${runId}/events`)).text()));
    expect(events.at(-1)!.event).toBe('workflow_finished');
    const stranger = await webClient(s, flowCode);
    expect((await stranger.get(`/workflow/${runId}/events`)).status).toBe(404);
    const wrongApp = await c.send('POST', '/completion-messages', { inputs: {}, response_mode: 'blocking' });
    expect(wrongApp.status).toBe(400);
  });
});
