import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';
import { stringify } from 'yaml';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { openAiCompatibleProviders } from '../helpers/openai-providers.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { endNode, startNode, workflowDsl } from '../helpers/workflow-dsl.js';
import { loadConfig, ConfigError } from '../../src/config.js';

/** A 1x1 PNG. */
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64');

/** MCP servers built with the SDK's own server classes, on both HTTP transports. */
let listings = 0;
function mcpServer(): McpServer {
  const server = new McpServer({ name: 'test-mcp', version: '1.0.0' });
  server.server.onerror = () => undefined;
  server.registerTool('add', { description: 'Adds two numbers', inputSchema: { a: z.number().describe('first'), b: z.number().describe('second') } }, async ({ a, b }) => ({ content: [{ type: 'text', text: String(a + b) }], structuredContent: { sum: a + b } }));
  server.registerTool('chart', { description: 'Draws a chart', inputSchema: {} }, async () => ({ content: [{ type: 'text', text: 'here it is' }, { type: 'image', data: PNG.toString('base64'), mimeType: 'image/png' }] }));
  server.registerTool('fail', { description: 'Always fails', inputSchema: {} }, async () => ({ content: [{ type: 'text', text: 'it broke' }], isError: true }));
  return server;
}

let http: Server;
let mcpBase = '';
const sse = new Map<string, SSEServerTransport>();
let fake: FakeOpenAI;
let s: TestServer;
let dir = '';

const body = (req: IncomingMessage) => new Promise<unknown>((resolve) => {
  let b = '';
  req.on('data', (c) => (b += c));
  req.on('end', () => resolve(b ? JSON.parse(b) : undefined));
});

beforeAll(async () => {
  http = createServer(async (req, res) => {
    const url = new URL(req.url!, 'http://x');
    if (url.pathname === '/mcp') {
      // stateless Streamable HTTP: a server and transport per request, as the SDK's example
      const parsed = await body(req);
      if ((parsed as { method?: string } | undefined)?.method === 'tools/list') listings++;
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      const server = mcpServer();
      res.on('close', () => void transport.close().then(() => server.close()));
      await server.connect(transport);
      await transport.handleRequest(req, res, parsed);
      return;
    }
    if (url.pathname === '/sse' && req.method === 'GET') {
      const transport = new SSEServerTransport('/messages', res);
      sse.set(transport.sessionId, transport);
      res.on('close', () => sse.delete(transport.sessionId));
      await mcpServer().connect(transport);
      return;
    }
    if (url.pathname === '/messages' && req.method === 'POST') {
      const t = sse.get(url.searchParams.get('sessionId') ?? '');
      if (!t) return void res.writeHead(404).end();
      await t.handlePostMessage(req, res, await body(req));
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  mcpBase = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  fake = await startFakeOpenAI();
  dir = mkdtempSync(path.join(os.tmpdir(), 'dovetail-mcp-'));
  const file = path.join(dir, 'dovetail.yaml');
  writeFileSync(
    file,
    stringify({
      mcp: {
        servers: {
          calc: { url: `${mcpBase}/mcp`, transport: 'streamable-http', provider_ids: ['0a1b2c-dify-provider-id'] },
          'calc-sse': { url: `${mcpBase}/sse`, transport: 'sse', timeout: 10 },
        },
      },
    }),
  );
  s = await startServer({ runtime: { providers: openAiCompatibleProviders(fake.baseUrl) }, env: { DOVETAIL_CONFIG: file } });
});
afterAll(async () => {
  await s?.close();
  await fake?.close();
  http?.closeAllConnections();
  await new Promise((resolve) => http?.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});
beforeEach(() => {
  fake.behaviour = {};
  fake.requests.length = 0;
});

const headers = (key: string) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' });
async function run(dsl: string, inputs: Record<string, unknown> = {}): Promise<Record<string, any>> {
  const { apiKey } = await s.importApp(dsl);
  const r = await fetch(`${s.api}/workflows/run`, { method: 'POST', headers: headers(apiKey), body: JSON.stringify({ inputs, user: 'u' }) });
  expect(r.status).toBe(200);
  return (await r.json()).data;
}
const mcpToolApp = (server: string, tool: string, params: Record<string, unknown>) =>
  workflowDsl(
    [
      startNode(),
      { id: 'tool', type: 'tool', title: 'MCP', provider_id: server, provider_name: server, provider_type: 'mcp', tool_name: tool, tool_configurations: {}, tool_parameters: Object.fromEntries(Object.entries(params).map(([k, v]) => [k, { type: 'constant', value: v }])) },
      endNode({ text: ['tool', 'text'], json: ['tool', 'json'] }),
    ],
    [['start', 'tool'], ['tool', 'end']],
  );

describe('MCP tools (provider_type: mcp)', () => {
  it('a tool node calls an MCP tool over Streamable HTTP and over SSE; the listing is read once', async () => {
    const before = listings;
    for (let i = 0; i < 2; i++) {
      const d = await run(mcpToolApp('calc', 'add', { a: 2, b: 3 }));
      expect(d).toMatchObject({ status: 'succeeded', outputs: { text: '5', json: [{ sum: 5 }] } });
    }
    expect(listings - before).toBe(1);
    const viaId = await run(mcpToolApp('0a1b2c-dify-provider-id', 'add', { a: '4', b: '1' }));
    expect(viaId.outputs.text).toBe('5');
    const overSse = await run(mcpToolApp('calc-sse', 'add', { a: 10, b: 20 }));
    expect(overSse).toMatchObject({ status: 'succeeded', outputs: { text: '30' } });
  });

  it('an image a tool returns becomes a tool_file of the run: the tool node\'s files, readable at its signed URL and by later nodes', async () => {
    const dsl = workflowDsl(
      [
        startNode(),
        { id: 'tool', type: 'tool', title: 'MCP', provider_id: 'calc', provider_type: 'mcp', tool_name: 'chart', tool_configurations: {}, tool_parameters: {} },
        { id: 'pick', type: 'list-operator', variable: ['tool', 'files'], filter_by: { enabled: true, conditions: [{ key: 'type', comparison_operator: 'in', value: ['image'] }] }, order_by: { enabled: false }, limit: { enabled: false }, extract_by: { enabled: false } },
        endNode({ text: ['tool', 'text'], files: ['tool', 'files'], first: ['pick', 'first_record'] }),
      ],
      [['start', 'tool'], ['tool', 'pick'], ['pick', 'end']],
    );
    const d = await run(dsl);
    expect(d.status).toBe('succeeded');
    expect(d.outputs.text).toBe('here it is');
    expect(d.outputs.files).toHaveLength(1);
    const f = d.outputs.files[0];
    expect(f).toMatchObject({ dify_model_identity: '__dify__file__', type: 'image', transfer_method: 'tool_file', filename: 'chart.png', extension: '.png', mime_type: 'image/png', size: PNG.length });
    expect(f.related_id).toBe(f.id);
    expect(d.outputs.first).toMatchObject({ id: f.id, transfer_method: 'tool_file' });
    expect(f.url).toMatch(new RegExp(`^/files/${f.id}/file-preview\\?timestamp=\\d+&nonce=[0-9a-f]+&sign=`));
    const got = await fetch(`${s.url}${f.url}`);
    expect(got.status).toBe(200);
    expect(Buffer.from(await got.arrayBuffer())).toEqual(PNG);
    // stored as a file of the calling app
    const row = await s.runtime.uploads.find(f.id);
    expect(row?.appId).toBe((await s.runtime.store.db.selectFrom('workflow_runs').select('app_id').where('id', '=', d.id).executeTakeFirstOrThrow()).app_id);
  });

  it('an agent collects the files its tools return', async () => {
    fake.behaviour = {
      toolCalls: (b) => ((b.messages as { role: string }[]).some((m) => m.role === 'tool') ? undefined : [{ name: 'chart', arguments: '{}' }]),
      reply: () => 'drawn',
    };
    const dsl = workflowDsl(
      [
        startNode(),
        {
          id: 'agent',
          type: 'agent',
          agent_strategy_provider_name: 'langgenius/agent/agent',
          agent_strategy_name: 'function_calling',
          agent_parameters: {
            model: { type: 'constant', value: { provider: 'openai', model: 'gpt-test', mode: 'chat', completion_params: {} } },
            tools: { type: 'constant', value: [{ enabled: true, provider_name: 'calc', tool_name: 'chart', type: 'mcp' }] },
            query: { type: 'constant', value: 'draw' },
          },
        },
        endNode({ text: ['agent', 'text'], files: ['agent', 'files'] }),
      ],
      [['start', 'agent'], ['agent', 'end']],
    );
    const d = await run(dsl);
    expect(d).toMatchObject({ status: 'succeeded', outputs: { text: 'drawn' } });
    expect(d.outputs.files).toHaveLength(1);
    expect(d.outputs.files[0]).toMatchObject({ transfer_method: 'tool_file', mime_type: 'image/png', size: PNG.length });
  });

  it("an agent-chat answer's tool files are listed by GET /messages as the assistant's message_files (issue 41)", async () => {
    fake.behaviour = {
      toolCalls: (b) => ((b.messages as { role: string }[]).some((m) => m.role === 'tool') ? undefined : [{ name: 'chart', arguments: '{}' }]),
      reply: () => 'drawn',
    };
    const { apiKey } = await s.importApp(`app:
  mode: agent-chat
  name: Charts
kind: app
version: 0.3.1
model_config:
  model:
    provider: openai
    name: gpt-test
    mode: chat
  pre_prompt: ''
  agent_mode:
    enabled: true
    strategy: function_call
    tools:
      - enabled: true
        provider_id: calc
        provider_name: calc
        provider_type: mcp
        tool_name: chart
        tool_parameters: {}
`);
    const r = await fetch(`${s.api}/chat-messages`, { method: 'POST', headers: headers(apiKey), body: JSON.stringify({ inputs: {}, query: 'draw', user: 'u', response_mode: 'streaming' }) });
    expect(r.status).toBe(200);
    const end = (await r.text())
      .split('\n\n')
      .filter((f) => f.startsWith('data: '))
      .map((f) => JSON.parse(f.slice(6)) as { event: string; conversation_id: string })
      .find((e) => e.event === 'message_end')!;
    const list = await (await fetch(`${s.api}/messages?user=u&conversation_id=${end.conversation_id}`, { headers: headers(apiKey) })).json();
    const m = list.data[0] as { message_files: Record<string, unknown>[]; agent_thoughts: { files: string[] }[] };
    const toolFileIds = m.agent_thoughts.flatMap((t) => t.files);
    expect(toolFileIds).toHaveLength(1);
    expect(m.message_files).toEqual([
      {
        id: toolFileIds[0],
        filename: 'chart.png',
        type: 'image',
        url: expect.stringContaining(`/files/${toolFileIds[0]}/file-preview?timestamp=`),
        mime_type: 'image/png',
        size: PNG.length,
        transfer_method: 'tool_file',
        belongs_to: 'assistant',
        upload_file_id: toolFileIds[0],
      },
    ]);
    const got = await fetch(String(m.message_files[0]!.url));
    expect(Buffer.from(await got.arrayBuffer())).toEqual(PNG);
  });

  it('errors name the server and tool: isError, an unknown tool, an unconfigured server', async () => {
    const failed = await run(mcpToolApp('calc', 'fail', {}));
    expect(failed).toMatchObject({ status: 'failed', error: 'MCP tool "fail" reported an error: it broke' });
    const unknown = await run(mcpToolApp('calc', 'nope', {}));
    expect(unknown.error).toBe('tool node "MCP" (tool): tool "nope" of MCP server "calc": the server has no such tool (its tools: add, chart, fail)');
    const missing = await run(mcpToolApp('elsewhere', 'add', {}));
    expect(missing.error).toMatch(/^tool node "MCP" \(tool\): tool "add" of provider "elsewhere": no MCP server "elsewhere" is configured; declare it under mcp.servers in dovetail.yaml/);
  });

  it('an agent uses an MCP tool with its own JSON Schema', async () => {
    fake.behaviour = {
      toolCalls: (b) => ((b.messages as { role: string }[]).some((m) => m.role === 'tool') ? undefined : [{ name: 'add', arguments: JSON.stringify({ a: 20, b: 22 }) }]),
      reply: (b) => `sum is ${(b.messages as { role: string; content: string }[]).find((m) => m.role === 'tool')!.content}`,
    };
    const dsl = workflowDsl(
      [
        startNode(),
        {
          id: 'agent',
          type: 'agent',
          agent_strategy_provider_name: 'langgenius/agent/agent',
          agent_strategy_name: 'function_calling',
          agent_parameters: {
            model: { type: 'constant', value: { provider: 'openai', model: 'gpt-test', mode: 'chat', completion_params: {} } },
            tools: { type: 'constant', value: [{ enabled: true, provider_name: 'calc', tool_name: 'add', type: 'mcp' }] },
            query: { type: 'constant', value: 'add 20 and 22' },
          },
        },
        endNode({ text: ['agent', 'text'] }),
      ],
      [['start', 'agent'], ['agent', 'end']],
    );
    const d = await run(dsl);
    expect(d).toMatchObject({ status: 'succeeded', outputs: { text: 'sum is 42' } });
    const fn = (fake.requests[0]!.body.tools as { function: { parameters: Record<string, any> } }[])[0]!.function;
    expect(fn.parameters).toMatchObject({ type: 'object', properties: { a: { type: 'number', description: 'first' }, b: { type: 'number' } }, required: ['a', 'b'] });
  });

  it('stdio servers are refused unless MCP_STDIO_ENABLED=true', () => {
    const file = path.join(dir, 'stdio.yaml');
    writeFileSync(file, stringify({ mcp: { servers: { local: { command: 'node', args: ['server.js'] } } } }));
    expect(() => loadConfig({ DOVETAIL_CONFIG: file })).toThrow(ConfigError);
    expect(() => loadConfig({ DOVETAIL_CONFIG: file })).toThrow('mcp.servers.local: stdio MCP servers start processes on this machine; set MCP_STDIO_ENABLED=true to allow them');
    expect(loadConfig({ DOVETAIL_CONFIG: file, MCP_STDIO_ENABLED: 'true' }).tools.mcpServers).toMatchObject([{ name: 'local', transport: 'stdio', command: 'node', args: ['server.js'] }]);
  });
});
