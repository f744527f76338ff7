/**
 * Issue 39, request-side findings: a deeply nested JSON body (500 from a stack overflow in run
 * start), another end user's workflow stopped, a knowledge document's file read through an app,
 * and thousands of `files` fetched in one request. Each against the real server; `/health`
 * answers at the end.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.js';
import { endNode, startNode, workflowDsl } from '../helpers/workflow-dsl.js';
import { reviewApp } from '../helpers/form-apps.js';
import { dataFrames, parseSse } from '../helpers/sse.js';
import { kbClient } from '../helpers/kb-client.js';

let s: TestServer;
let flowKey = '';
beforeAll(async () => {
  s = await startServer();
  ({ apiKey: flowKey } = await s.importApp(workflowDsl([startNode([{ variable: 'cfg', type: 'json_object', required: false }]), endNode({ cfg: ['start', 'cfg'] })], [['start', 'end']])));
});
afterAll(async () => {
  expect((await fetch(`${s.url}/health`)).status).toBe(200);
  await s?.close();
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

describe('POST /workflows/tasks/{task_id}/stop stops only the caller\'s own run', () => {
  const WEBAPP = [{ id: 'web', type: 'webapp', enabled: true, config: {} }];

  it('another end user\'s stop of a paused approval run is a no-op success; the run stays paused and its starter can stop it', async () => {
    const { apiKey } = await s.importApp(reviewApp(WEBAPP));
    const r = await fetch(`${s.api}/workflows/run`, { method: 'POST', headers: json(apiKey), body: JSON.stringify({ inputs: { draft: 'D' }, response_mode: 'streaming', user: 'alice' }) });
    const events = dataFrames(parseSse(await r.text()));
    expect(events.at(-1)?.event).toBe('workflow_paused');
    const taskId = String(events[0]!.task_id);
    const runId = String(events[0]!.workflow_run_id);
    const state = async () => (await (await fetch(`${s.api}/workflows/run/${runId}`, { headers: json(apiKey) })).json()).status as string;
    const stop = (user: string) => fetch(`${s.api}/workflows/tasks/${taskId}/stop`, { method: 'POST', headers: json(apiKey), body: JSON.stringify({ user }) });

    // 1. mallory (a known end user of the app) and a never-seen user: Dify's answer for a task that is not theirs
    await (await fetch(`${s.api}/workflows/run`, { method: 'POST', headers: json(apiKey), body: JSON.stringify({ inputs: { draft: 'M' }, response_mode: 'streaming', user: 'mallory' }) })).text();
    for (const user of ['mallory', 'nobody-yet']) {
      const m = await stop(user);
      expect(m.status).toBe(200);
      expect(await m.json()).toEqual({ result: 'success' });
    }
    expect(await state()).toBe('paused');
    // 2. the form can still be answered: the run was not touched
    const form = String((events.at(-2)!.data as Record<string, unknown>).form_token);
    expect((await fetch(`${s.api}/form/human_input/${form}`, { headers: json(apiKey) })).status).toBe(200);
    // 3. the starter stops it
    expect(await (await stop('alice')).json()).toEqual({ result: 'success' });
    expect(await state()).toBe('stopped');
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
