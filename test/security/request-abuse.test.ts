/**
 * Issue 39, request-side findings: a deeply nested JSON body (500 from a stack overflow in run
 * start), a knowledge document's file read through an app,
 * and thousands of `files` fetched in one request. Each against the real server; `/health`
 * answers at the end.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { startServer, type TestServer } from '../helpers/server.js';
import { endNode, startNode, workflowDsl } from '../helpers/workflow-dsl.js';
import { kbClient } from '../helpers/kb-client.js';
import { completionApp, imageChatApp } from '../helpers/apps.js';

let s: TestServer;
let flowKey = '';
/** A file server on loopback (allowed through SSRF_ALLOW_HOSTS) that counts the requests it gets. */
let files: http.Server;
let fileHits = 0;
let filesUrl = '';
beforeAll(async () => {
  files = http.createServer((_req, res) => {
    fileHits++;
    res.writeHead(200, { 'content-type': 'text/plain' }).end('remote words');
  });
  await new Promise<void>((resolve) => files.listen(0, '127.0.0.1', resolve));
  filesUrl = `http://127.0.0.1:${(files.address() as AddressInfo).port}`;
  s = await startServer({ env: { SSRF_ALLOW_HOSTS: '127.0.0.1' } });
  ({ apiKey: flowKey } = await s.importApp(workflowDsl([startNode([{ variable: 'cfg', type: 'json_object', required: false }]), endNode({ cfg: ['start', 'cfg'] })], [['start', 'end']])));
});
afterAll(async () => {
  expect((await fetch(`${s.url}/health`)).status).toBe(200);
  await s?.close();
  await new Promise((resolve) => files?.close(resolve));
});

const json = (key: string) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' });

/** `depth` nested one-key objects around a string, as text (JSON.stringify would overflow first). */
function nested(depth: number): string {
  return '{"a":'.repeat(depth) + '"x"' + '}'.repeat(depth);
}

describe('a JSON body nested past REQUEST_MAX_JSON_DEPTH', () => {
  it('~4,500 levels in a workflow input: 400 invalid_param naming the field and the setting, not a 500', async () => {
    const body = `{"inputs":{"cfg":${nested(4500)}},"response_mode":"blocking","user":"u1"}`;
    const r = await fetch(`${s.api}/workflows/run`, { method: 'POST', headers: json(flowKey), body });
    expect(r.status).toBe(400);
    expect(await r.json()).toEqual({ code: 'invalid_param', message: 'inputs is nested more than REQUEST_MAX_JSON_DEPTH (100) levels deep', status: 400 });
  });

  it('a deep array body is refused the same way, naming `body`', async () => {
    const arr = '['.repeat(5000) + ']'.repeat(5000);
    const r = await fetch(`${s.api}/workflows/run`, { method: 'POST', headers: json(flowKey), body: arr });
    expect(r.status).toBe(400);
    expect((await r.json()).message).toBe('body is nested more than REQUEST_MAX_JSON_DEPTH (100) levels deep');
  });

  it('a body within the bound still runs (90 levels of a json_object input come back as sent)', async () => {
    const body = `{"inputs":{"cfg":${nested(90)}},"response_mode":"blocking","user":"u1"}`;
    const r = await fetch(`${s.api}/workflows/run`, { method: 'POST', headers: json(flowKey), body });
    expect(r.status).toBe(200);
    const out = (await r.json()).data.outputs as { cfg: unknown };
    expect(JSON.stringify(out.cfg)).toBe(nested(90 - 1).replace(/^/, '{"a":').replace(/$/, '}'));
  });
});


describe('files that belong to no app are unreachable from app routes', () => {
  const extractor = workflowDsl(
    [startNode([]), { id: 'ex', type: 'document-extractor', variable_selector: ['sys', 'files'], is_array_file: true }, endNode({ text: ['ex', 'text'] })],
    [['start', 'ex'], ['ex', 'end']],
  );
  const runWith = async (key: string, files: unknown[]) => {
    const r = await fetch(`${s.api}/workflows/run`, { method: 'POST', headers: json(key), body: JSON.stringify({ inputs: {}, files, response_mode: 'blocking', user: 'u1' }) });
    return { status: r.status, text: await r.text() };
  };

  it('a knowledge document\'s upload_file_id in `files` gives an app nothing of its text; the app\'s own upload still works', async () => {
    const kb = kbClient(s, await s.datasetKey());
    const datasetId = await kb.dataset('private handbook');
    const secret = 'SALARY-BANDS-CONFIDENTIAL-7731';
    const doc = await kb.form('POST', `/datasets/${datasetId}/document/create-by-file`, { name: 'handbook.txt', bytes: Buffer.from(`Internal: ${secret}`), mime: 'text/plain' }, { indexing_technique: 'economy', process_rule: { mode: 'automatic' } });
    expect(doc.status).toBe(200);
    const fileId = String(doc.body.document.data_source_info.upload_file_id);
    const { apiKey } = await s.importApp(extractor);

    const stolen = await runWith(apiKey, [{ type: 'document', transfer_method: 'local_file', upload_file_id: fileId }]);
    expect(stolen.text).not.toContain(secret);
    // nor through the file preview of the app
    const preview = await fetch(`${s.api}/files/${fileId}/preview`, { headers: { authorization: `Bearer ${apiKey}` } });
    expect(preview.status).toBe(404);
    expect(await preview.text()).not.toContain(secret);

    // the app's own upload is read
    const fd = new FormData();
    fd.append('user', 'u1');
    fd.append('file', new Blob(['own words 4411'], { type: 'text/plain' }), 'own.txt');
    const up = await (await fetch(`${s.api}/files/upload`, { method: 'POST', headers: { authorization: `Bearer ${apiKey}` }, body: fd })).json();
    const own = await runWith(apiKey, [{ type: 'document', transfer_method: 'local_file', upload_file_id: up.id }]);
    expect(own.status).toBe(200);
    expect(JSON.parse(own.text).data.outputs.text).toEqual(['own words 4411']);
  });
});

describe('the app\'s file upload limits apply to `files` before any fetch', () => {
  /** A workflow that reads every file of `sys.files`, with `file_upload` features as given (none: unset). */
  const reader = (fileUpload?: Record<string, unknown>) => {
    const doc = parse(workflowDsl(
      [startNode([]), { id: 'ex', type: 'document-extractor', variable_selector: ['sys', 'files'], is_array_file: true }, endNode({ text: ['ex', 'text'] })],
      [['start', 'ex'], ['ex', 'end']],
    )) as { workflow: Record<string, unknown> };
    if (fileUpload) doc.workflow.features = { file_upload: fileUpload };
    return stringify(doc);
  };
  const remote = (n: number) => Array.from({ length: n }, (_, i) => ({ type: 'document', transfer_method: 'remote_url', url: `${filesUrl}/f${i}.txt` }));
  const post = async (key: string, path: string, body: Record<string, unknown>) => {
    const r = await fetch(`${s.api}${path}`, { method: 'POST', headers: json(key), body: JSON.stringify({ response_mode: 'blocking', user: 'u1', ...body }) });
    return { status: r.status, body: (await r.json()) as Record<string, unknown> };
  };

  it('2,000 remote_url files to workflows/run: 400 naming files and number_limits, and not one fetch', async () => {
    const { apiKey } = await s.importApp(reader({ enabled: true, number_limits: 3, allowed_file_upload_methods: ['remote_url', 'local_file'], allowed_file_types: ['document'] }));
    const before = fileHits;
    const r = await post(apiKey, '/workflows/run', { inputs: {}, files: remote(2000) });
    expect(r.status).toBe(400);
    expect(r.body).toEqual({ code: 'invalid_param', message: "files: Number of files exceeds the maximum limit 3 (the app's file_upload.number_limits=3); got 2000", status: 400 });
    expect(fileHits).toBe(before);
    // within the limit the files are read (each fetched once)
    const ok = await post(apiKey, '/workflows/run', { inputs: {}, files: remote(3) });
    expect(ok.status).toBe(200);
    expect((ok.body.data as { outputs: unknown }).outputs).toEqual({ text: ['remote words', 'remote words', 'remote words'] });
    expect(fileHits).toBe(before + 3);
  });

  it('an app without a number is held to WORKFLOW_FILE_UPLOAD_LIMIT (10); methods and types the app does not allow are refused', async () => {
    const { apiKey } = await s.importApp(reader());
    const before = fileHits;
    const r = await post(apiKey, '/workflows/run', { inputs: {}, files: remote(11) });
    expect(r.status).toBe(400);
    expect(r.body.message).toBe('files: Number of files exceeds the maximum limit 10 (WORKFLOW_FILE_UPLOAD_LIMIT=10); got 11');
    const params = await (await fetch(`${s.api}/parameters`, { headers: json(apiKey) })).json();
    expect(params.system_parameters.workflow_file_upload_limit).toBe(10);

    const { apiKey: localOnly } = await s.importApp(reader({ enabled: true, number_limits: 5, allowed_file_upload_methods: ['local_file'], allowed_file_types: ['document'] }));
    const m = await post(localOnly, '/workflows/run', { inputs: {}, files: remote(1) });
    expect(m.status).toBe(400);
    expect(m.body.message).toBe("files[0].transfer_method remote_url is not allowed (the app's file_upload.allowed_file_upload_methods: local_file)");
    const t = await post(localOnly, '/workflows/run', { inputs: {}, files: [{ type: 'video', transfer_method: 'local_file', upload_file_id: '00000000-0000-0000-0000-000000000000' }] });
    expect(t.status).toBe(400);
    expect(t.body.message).toBe("files[0].type video is not allowed (the app's file_upload.allowed_file_types: document)");
    expect(fileHits).toBe(before);
  });

  it('chat-messages and completion-messages apply the app\'s image limits the same way', async () => {
    const { apiKey: chatKey } = await s.importApp(imageChatApp('image chat'));
    const c = await post(chatKey, '/chat-messages', { query: 'hi', inputs: {}, files: [{ type: 'image', transfer_method: 'remote_url', url: `${filesUrl}/a.png` }] });
    expect(c.status).toBe(400);
    expect(c.body.message).toBe("files[0].transfer_method remote_url is not allowed (the app's file_upload.image.transfer_methods: local_file)");
    const { apiKey: writerKey } = await s.importApp(completionApp());
    const images = Array.from({ length: 4 }, (_, i) => ({ type: 'image', transfer_method: 'remote_url', url: `${filesUrl}/${i}.png` }));
    const w = await post(writerKey, '/completion-messages', { inputs: { topic: 'x' }, files: images });
    expect(w.status).toBe(400);
    expect(w.body.message).toBe("files: Number of files exceeds the maximum limit 3 (the app's file_upload.image.number_limits=3); got 4");
  });
});
