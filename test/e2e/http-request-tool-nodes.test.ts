import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startServer, type TestServer } from '../helpers/server.js';
import { endNode, startNode, workflowDsl, type NodeSpec } from '../helpers/workflow-dsl.js';

let s: TestServer;
let upstream: Server;
let base = '';
const seen: { method: string; url: string; headers: IncomingMessage['headers']; body: string }[] = [];

beforeAll(async () => {
  upstream = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url!, headers: req.headers, body });
      if (req.url?.startsWith('/hang')) return; // never answers
      if (req.url?.startsWith('/missing')) return void res.writeHead(404, { 'content-type': 'text/plain' }).end('not here');
      if (req.url?.startsWith('/moved')) return void res.writeHead(302, { location: '/echo?from=redirect' }).end();
      res.writeHead(201, { 'content-type': 'application/json', 'x-upstream': 'yes' }).end(JSON.stringify({ method: req.method, url: req.url, body }));
    });
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  s = await startServer({ env: { SSRF_ALLOW_HOSTS: '127.0.0.1' } });
});
afterAll(async () => {
  await s?.close();
  upstream?.closeAllConnections();
  await new Promise((resolve) => upstream?.close(resolve));
});

const headers = (key: string) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' });
async function blocking(server: TestServer, key: string, inputs: Record<string, unknown>) {
  const r = await fetch(`${server.api}/workflows/run`, { method: 'POST', headers: headers(key), body: JSON.stringify({ inputs, user: 'u' }) });
  expect(r.status).toBe(200);
  return (await r.json()).data;
}

const httpNode = (extra: Record<string, unknown>): NodeSpec => ({
  id: 'http',
  type: 'http-request',
  method: 'get',
  url: '{{#start.url#}}',
  authorization: { type: 'no-auth' },
  headers: '',
  params: '',
  body: { type: 'none', data: [] },
  timeout: { connect: 5, read: 5, write: 5 },
  ...extra,
});
const app = (node: NodeSpec) =>
  workflowDsl(
    [startNode([{ variable: 'url' }, { variable: 'name', required: false }]), node, endNode({ status: ['http', 'status_code'], body: ['http', 'body'], headers: ['http', 'headers'], files: ['http', 'files'] })],
    [['start', 'http'], ['http', 'end']],
  );

describe('http-request node over HTTP', () => {
  it('renders url, params, headers, api-key auth and a JSON body; outputs status_code, body, headers, files', async () => {
    const node = httpNode({
      method: 'post',
      url: '{{#start.url#}}/echo',
      params: 'q:{{#start.name#}}\nlang:en',
      headers: 'X-Name:{{#start.name#}}',
      authorization: { type: 'api-key', config: { type: 'bearer', api_key: 'sk-test' } },
      body: { type: 'json', data: [{ type: 'text', value: '{"name": "{{#start.name#}}"}' }] },
    });
    const d = await blocking(s, (await s.importApp(app(node))).apiKey, { url: base, name: 'ada' });
    expect(d.status).toBe('succeeded');
    expect(d.outputs.status).toBe(201);
    expect(JSON.parse(d.outputs.body)).toEqual({ method: 'POST', url: '/echo?q=ada&lang=en', body: '{"name": "ada"}' });
    expect(d.outputs.headers).toMatchObject({ 'content-type': 'application/json', 'x-upstream': 'yes' });
    expect(d.outputs.files).toEqual([]);
    const req = seen.at(-1)!;
    expect(req.headers).toMatchObject({ authorization: 'Bearer sk-test', 'x-name': 'ada', 'content-type': 'application/json' });
    // The key never reaches API clients: the node's process_data shows it masked.
    const events = await s.runtime.store.db.selectFrom('workflow_run_events').select('payload').execute();
    const logged = events.map((e) => e.payload).join('');
    expect(logged).not.toContain('sk-test');
    expect(logged).toContain('"Authorization":"**************"');
  });

  it('follows redirects; a 404 succeeds without an error strategy and fails with one', async () => {
    const follow = await blocking(s, (await s.importApp(app(httpNode({ url: '{{#start.url#}}/moved' })))).apiKey, { url: base });
    expect(JSON.parse(follow.outputs.body).url).toBe('/echo?from=redirect');
    const plain = await blocking(s, (await s.importApp(app(httpNode({ url: '{{#start.url#}}/missing' })))).apiKey, { url: base });
    expect(plain).toMatchObject({ status: 'succeeded', outputs: { status: 404, body: 'not here' } });
    const strict = await blocking(s, (await s.importApp(app(httpNode({ url: '{{#start.url#}}/missing', error_strategy: 'default-value', default_value: [{ key: 'status_code', type: 'number', value: 0 }] })))).apiKey, { url: base });
    expect(strict).toMatchObject({ status: 'partial-succeeded', outputs: { status: 0 } });
  });

  it('fails on a read timeout naming it, and on an invalid URL', async () => {
    const slow = await blocking(s, (await s.importApp(app(httpNode({ url: '{{#start.url#}}/hang', timeout: { connect: 5, read: 1, write: 5 } })))).apiKey, { url: base });
    expect(slow).toMatchObject({ status: 'failed', error: `timed out waiting for ${base}/hang after 1s` });
    const bad = await blocking(s, (await s.importApp(app(httpNode({})))).apiKey, { url: 'not a url' });
    expect(bad).toMatchObject({ status: 'failed', error: 'Invalid URL: not a url' });
  });

  it('the SSRF guard refuses loopback targets unless SSRF_ALLOW_HOSTS lists them', async () => {
    const guarded = await startServer();
    try {
      const d = await blocking(guarded, (await guarded.importApp(app(httpNode({})))).apiKey, { url: `${base}/echo` });
      expect(d).toMatchObject({ status: 'failed', error: 'host 127.0.0.1 resolves to a private, loopback or reserved address, which is not allowed (SSRF_ALLOW_HOSTS)' });
    } finally {
      await guarded.close();
    }
  });
});

describe('tool node (builtin json_parse) over HTTP', () => {
  it('parses a JSON string given as {type: mixed, value}', async () => {
    const dsl = workflowDsl(
      [
        startNode([{ variable: 'j', type: 'paragraph' }]),
        { id: 'tool', type: 'tool', provider_id: 'builtin', provider_type: 'builtin', tool_name: 'json_parse', tool_configurations: {}, tool_parameters: { json_string: { type: 'mixed', value: '{{#start.j#}}' } } },
        endNode({ r: ['tool', 'result'], json: ['tool', 'json'] }),
      ],
      [['start', 'tool'], ['tool', 'end']],
    );
    const d = await blocking(s, (await s.importApp(dsl)).apiKey, { j: '[1, {"a": true}]' });
    expect(d.outputs).toEqual({ r: [1, { a: true }], json: [[1, { a: true }]] });
  });

  it('a tool that is not available here imports, and the run fails naming the node, the tool and the plugin', async () => {
    const dsl = workflowDsl(
      [startNode(), { id: 'tool', type: 'tool', title: 'Google', provider_id: 'langgenius/google/google', provider_type: 'builtin', tool_name: 'google_search', tool_parameters: {} }, endNode({})],
      [['start', 'tool'], ['tool', 'end']],
    );
    const d = await blocking(s, (await s.importApp(dsl)).apiKey, {});
    expect(d.status).toBe('failed');
    expect(d.error).toMatch(/^tool node "Google" \(tool\): tool "google_search" of provider "langgenius\/google\/google": the marketplace plugin "langgenius\/google" is not available here/);
  });
});
