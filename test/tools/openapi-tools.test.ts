import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { stringify } from 'yaml';
import { startServer, type TestServer } from '../helpers/server.js';
import { endNode, startNode, workflowDsl } from '../helpers/workflow-dsl.js';
import { loadConfig, ConfigError } from '../../src/config.js';

/**
 * Custom OpenAPI tools (`provider_type: api`) over real HTTP against a local API started here:
 * path, query, header and body parameters, the API key in a header or in the query, an upstream
 * error as the tool's error (without the key), and the documents read from dovetail.yaml.
 */
const PET_KEY = 'pet-secret-4711';
const WEATHER_KEY = 'weather-secret-0815';
let api: Server;
let base = '';
let s: TestServer;
let dir = '';
const seen: { method: string; url: string; headers: IncomingMessage['headers']; body: string }[] = [];

const petsDoc = () => ({
  openapi: '3.0.1',
  info: { title: 'Pets', version: '1' },
  servers: [{ url: `${base}/v2` }],
  paths: {
    '/pets/{petId}': {
      parameters: [{ $ref: '#/components/parameters/PetId' }],
      get: {
        operationId: 'getPet',
        description: 'One pet',
        parameters: [
          { name: 'verbose', in: 'query', schema: { type: 'boolean' } },
          { name: 'X-Trace', in: 'header', schema: { type: 'string' } },
        ],
      },
    },
    '/pets': {
      post: {
        summary: 'Adds a pet',
        requestBody: { content: { 'application/json': { schema: { $ref: '#/components/schemas/NewPet' } } } },
      },
    },
    '/broken': { get: { operationId: 'broken' } },
  },
  components: {
    parameters: { PetId: { name: 'petId', in: 'path', required: true, schema: { type: 'integer' } } },
    schemas: { NewPet: { type: 'object', required: ['name'], properties: { name: { type: 'string' }, age: { type: 'integer' } } } },
  },
});

beforeAll(async () => {
  api = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url!, headers: req.headers, body });
      const url = new URL(req.url!, 'http://x');
      const send = (status: number, v: unknown) => void res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(v));
      if (url.pathname.startsWith('/v2/')) {
        if (req.headers.authorization !== `Bearer ${PET_KEY}`) return send(401, { error: 'unauthorized' });
        const m = /^\/v2\/pets\/(\d+)$/.exec(url.pathname);
        if (m && req.method === 'GET') return send(200, { id: Number(m[1]), name: 'Rex', verbose: url.searchParams.get('verbose'), trace: req.headers['x-trace'] ?? null, note: 'größer' });
        if (url.pathname === '/v2/pets' && req.method === 'POST') return send(201, { created: JSON.parse(body) });
        // an upstream that echoes the credential it got in its error
        if (url.pathname === '/v2/broken') return send(502, { error: `backend down (key ${String(req.headers.authorization)})` });
      }
      if (url.pathname === '/weather/current') {
        if (url.searchParams.get('appid') !== WEATHER_KEY) return send(401, { error: 'bad appid' });
        return void res.writeHead(200, { 'content-type': 'text/plain' }).end(`sunny in ${url.searchParams.get('city')}`);
      }
      res.writeHead(404).end('no route');
    });
  });
  await new Promise<void>((resolve) => api.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(api.address() as AddressInfo).port}`;
  dir = mkdtempSync(path.join(os.tmpdir(), 'dovetail-openapi-'));
  writeFileSync(path.join(dir, 'pets.yaml'), stringify(petsDoc()));
  writeFileSync(
    path.join(dir, 'dovetail.yaml'),
    stringify({
      api_tools: {
        pets: {
          schema_file: 'pets.yaml',
          provider_ids: ['3f1e0000-dify-api-provider'],
          credentials: { auth_type: 'api_key_header', api_key_header: 'Authorization', api_key_header_prefix: 'bearer', api_key_value: PET_KEY },
        },
        weather: {
          schema: JSON.stringify({ openapi: '3.1.0', servers: [{ url: `${base}/weather` }], paths: { '/current': { get: { operationId: 'current', parameters: [{ name: 'city', in: 'query', required: true, schema: { type: 'string' } }] } } } }),
          credentials: { auth_type: 'api_key_query', api_key_query_param: 'appid', api_key_value: WEATHER_KEY },
        },
      },
    }),
  );
  s = await startServer({ env: { DOVETAIL_CONFIG: path.join(dir, 'dovetail.yaml'), SSRF_ALLOW_HOSTS: '127.0.0.1' } });
});
afterAll(async () => {
  await s?.close();
  api?.closeAllConnections();
  await new Promise((resolve) => api?.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

/** Runs start → api tool → end(text, json) and returns the blocking response body. */
async function runTool(provider: { id: string; name: string }, tool: string, params: Record<string, unknown>): Promise<Record<string, any>> {
  const dsl = workflowDsl(
    [
      startNode(),
      {
        id: 'api',
        type: 'tool',
        title: 'API',
        provider_id: provider.id,
        provider_name: provider.name,
        provider_type: 'api',
        tool_name: tool,
        tool_configurations: {},
        tool_parameters: Object.fromEntries(Object.entries(params).map(([k, v]) => [k, { type: 'constant', value: v }])),
      },
      endNode({ text: ['api', 'text'], json: ['api', 'json'] }),
    ],
    [['start', 'api'], ['api', 'end']],
  );
  const { apiKey } = await s.importApp(dsl);
  const r = await fetch(`${s.api}/workflows/run`, { method: 'POST', headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ inputs: {}, user: 'u' }) });
  expect(r.status).toBe(200);
  return r.json();
}

const PETS = { id: '3f1e0000-dify-api-provider', name: 'pets' };

describe('custom OpenAPI tools (provider_type: api)', () => {
  it('path, query and header parameters; the key as a Bearer header; a JSON answer is the text (json.dumps) and the json', async () => {
    seen.length = 0;
    const body = await runTool(PETS, 'getPet', { petId: '42', verbose: 'yes', 'X-Trace': 't-1' });
    expect(body.data.status).toBe('succeeded');
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ method: 'GET', url: '/v2/pets/42?verbose=true', headers: { authorization: `Bearer ${PET_KEY}`, 'x-trace': 't-1' } });
    const answer = { id: 42, name: 'Rex', verbose: 'true', trace: 't-1', note: 'größer' };
    expect(body.data.outputs.text).toBe('{"id": 42, "name": "Rex", "verbose": "true", "trace": "t-1", "note": "größer"}');
    expect(body.data.outputs.json).toEqual([answer]);
  });

  it('an operation without operationId is named path_method; body properties go in a JSON body; matched by provider name too', async () => {
    seen.length = 0;
    const body = await runTool({ id: 'another-workspace-id', name: 'pets' }, 'pets_post', { name: 'Tom', age: '3' });
    expect(body.data.status).toBe('succeeded');
    expect(seen[0]).toMatchObject({ method: 'POST', url: '/v2/pets', headers: { 'content-type': 'application/json' } });
    expect(JSON.parse(seen[0]!.body)).toEqual({ name: 'Tom', age: 3 });
    expect(body.data.outputs.json).toEqual([{ created: { name: 'Tom', age: 3 } }]);
    const missing = await runTool(PETS, 'pets_post', { age: 3 });
    expect(missing.data).toMatchObject({ status: 'failed', error: 'tool "pets_post": the required parameter "name" is missing' });
  });

  it('the key in the query; a text answer is the text', async () => {
    seen.length = 0;
    const body = await runTool({ id: 'weather', name: 'weather' }, 'current', { city: 'Oslo' });
    expect(body.data).toMatchObject({ status: 'succeeded', outputs: { text: 'sunny in Oslo', json: [] } });
    expect(seen[0]!.url).toBe(`/weather/current?city=Oslo&appid=${WEATHER_KEY}`);
  });

  it('an upstream error is the tool error, naming the status, with the key masked everywhere', async () => {
    const body = await runTool(PETS, 'broken', {});
    expect(body.data.status).toBe('failed');
    expect(body.data.error).toBe('API tool "broken" of "pets": the upstream answered HTTP 502: {"error":"backend down (key Bearer ***)"}');
    expect(JSON.stringify(body)).not.toContain(PET_KEY);
    const events = await s.runtime.store.db.selectFrom('workflow_run_events').selectAll().where('run_id', '=', body.workflow_run_id).execute();
    expect(events.length).toBeGreaterThan(0);
    expect(JSON.stringify(events)).not.toContain(PET_KEY);
  });

  it('an unknown operation and an undeclared provider name what to configure', async () => {
    const unknown = await runTool(PETS, 'nope', {});
    expect(unknown.data.error).toBe('tool node "API" (api): tool "nope" of API tool provider "pets": its OpenAPI document has no such operation (its tools: getPet, pets_post, broken)');
    const undeclared = await runTool({ id: 'x-id', name: 'shop' }, 'buy', {});
    expect(undeclared.data.error).toBe(
      'tool node "API" (api): tool "buy" of provider "x-id": no API tool provider "shop" is configured; declare its OpenAPI document under api_tools in dovetail.yaml (by that name, or list "x-id" in its provider_ids) (configured: pets, weather)',
    );
  });

  it('a bad document is a config error naming the provider', () => {
    const file = path.join(dir, 'bad.yaml');
    const load = (entry: unknown) => {
      writeFileSync(file, stringify({ api_tools: { shop: entry } }));
      return () => loadConfig({ DOVETAIL_CONFIG: file });
    };
    expect(load({ schema: { openapi: '3.0.0', paths: { '/a': { get: {} } } } })).toThrow(new ConfigError('api_tools.shop: No server found in the openapi yaml (servers[0].url).'));
    expect(load({ schema: { openapi: '3.0.0', servers: [{ url: 'http://x' }], paths: { '/a': { get: { parameters: [{ $ref: 'other.yaml#/p' }] } } } } })).toThrow(
      new ConfigError('api_tools.shop: $ref other.yaml#/p: only references inside the document (#/...) are read'),
    );
    expect(load({ schema_file: 'missing.yaml' })).toThrow(new ConfigError('api_tools.shop: schema_file missing.yaml: ENOENT'));
    expect(load({ schema: { swagger: '2.0' } })).toThrow(new ConfigError('api_tools.shop: only OpenAPI 3 documents are read (openapi: 3.x), got "2.0"'));
    expect(load({ schema_file: 'pets.yaml', credentials: { auth_type: 'api_key_header' } })).toThrow(new ConfigError('api_tools.shop.credentials.api_key_value must be set when auth_type is api_key_header'));
  });
});
