import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.js';
import { example } from '../helpers/fixtures.js';
import { schemaErrors, responseErrors } from '../helpers/openapi.js';
import { dataFrames, parseSse } from '../helpers/sse.js';

/** Workflow, chatflow and Human Input run payloads checked against Dify's published OpenAPI document. */
let s: TestServer;
let wf: string;
let chat: string;
let approval: string;
beforeAll(async () => {
  s = await startServer();
  wf = (await s.importApp(example('workflow-llm.yml'))).apiKey;
  chat = (await s.importApp(example('chatflow-assistant.yml'))).apiKey;
  approval = (await s.importApp(example('workflow-approval.yml'))).apiKey;
});
afterAll(async () => s?.close());

const h = (k: string) => ({ authorization: `Bearer ${k}`, 'content-type': 'application/json' });
const post = (k: string, p: string, body: unknown) => fetch(`${s.api}${p}`, { method: 'POST', headers: h(k), body: JSON.stringify(body) });

describe('OpenAPI contract: workflow and chatflow runs', () => {
  it('POST /workflows/run blocking and GET /workflows/run/{id}', async () => {
    const body = await (await post(wf, '/workflows/run', { inputs: { text: 'a text' }, user: 'c' })).json();
    expect(body.data.status).toBe('succeeded');
    expect(responseErrors('/workflows/run', 'post', 200, body)).toEqual([]);
    const detail = await (await fetch(`${s.api}/workflows/run/${body.workflow_run_id}`, { headers: h(wf) })).json();
    expect(responseErrors('/workflows/run/{workflow_run_id}', 'get', 200, detail)).toEqual([]);
    const stop = await (await post(wf, '/workflows/tasks/x/stop', { user: 'c' })).json();
    expect(responseErrors('/workflows/tasks/{task_id}/stop', 'post', 200, stop)).toEqual([]);
  });

  it('every streamed workflow event, including the pause events', async () => {
    const events = [
      ...dataFrames(parseSse(await (await post(wf, '/workflows/run', { inputs: { text: 'x' }, user: 'c', response_mode: 'streaming' })).text())),
      ...dataFrames(parseSse(await (await post(approval, '/workflows/run', { inputs: { draft: 'x' }, user: 'c', response_mode: 'streaming' })).text())),
    ];
    expect(new Set(events.map((e) => e.event))).toEqual(new Set(['workflow_started', 'node_started', 'node_finished', 'text_chunk', 'workflow_finished', 'human_input_required', 'workflow_paused']));
    for (const e of events) expect(schemaErrors('ChunkWorkflowEvent', e), String(e.event)).toEqual([]);
  });

  it('POST /chat-messages blocking and streaming, GET /conversations, chat stop', async () => {
    const body = await (await post(chat, '/chat-messages', { inputs: {}, query: 'hi', user: 'c' })).json();
    expect(responseErrors('/chat-messages', 'post', 200, body)).toEqual([]);
    const events = dataFrames(parseSse(await (await post(chat, '/chat-messages', { inputs: {}, query: 'again', user: 'c', response_mode: 'streaming', conversation_id: body.conversation_id })).text()));
    for (const e of events) expect(schemaErrors('ChunkChatEvent', e), String(e.event)).toEqual([]);
    // (the /messages response schema uses `nullable` without `type`, which Ajv cannot compile)
    const convs = await (await fetch(`${s.api}/conversations?user=c`, { headers: h(chat) })).json();
    expect(responseErrors('/conversations', 'get', 200, convs)).toEqual([]);
    const stop = await (await post(chat, `/chat-messages/${body.task_id}/stop`, { user: 'c' })).json();
    expect(responseErrors('/chat-messages/{task_id}/stop', 'post', 200, stop)).toEqual([]);
  });
});
