import { stringify } from 'yaml';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpServerStore } from '../src/publish/mcp-server-store.js';
import { benchServer, fmt, median, percentile, timedPair } from './lib.js';

const RUNS = 100;
const WARMUP = 10;

const node = (id: string, data: Record<string, unknown>) => ({ id, data: { title: id, ...data } });

/** start → template → end: a run whose own cost is small, so the protocol's shows. */
const WORKFLOW = stringify({
  app: { name: 'greeter', mode: 'workflow' },
  kind: 'app',
  version: '0.3.1',
  workflow: {
    graph: {
      nodes: [
        node('start', { type: 'start', variables: [{ variable: 'name', label: 'name', type: 'text-input', required: true }] }),
        node('greet', { type: 'template-transform', template: 'Hello {{ name }}', variables: [{ variable: 'name', value_selector: ['start', 'name'] }] }),
        node('end', { type: 'end', outputs: [{ variable: 'greeting', value_selector: ['greet', 'output'] }] }),
      ],
      edges: [
        { source: 'start', target: 'greet' },
        { source: 'greet', target: 'end' },
      ],
    },
  },
});


/**
 * MCP call overhead: one `tools/call` of a workflow app published as an MCP server (the SDK's
 * client, connected once, over streamable HTTP) against the same run started with
 * `POST /v1/workflows/run` (blocking) in the same process and the same run of the bench.
 */
export async function run(): Promise<void> {
  const s = await benchServer();
  const app = await s.runtime.apps.importDsl(WORKFLOW);
  const key = (await s.runtime.keys.create('app', app.workspaceId, app.id)).apiKey;
  const server = await new McpServerStore(s.runtime.store.db).save(app.id, { status: 'active', description: 'Greets' }, Date.now());
  const client = new Client({ name: 'bench', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${s.url}/mcp/server/${server.serverCode}/mcp`)));
  const direct = async () => {
    const r = await fetch(`${s.url}/v1/workflows/run`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ inputs: { name: 'Ada' }, response_mode: 'blocking', user: 'bench' }) });
    const b = (await r.json()) as { data: { status: string; outputs: Record<string, string> } };
    if (b.data.status !== 'succeeded' || b.data.outputs.greeting !== 'Hello Ada') throw new Error(`run failed: ${JSON.stringify(b).slice(0, 300)}`);
  };
  const viaMcp = async () => {
    const r = await client.callTool({ name: 'greeter', arguments: { name: 'Ada' } });
    const text = (r.content as { text?: string }[])[0]?.text ?? '';
    if (r.isError || !text.includes('Hello Ada')) throw new Error(`tool call failed: ${JSON.stringify(r).slice(0, 300)}`);
  };
  const [api, mcp] = await timedPair(RUNS, WARMUP, direct, viaMcp);
  process.stdout.write(
    [
      `MCP tools/call of a workflow app (SDK client)           p50 ${fmt(median(mcp), 2)} ms  p95 ${fmt(percentile(mcp, 95), 2)} ms`,
      `  baseline: the same run via POST /v1/workflows/run     p50 ${fmt(median(api), 2)} ms  p95 ${fmt(percentile(api, 95), 2)} ms`,
      `  added by MCP (p50 difference)                         ${fmt(median(mcp) - median(api), 2)} ms`,
    ].join('\n') + '\n',
  );
  await client.close();
  await s.close();
}
