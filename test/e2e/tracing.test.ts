import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startServer, type TestServer } from '../helpers/server.js';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { openAiCompatibleProviders } from '../helpers/openai-providers.js';
import { endNode, llmNode, startNode, workflowDsl } from '../helpers/workflow-dsl.js';

/** A span as the OTLP/HTTP JSON export carries it. */
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes: { key: string; value: Record<string, unknown> }[];
}

/** A local OTLP/HTTP receiver: decodes each `POST /v1/traces` JSON export and keeps its spans. */
async function startReceiver(): Promise<{ url: string; spans: OtlpSpan[]; services: string[]; paths: string[]; close(): Promise<void> }> {
  const spans: OtlpSpan[] = [];
  const services: string[] = [];
  const paths: string[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      paths.push(`${req.method} ${req.url} ${req.headers['content-type']}`);
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
        resourceSpans: { resource: { attributes: OtlpSpan['attributes'] }; scopeSpans: { spans: OtlpSpan[] }[] }[];
      };
      for (const rs of body.resourceSpans) {
        services.push(String(rs.resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue));
        for (const ss of rs.scopeSpans) spans.push(...ss.spans);
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, spans, services, paths, close: () => new Promise((r) => server.close(() => r())) };
}

const attr = (s: OtlpSpan, key: string): unknown => {
  const v = s.attributes.find((a) => a.key === key)?.value;
  return v ? (v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : v.boolValue)) : undefined;
};

let receiver: Awaited<ReturnType<typeof startReceiver>>;
let fake: FakeOpenAI;
let s: TestServer;
let key: string;

beforeAll(async () => {
  receiver = await startReceiver();
  fake = await startFakeOpenAI();
  s = await startServer({
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_SERVICE_NAME: 'dovetail-test' },
    runtime: { providers: openAiCompatibleProviders(fake.baseUrl) },
  });
  ({ apiKey: key } = await s.importApp(workflowDsl([startNode(), llmNode('llm', 'Say hi'), endNode({ text: ['llm', 'text'] })], [['start', 'llm'], ['llm', 'end']])));
});
afterAll(async () => {
  await s?.close();
  await fake?.close();
  await receiver?.close();
});

describe('OpenTelemetry tracing (OTEL_EXPORTER_OTLP_ENDPOINT)', () => {
  it('exports a span per request, run, node and model call over OTLP/HTTP JSON', async () => {
    fake.behaviour = { reply: 'hello', chunkSize: 5 };
    const r = await fetch(`${s.api}/workflows/run`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ inputs: {}, user: 'ops', response_mode: 'blocking' }) });
    const body = await r.json();
    expect(body.data.status).toBe('succeeded');
    await s.runtime.tracing.flush();

    expect(receiver.paths[0]).toMatch(/^POST \/v1\/traces application\/json/);
    expect(receiver.services).toContain('dovetail-test');
    const request = receiver.spans.find((x) => x.name === 'POST /v1/workflows/run')!;
    expect(request).toBeDefined();
    expect(attr(request, 'http.response.status_code')).toBe(200);
    const run = receiver.spans.find((x) => x.name === 'workflow.run' && attr(x, 'dovetail.run_id') === body.workflow_run_id)!;
    expect(run).toBeDefined();
    expect(attr(run, 'dovetail.run_status')).toBe('succeeded');
    const nodes = receiver.spans.filter((x) => x.traceId === run.traceId && x.parentSpanId === run.spanId);
    expect(nodes.map((n) => n.name).sort()).toEqual(['node end', 'node llm', 'node start']);
    expect(attr(nodes.find((n) => n.name === 'node llm')!, 'dovetail.tokens')).toBe(3);
    const model = receiver.spans.find((x) => x.name === 'model.call' && attr(x, 'gen_ai.request.model') === 'gpt-test')!;
    expect(model).toBeDefined();
    expect(attr(model, 'gen_ai.system')).toBe('openai');
    expect(attr(model, 'gen_ai.usage.input_tokens')).toBe(2);
  });
});
