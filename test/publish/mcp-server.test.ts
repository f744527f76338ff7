import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { example, PROJECT_ROOT } from '../helpers/fixtures.js';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { openAiCompatibleProviders } from '../helpers/openai-providers.js';
import { McpServerStore } from '../../src/publish/mcp-server-store.js';

let fake: FakeOpenAI;
let s: TestServer;
let store: McpServerStore;
let workflowId: string;
let chatflowId: string;
const clients: Client[] = [];

/** The SDK's own client, connected over streamable HTTP to a server code. */
async function connect(code: string): Promise<Client> {
  const client = new Client({ name: 'dovetail-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${s.url}/mcp/server/${code}/mcp`)));
  clients.push(client);
  return client;
}

beforeAll(async () => {
  fake = await startFakeOpenAI();
  s = await startServer({ runtime: { providers: openAiCompatibleProviders(fake.baseUrl) } });
  store = new McpServerStore(s.runtime.store.db);
  ({ appId: workflowId } = await s.importApp(example('workflow-branching.yml')));
  ({ appId: chatflowId } = await s.importApp(example('chatflow-assistant.yml').replace('provider: mock', 'provider: openai')));
});
afterAll(async () => {
  for (const c of clients) await c.close().catch(() => undefined);
  await s?.close();
  await fake?.close();
});

describe('apps as MCP servers (the SDK client over streamable HTTP)', () => {
  it('a workflow app: one tool whose input schema is its start form; a call answers its outputs as JSON text', async () => {
    const server = await store.save(workflowId, { status: 'active', description: 'Greets someone', parameters: { name: 'Who to greet' } }, Date.now());
    const client = await connect(server.serverCode);
    expect(client.getInstructions()).toBe('Greets someone');
    const { tools } = await client.listTools();
    expect(tools).toEqual([
      {
        name: 'Branching_greeter',
        description: 'Greets someone',
        inputSchema: {
          type: 'object',
          properties: { name: { description: 'Who to greet', type: 'string' }, tone: { description: '', type: 'string', enum: ['formal', 'casual'] } },
          required: ['name', 'tone'],
        },
      },
    ]);
    const result = await client.callTool({ name: 'Branching_greeter', arguments: { name: 'ada', tone: 'formal' } });
    expect(result.isError).toBeFalsy();
    const text = (result.content as { type: string; text: string }[])[0]!.text;
    expect(JSON.parse(text)).toMatchObject({ greeting: expect.stringContaining('Good day, Ada.') });
    // the run is in the app's logs, started by the server's own end user
    const runs = await s.runtime.runs.findForApp(workflowId, (await s.runtime.store.db.selectFrom('workflow_runs').select('id').where('app_id', '=', workflowId).executeTakeFirstOrThrow()).id);
    expect(runs?.status).toBe('succeeded');
  });

  it('a chatflow: the tool takes query plus inputs and answers with the answer; each call a new conversation', async () => {
    fake.behaviour = { reply: (b) => `mcp#${(b.messages as unknown[]).length}` };
    const server = await store.save(chatflowId, { status: 'active', description: 'Chat with the assistant' }, Date.now());
    const client = await connect(server.serverCode);
    const { tools } = await client.listTools();
    expect(tools[0]).toMatchObject({ name: 'Chatflow_assistant', inputSchema: { type: 'object', properties: { query: { type: 'string', description: 'User Input/Question content' } }, required: ['query'] } });
    const first = await client.callTool({ name: 'Chatflow_assistant', arguments: { query: 'hello' } });
    expect(first).toMatchObject({ content: [{ type: 'text', text: 'mcp#2' }] });
    const second = await client.callTool({ name: 'Chatflow_assistant', arguments: { query: 'again' } });
    expect(second).toMatchObject({ content: [{ type: 'text', text: 'mcp#2' }] });
  });

  it('errors are tool errors: a missing required input, a failing model, an unknown tool name', async () => {
    const server = (await store.byApp(workflowId))!;
    const client = await connect(server.serverCode);
    const missing = await client.callTool({ name: 'Branching_greeter', arguments: { name: 'ada' } });
    expect(missing.isError).toBe(true);
    expect((missing.content as { text: string }[])[0]!.text).toContain('tone');
    fake.behaviour = { failStatus: 500, failMessage: 'upstream exploded' };
    const chat = await connect((await store.byApp(chatflowId))!.serverCode);
    const failed = await chat.callTool({ name: 'Chatflow_assistant', arguments: { query: 'hi' } });
    expect(failed.isError).toBe(true);
    expect((failed.content as { text: string }[])[0]!.text).toMatch(/upstream exploded|500/);
    const unknown = await client.callTool({ name: 'nope', arguments: {} });
    expect(unknown.isError).toBe(true);
  });

  it('disabled by default and when disabled: 404; an unknown or rotated code: 404', async () => {
    const { appId } = await s.importApp(example('workflow-branching.yml').replace('name: Branching greeter', 'name: Other greeter'));
    const created = await store.save(appId, { description: 'x' }, Date.now());
    expect(created.status).toBe('inactive');
    const post = (code: string) =>
      fetch(`${s.url}/mcp/server/${code}/mcp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      });
    const disabled = await post(created.serverCode);
    expect(disabled.status).toBe(404);
    expect(await disabled.json()).toEqual({ code: 'not_found', message: 'Server Not Found', status: 404 });
    expect((await post('nosuchcode')).status).toBe(404);
    const enabled = await store.save(appId, { status: 'active' }, Date.now());
    expect((await post(enabled.serverCode)).status).toBe(200);
    const rotated = await store.save(appId, { rotate: true }, Date.now());
    expect(rotated.serverCode).not.toBe(enabled.serverCode);
    expect((await post(enabled.serverCode)).status).toBe(404);
    expect((await post(rotated.serverCode)).status).toBe(200);
    await store.save(appId, { status: 'inactive' }, Date.now());
    expect((await post(rotated.serverCode)).status).toBe(404);
  });
});

describe('dovetail app mcp', () => {
  /** The CLI on the test server's database. */
  async function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    const env: Record<string, string> = { ...(process.env as Record<string, string>), DOVETAIL_DATA_DIR: s.dataDir, LOG_LEVEL: 'silent', REDIS_URL: '', APP_WEB_URL: s.url };
    delete env.DOVETAIL_CONFIG;
    if (s.config.databaseUrl) Object.assign(env, { DATABASE_URL: s.config.databaseUrl, DATABASE_SCHEMA: s.config.databaseSchema ?? '' });
    else env.DATABASE_URL = '';
    try {
      const r = await promisify(execFile)(process.execPath, [path.join(PROJECT_ROOT, 'bin', 'dovetail.js'), ...args], { env, cwd: s.dataDir });
      return { code: 0, stdout: r.stdout, stderr: r.stderr };
    } catch (err) {
      const e = err as { code: number; stdout: string; stderr: string };
      return { code: e.code, stdout: e.stdout, stderr: e.stderr };
    }
  }

  it('--enable with a description and input descriptions publishes the app at the URL it prints; --disable makes it 404', async () => {
    const { appId } = await s.importApp(example('workflow-branching.yml').replace('name: Branching greeter', 'name: CLI greeter'));
    const shown = await cli('app', 'mcp', appId, '--json');
    expect(shown.code).toBe(0);
    expect(JSON.parse(shown.stdout)).toMatchObject({ status: 'inactive', url: null });
    const r = await cli('app', 'mcp', 'CLI greeter', '--enable', '--description', 'Greets from the CLI', '--param', 'name=Who = to greet', '--json');
    expect(r.code).toBe(0);
    const view = JSON.parse(r.stdout) as { status: string; url: string; server_code: string; parameters: Record<string, string> };
    expect(view).toMatchObject({ status: 'active', description: 'Greets from the CLI', parameters: { name: 'Who = to greet' } });
    expect(view.url).toBe(`${s.url}/mcp/server/${view.server_code}/mcp`);
    const client = await connect(view.server_code);
    const { tools } = await client.listTools();
    expect(tools[0]).toMatchObject({ name: 'CLI_greeter', description: 'Greets from the CLI', inputSchema: { properties: { name: { description: 'Who = to greet' } } } });
    const bad = await cli('app', 'mcp', appId, '--param', 'nosuch=x');
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('nosuch');
    expect((await cli('app', 'mcp', appId, '--disable')).code).toBe(0);
    const after = await fetch(view.url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }) });
    expect(after.status).toBe(404);
    // deleting the app (purged or not) removes its server: the row is gone, not left behind
    expect((await cli('app', 'mcp', appId, '--enable')).code).toBe(0);
    expect((await cli('app', 'delete', appId, '--yes', '--purge')).code).toBe(0);
    expect(await store.byApp(appId)).toBeUndefined();
    const gone = await fetch(view.url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }) });
    expect(gone.status).toBe(404);
  });
});
