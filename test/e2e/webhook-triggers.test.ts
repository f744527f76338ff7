import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse, stringify } from 'yaml';
import { startServer, type TestServer } from '../helpers/server.js';
import { PROJECT_ROOT } from '../helpers/fixtures.js';
import { exportDsl } from '../../src/apps/dsl-export.js';

/**
 * Webhook triggers over real HTTP (issue 45): Dify's `trigger-webhook` node imported from a DSL
 * export, called at `/triggers/webhook/{webhook_id}` with every content type, its declared fields
 * checked and typed, its answer, async and waiting modes, rotation, pause, the rate limit and the
 * body limit.
 */

const FIXTURE = readFileSync(path.join(PROJECT_ROOT, 'test/fixtures/dsl/trigger-webhook-workflow.yml'), 'utf8');
const NODE = '1761000000001';
const END = '1761000000002';

type Doc = { app: { name: string }; workflow: { graph: { nodes: { id: string; data: Record<string, unknown> }[] } } };

/** The fixture with the webhook node's data changed (and the end node's outputs, when given). */
function variant(name: string, data: Record<string, unknown>, endOutputs?: { variable: string; value_selector: string[] }[]): string {
  const doc = parse(FIXTURE) as Doc;
  doc.app.name = name;
  const node = doc.workflow.graph.nodes.find((n) => n.id === NODE)!;
  Object.assign(node.data, data);
  if (endOutputs) doc.workflow.graph.nodes.find((n) => n.id === END)!.data.outputs = endOutputs;
  return stringify(doc);
}

let s: TestServer;

beforeAll(async () => {
  s = await startServer({ env: { WEBHOOK_RATE_LIMIT_MAX_REQUESTS: '10', WEBHOOK_RATE_LIMIT_WINDOW_SECONDS: '3600', UPLOAD_FILE_SIZE_LIMIT: '1' } });
});
afterAll(async () => s?.close());

/** Imports an app and returns its webhook URL (from the same view `dovetail app show` prints) and API key. */
async function webhookApp(yaml: string): Promise<{ appId: string; apiKey: string; url: string }> {
  const { appId, apiKey } = await s.importApp(yaml);
  const app = (await s.runtime.apps.find(appId))!;
  const views = await s.runtime.triggers.view(app);
  const hook = views.find((v) => v.kind === 'webhook')!;
  // TRIGGER_URL defaults to the configured public base; the test calls its own listener
  const url = `${s.url}${new URL(hook.url!).pathname}`;
  return { appId, apiKey, url };
}

/** The run's row over the Service API once it has ended. */
async function finishedRun(apiKey: string, runId: string): Promise<Record<string, unknown>> {
  for (;;) {
    const res = await fetch(`${s.api}/workflows/run/${runId}`, { headers: { authorization: `Bearer ${apiKey}` } });
    expect(res.status).toBe(200);
    const body = (await res.json()) as Record<string, unknown>;
    if (body.status !== 'running') return body;
    await new Promise((r) => setTimeout(r, 50));
  }
}

function outputsOf(run: Record<string, unknown>): Record<string, unknown> {
  return (typeof run.outputs === 'string' ? JSON.parse(run.outputs) : run.outputs) as Record<string, unknown>;
}

describe('webhook trigger: import and export', () => {
  it('makes a 24-character URL-safe webhook id at import and clears webhook_url in exports', async () => {
    const { appId, url } = await webhookApp(FIXTURE);
    expect(url).toMatch(/\/triggers\/webhook\/[A-Za-z0-9_-]{24}$/);
    const app = (await s.runtime.apps.find(appId))!;
    const exported = parse(exportDsl({ ...app.dsl })) as Doc;
    const node = exported.workflow.graph.nodes.find((n) => n.id === NODE)!;
    expect(node.data.type).toBe('trigger-webhook');
    expect(node.data.webhook_url).toBe('');
    // an update keeps the webhook's id (callers keep their URL)
    await s.runtime.apps.update(appId, FIXTURE.replace('Records an order', 'Records an order (v2)'));
    const after = await s.runtime.triggers.view((await s.runtime.apps.find(appId))!);
    expect(after.find((v) => v.kind === 'webhook')!.url).toContain(url.split('/').pop()!);
  });
});

describe('webhook trigger: application/json, waiting for the run', () => {
  let hook: { appId: string; apiKey: string; url: string };
  beforeAll(async () => {
    hook = await webhookApp(FIXTURE);
  });

  it("answers the node's status code and response_body with the request's values, and the run has them typed", async () => {
    const res = await fetch(`${hook.url}?priority=2`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-order-source': 'shop' },
      body: JSON.stringify({ customer: 'Ada', quantity: 3, tags: ['a', 'b'], extra: true }),
    });
    expect(res.status).toBe(201);
    expect(await res.json()).toEqual({ received: 'Ada', source: 'shop' });
    const runId = res.headers.get('x-workflow-run-id')!;
    const run = await finishedRun(hook.apiKey, runId);
    expect(run.status).toBe('succeeded');
    expect(outputsOf(run)).toEqual({ customer: 'Ada', quantity: 3, tags: ['a', 'b'], priority: 2, source: 'shop' });
    // the logs show the run with its trigger
    const logs = (await (await fetch(`${s.api}/workflows/logs`, { headers: { authorization: `Bearer ${hook.apiKey}` } })).json()) as { data: { workflow_run: { id: string; triggered_from: string } }[] };
    expect(logs.data.find((l) => l.workflow_run.id === runId)!.workflow_run.triggered_from).toBe('webhook');
  });

  it('refuses a missing required header, body field or a mistyped field with a 400 naming it', async () => {
    const call = (headers: Record<string, string>, body: unknown, query = '') =>
      fetch(`${hook.url}${query}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
    const cases: [Response, string][] = [
      [await call({}, { customer: 'Ada' }), 'Required header missing: X-Order-Source'],
      [await call({ 'x-order-source': 'shop' }, { quantity: 1 }), 'Required body parameter missing: customer'],
      [await call({ 'x-order-source': 'shop' }, { customer: 'Ada', quantity: 'three' }), "Parameter 'quantity' validation failed: Expected number, got str"],
      [await call({ 'x-order-source': 'shop' }, { customer: 'Ada', tags: ['a', 1] }), "Parameter 'tags' validation failed: Expected array of strings, got list"],
      [await call({ 'x-order-source': 'shop' }, { customer: 'Ada' }, '?priority=high'), "Parameter 'priority' validation failed: Cannot convert 'high' to number"],
    ];
    for (const [res, message] of cases) {
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({ code: 'invalid_param', message, status: 400 });
    }
    const get = await fetch(hook.url);
    expect(get.status).toBe(400);
    expect(((await get.json()) as { message: string }).message).toBe('HTTP method mismatch. Expected POST, got GET');
    const text = await fetch(hook.url, { method: 'POST', headers: { 'content-type': 'text/plain', 'x-order-source': 'shop' }, body: 'hi' });
    expect(((await text.json()) as { message: string }).message).toBe('Content-type mismatch. Expected application/json, got text/plain');
    const broken = await fetch(hook.url, { method: 'POST', headers: { 'content-type': 'application/json', 'x-order-source': 'shop' }, body: '{"customer":' });
    expect(broken.status).toBe(400);
    expect(((await broken.json()) as { message: string }).message).toMatch(/^Invalid JSON body/);
  });

  it('an unknown webhook id is a 404', async () => {
    const res = await fetch(`${s.url}/triggers/webhook/AAAAAAAAAAAAAAAAAAAAAAAA`, { method: 'POST' });
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ code: 'not_found', message: 'Webhook not found: AAAAAAAAAAAAAAAAAAAAAAAA', status: 404 });
  });
});

describe('webhook trigger: the other content types (async, the default)', () => {
  it('application/x-www-form-urlencoded: fields converted to their declared types', async () => {
    const hook = await webhookApp(variant('Form hook', { content_type: 'application/x-www-form-urlencoded', async_mode: true, response_body: '' }));
    const res = await fetch(hook.url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-order-source': 'form' }, body: 'customer=Bo&quantity=4' });
    expect(res.status).toBe(201);
    expect(await res.json()).toEqual({ status: 'success', message: 'Webhook processed successfully' });
    const run = await finishedRun(hook.apiKey, res.headers.get('x-workflow-run-id')!);
    expect(outputsOf(run)).toMatchObject({ customer: 'Bo', quantity: 4, source: 'form' });
    const bad = await fetch(hook.url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-order-source': 'form' }, body: 'customer=Bo&quantity=four' });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { message: string }).message).toBe("Parameter 'quantity' validation failed: Cannot convert 'four' to number");
  });

  it('multipart/form-data: a file field becomes a file variable of the run, stored as an upload', async () => {
    const hook = await webhookApp(
      variant(
        'Multipart hook',
        { content_type: 'multipart/form-data', async_mode: false, response_body: 'got {{#1761000000001.customer#}}', body: [{ name: 'customer', type: 'string', required: true }, { name: 'invoice', type: 'file', required: true }] },
        [
          { variable: 'customer', value_selector: [NODE, 'customer'] },
          { variable: 'invoice', value_selector: [NODE, 'invoice'] },
        ],
      ),
    );
    const form = new FormData();
    form.append('customer', 'Cy');
    form.append('invoice', new Blob(['total: 42\n'], { type: 'text/plain' }), 'invoice.txt');
    const res = await fetch(hook.url, { method: 'POST', headers: { 'x-order-source': 'mail' }, body: form });
    expect(res.status).toBe(201);
    expect(await res.json()).toEqual({ message: 'got Cy' });
    const out = outputsOf(await finishedRun(hook.apiKey, res.headers.get('x-workflow-run-id')!));
    expect(out.customer).toBe('Cy');
    const file = out.invoice as Record<string, unknown>;
    expect(file).toMatchObject({ filename: 'invoice.txt', extension: '.txt', mime_type: 'text/plain', size: 10, transfer_method: 'local_file', type: 'document' });
    const stored = await s.runtime.uploads.find(String(file.upload_file_id));
    expect(stored?.appId).toBe(hook.appId);

    const noFile = new FormData();
    noFile.append('customer', 'Cy');
    const missing = await fetch(hook.url, { method: 'POST', headers: { 'x-order-source': 'mail' }, body: noFile });
    expect(missing.status).toBe(400);
    expect(((await missing.json()) as { message: string }).message).toBe('Required file missing: invoice');
  });

  it('text/plain: the whole body is the declared variable', async () => {
    const hook = await webhookApp(
      variant('Text hook', { content_type: 'text/plain', async_mode: false, response_body: '', body: [{ name: 'note', type: 'string', required: true }] }, [{ variable: 'note', value_selector: [NODE, 'note'] }]),
    );
    const res = await fetch(hook.url, { method: 'POST', headers: { 'content-type': 'text/plain; charset=utf-8', 'x-order-source': 'cli' }, body: 'line one\nline two' });
    expect(res.status).toBe(201);
    expect(outputsOf(await finishedRun(hook.apiKey, res.headers.get('x-workflow-run-id')!))).toEqual({ note: 'line one\nline two' });
    const empty = await fetch(hook.url, { method: 'POST', headers: { 'content-type': 'text/plain', 'x-order-source': 'cli' }, body: '' });
    expect(empty.status).toBe(400);
    expect(((await empty.json()) as { message: string }).message).toBe('Required body content missing for text/plain request');
  });

  it('application/octet-stream: the body is stored and handed to the run as a file', async () => {
    const hook = await webhookApp(
      variant('Binary hook', { content_type: 'application/octet-stream', async_mode: false, response_body: '', body: [{ name: 'blob', type: 'file', required: true }] }, [{ variable: 'blob', value_selector: [NODE, 'blob'] }]),
    );
    const bytes = Buffer.from([0, 1, 2, 3, 250, 251]);
    const res = await fetch(hook.url, { method: 'POST', headers: { 'content-type': 'application/octet-stream', 'x-order-source': 'device' }, body: bytes });
    expect(res.status).toBe(201);
    const blob = outputsOf(await finishedRun(hook.apiKey, res.headers.get('x-workflow-run-id')!)).blob as Record<string, unknown>;
    expect(blob).toMatchObject({ size: 6, mime_type: 'application/octet-stream', transfer_method: 'local_file' });
    const stored = await s.runtime.uploads.find(String(blob.upload_file_id));
    expect(await s.runtime.uploads.read(stored!)).toEqual(bytes);
  });
});

describe('webhook trigger: URL rotation, pause, rate limit, body limit', () => {
  const call = (url: string, body = '{"customer":"Ada"}') => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', 'x-order-source': 'shop' }, body });

  it('a rotated URL refuses the old id and answers on the new one', async () => {
    const hook = await webhookApp(variant('Rotated hook', { async_mode: true }));
    expect((await call(hook.url)).status).toBe(201);
    await s.runtime.triggers.rotate(hook.appId);
    const views = await s.runtime.triggers.view((await s.runtime.apps.find(hook.appId))!);
    const fresh = `${s.url}${new URL(views[0]!.url!).pathname}`;
    expect(fresh).not.toBe(hook.url);
    const old = await call(hook.url);
    expect(old.status).toBe(404);
    expect((await old.json()) as { message: string }).toMatchObject({ code: 'not_found' });
    expect((await call(fresh)).status).toBe(201);
  });

  it('a paused webhook answers 404 until resumed', async () => {
    const hook = await webhookApp(variant('Paused hook', { async_mode: true }));
    await s.runtime.triggers.setStatus(hook.appId, undefined, 'paused');
    const paused = await call(hook.url);
    expect(paused.status).toBe(404);
    expect(((await paused.json()) as { message: string }).message).toMatch(/^Webhook trigger is disabled for webhook /);
    await s.runtime.triggers.setStatus(hook.appId, undefined, 'enabled');
    expect((await call(hook.url)).status).toBe(201);
  });

  it('the eleventh call within the window is a 429 naming WEBHOOK_RATE_LIMIT_MAX_REQUESTS', async () => {
    const hook = await webhookApp(variant('Limited hook', { async_mode: true }));
    for (let i = 0; i < 10; i++) expect((await call(hook.url)).status).toBe(201);
    const limited = await call(hook.url);
    expect(limited.status).toBe(429);
    const body = (await limited.json()) as { code: string; message: string };
    expect(body.code).toBe('webhook_rate_limited');
    expect(body.message).toContain('WEBHOOK_RATE_LIMIT_MAX_REQUESTS');
  });

  it('a body over the upload limit is a 413 naming UPLOAD_FILE_SIZE_LIMIT, and starts no run', async () => {
    const hook = await webhookApp(variant('Big hook', { async_mode: true }));
    const big = JSON.stringify({ customer: 'x'.repeat(1024 * 1024 + 10) });
    const res = await call(hook.url, big);
    expect(res.status).toBe(413);
    expect(await res.json()).toEqual({ code: 'webhook_body_too_large', message: `Webhook request too large: the body may be at most ${1024 * 1024} bytes (UPLOAD_FILE_SIZE_LIMIT).`, status: 413 });
    const logs = (await (await fetch(`${s.api}/workflows/logs`, { headers: { authorization: `Bearer ${hook.apiKey}` } })).json()) as { total: number };
    expect(logs.total).toBe(0);
  });
});
