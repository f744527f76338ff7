import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/infra/logger.js';
import { completionApp } from '../helpers/apps.js';
import { freePort } from '../helpers/free-port.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { endNode, llmNode, startNode, workflowDsl } from '../helpers/workflow-dsl.js';

// A provider that cannot be reached: the error names the provider, its host and the node, and the
// failed run leaves one warn line in the server's log (issue 41).
const lines: string[] = [];
const sink = new Writable({
  write(chunk, _enc, done) {
    lines.push(...String(chunk).split('\n').filter(Boolean));
    done();
  },
});

let s: TestServer;
let port: number;
let flowKey: string;
let flowAppId: string;
let writerKey: string;
beforeAll(async () => {
  // a port nothing listens on
  port = await freePort();
  s = await startServer({ env: { OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: `http://127.0.0.1:${port}/v1` }, logger: createLogger('warn', sink) });
  ({ apiKey: flowKey, appId: flowAppId } = await s.importApp(
    workflowDsl([startNode(), llmNode('ask', 'hello', { title: 'Ask the model' }), endNode({ out: ['ask', 'text'] })], [['start', 'ask'], ['ask', 'end']]),
  ));
  ({ apiKey: writerKey } = await s.importApp(completionApp({ provider: 'openai' })));
});
afterAll(async () => {
  await s?.close();
});

const post = (key: string, path: string, body: unknown) =>
  fetch(`${s.api}${path}`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });

describe('a provider that cannot be reached', () => {
  it('fails the run with an error naming the provider, its host and the node, logged once at warn', async () => {
    const res = await post(flowKey, '/workflows/run', { inputs: {}, user: 'u1', response_mode: 'blocking' });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { workflow_run_id: string; data: { status: string; error: string } };
    expect(body.data.status).toBe('failed');
    const error = body.data.error;
    expect(error).toContain('model provider "openai"');
    expect(error).toContain(`127.0.0.1:${port}`);
    expect(error).toContain('ECONNREFUSED');
    expect(error).toContain('llm node "Ask the model", id ask');
    expect(error).not.toBe('Connection error.');

    const runId = body.workflow_run_id;
    const mine = lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.runId === runId);
    expect(mine).toHaveLength(1);
    expect(mine[0]).toMatchObject({ level: 40, appId: flowAppId, error, node: { id: 'ask', title: 'Ask the model', type: 'llm' } });
    expect(String(mine[0]!.msg)).toContain('run failed');
  });

  it('a completion app\'s error names the provider and its host too', async () => {
    const res = await post(writerKey, '/completion-messages', { inputs: { topic: 'tea' }, user: 'u1', response_mode: 'blocking' });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { code: string; message: string };
    expect(body.code).toBe('completion_request_error');
    expect(body.message).toContain(`Cannot connect to model provider "openai" at 127.0.0.1:${port}`);
  });
});
