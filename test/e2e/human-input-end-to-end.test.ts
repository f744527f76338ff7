import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.js';
import { example } from '../helpers/fixtures.js';
import { dataFrames, parseSse, readSse, type SseFrame } from '../helpers/sse.js';

/** The real form store (src/forms) and the real run side together, over HTTP only. */
let s: TestServer;
let key: string;
beforeAll(async () => {
  s = await startServer();
  ({ apiKey: key } = await s.importApp(example('workflow-approval.yml')));
});
afterAll(async () => s?.close());

const json = { authorization: '', 'content-type': 'application/json' };
const h = () => ({ ...json, authorization: `Bearer ${key}` });

describe('Human Input flow end to end (form service + runs)', () => {
  it('run → human_input_required → GET form → POST submit → resumed stream → workflow_finished', async () => {
    const r = await fetch(`${s.api}/workflows/run`, { method: 'POST', headers: h(), body: JSON.stringify({ inputs: { draft: 'Ship it' }, response_mode: 'streaming', user: 'erin' }) });
    const events = dataFrames(parseSse(await r.text()));
    expect(events.map((e) => e.event).slice(-2)).toEqual(['human_input_required', 'workflow_paused']);
    const req = events.at(-2)!.data as Record<string, unknown>;
    const runId = String(events[0]!.workflow_run_id);
    expect(req.form_token).toEqual(expect.any(String));
    const form = await fetch(`${s.api}/form/human_input/${req.form_token}`, { headers: h() });
    expect(form.status).toBe(200);
    expect((await form.json()).form_content).toContain('Ship it');

    // reopen the stream first, then submit: the resumed events arrive on it
    const reopened = await fetch(`${s.api}/workflow/${runId}/events?user=erin`, { headers: h() });
    const it = readSse(reopened)[Symbol.asyncIterator]();
    const frames: SseFrame[] = [(await it.next()).value as SseFrame];
    const submit = await fetch(`${s.api}/form/human_input/${req.form_token}`, {
      method: 'POST',
      headers: h(),
      body: JSON.stringify({ inputs: { comment: 'great' }, action: 'approve', user: 'erin' }),
    });
    expect(submit.status).toBe(200);
    expect(await submit.json()).toEqual({});
    for (let n = await it.next(); !n.done; n = await it.next()) frames.push(n.value);
    const resumed = dataFrames(frames);
    expect(resumed[0]).toMatchObject({ event: 'workflow_started', data: { reason: 'resumption' } });
    const filled = resumed.find((e) => e.event === 'human_input_form_filled')!;
    expect(filled.data).toMatchObject({ node_id: 'review', action_id: 'approve', action_text: 'Approve', submitted_data: { comment: 'great' } });
    expect(resumed.at(-1)).toMatchObject({ event: 'workflow_finished', data: { status: 'succeeded', outputs: { decision: 'approved: great' } } });

    // the form is closed for good
    const again = await fetch(`${s.api}/form/human_input/${req.form_token}`, { method: 'POST', headers: h(), body: JSON.stringify({ inputs: { comment: 'x' }, action: 'approve', user: 'erin' }) });
    expect(again.status).toBe(412);
  });

  it('stopping a paused run closes its form', async () => {
    const r = await fetch(`${s.api}/workflows/run`, { method: 'POST', headers: h(), body: JSON.stringify({ inputs: { draft: 'x' }, response_mode: 'streaming', user: 'erin' }) });
    const events = dataFrames(parseSse(await r.text()));
    const req = events.at(-2)!.data as Record<string, unknown>;
    const stop = await fetch(`${s.api}/workflows/tasks/${events[0]!.task_id}/stop`, { method: 'POST', headers: h(), body: JSON.stringify({ user: 'ops' }) });
    expect(await stop.json()).toEqual({ result: 'success' });
    const run = await (await fetch(`${s.api}/workflows/run/${events[0]!.workflow_run_id}`, { headers: h() })).json();
    expect(run.status).toBe('stopped');
    const form = await fetch(`${s.api}/form/human_input/${req.form_token}`, { headers: h() });
    expect(form.status).not.toBe(200);
  });
});
