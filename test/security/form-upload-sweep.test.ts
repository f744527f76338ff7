/**
 * Issue 39: files uploaded through a form token (the Human Input form's web upload) and never
 * submitted were kept forever. Once the form ends (submitted without them, or its run stopped),
 * the upload sweep (HUMAN_INPUT_UPLOAD_SWEEP_SECONDS) deletes their records and bytes; files the
 * submission names stay for the run.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.js';
import { dataFrames, parseSse } from '../helpers/sse.js';
import { reviewApp } from '../helpers/form-apps.js';

const WEBAPP = [{ id: 'web', type: 'webapp', enabled: true, config: {} }];
let s: TestServer;
let key = '';
beforeAll(async () => {
  s = await startServer({ env: { HUMAN_INPUT_UPLOAD_SWEEP_SECONDS: '1', QUEUE_POLL_MS: '50' } });
  ({ apiKey: key } = await s.importApp(reviewApp(WEBAPP)));
});
afterAll(async () => {
  expect((await fetch(`${s.url}/health`)).status).toBe(200);
  await s?.close();
});

const json = { authorization: '', 'content-type': 'application/json' };

async function pausedForm(): Promise<{ token: string; taskId: string }> {
  const r = await fetch(`${s.api}/workflows/run`, { method: 'POST', headers: { ...json, authorization: `Bearer ${key}` }, body: JSON.stringify({ inputs: { draft: 'D' }, response_mode: 'streaming', user: 'alice' }) });
  const events = dataFrames(parseSse(await r.text()));
  expect(events.at(-1)?.event).toBe('workflow_paused');
  return { token: String((events.at(-2)!.data as Record<string, unknown>).form_token), taskId: String(events[0]!.task_id) };
}

async function uploadTo(token: string, name: string): Promise<string> {
  const fd = new FormData();
  fd.append('file', new Blob([`bytes of ${name}`], { type: 'text/plain' }), name);
  const r = await fetch(`${s.url}/api/form/human_input/${token}/files/upload`, { method: 'POST', body: fd });
  expect(r.status).toBe(201);
  return String((await r.json()).id);
}

const stored = async (id: string) => {
  const f = await s.runtime.uploads.find(id);
  return f ? (await s.runtime.uploads.read(f)) !== undefined : false;
};

describe('files uploaded through a form and never submitted', () => {
  it('are deleted (record and bytes) once the form is submitted without them; the submitted file stays', async () => {
    const { token } = await pausedForm();
    const kept = await uploadTo(token, 'chosen.txt');
    const dropped = [await uploadTo(token, 'draft-1.txt'), await uploadTo(token, 'draft-2.txt')];
    // while the form waits, nothing is deleted (the sweep runs every second)
    await s.runtime.forms.sweepUnsubmittedUploads();
    for (const id of [kept, ...dropped]) expect(await stored(id)).toBe(true);
    const sub = await fetch(`${s.url}/api/form/human_input/${token}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ inputs: { comment: 'ok', choice: 'ok', doc: { transfer_method: 'local_file', upload_file_id: kept }, docs: [] }, action: 'approve' }),
    });
    expect(sub.status).toBe(200);
    await vi.waitFor(async () => {
      for (const id of dropped) expect(await stored(id)).toBe(false);
    }, { timeout: 20_000, interval: 100 });
    expect(await stored(kept)).toBe(true);
  });

  it('are deleted when the run is stopped and its form closed', async () => {
    const { token, taskId } = await pausedForm();
    const id = await uploadTo(token, 'never.txt');
    const stop = await fetch(`${s.api}/workflows/tasks/${taskId}/stop`, { method: 'POST', headers: { ...json, authorization: `Bearer ${key}` }, body: JSON.stringify({ user: 'alice' }) });
    expect(await stop.json()).toEqual({ result: 'success' });
    await vi.waitFor(async () => expect(await stored(id)).toBe(false), { timeout: 20_000, interval: 100 });
  });
});
