import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { PROJECT_ROOT } from '../helpers/fixtures.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { openAiCompatibleProviders } from '../helpers/openai-providers.js';
import { kbClient } from '../helpers/kb-client.js';
import { readSse } from '../helpers/sse.js';
import { endNode, llmNode, startNode, workflowDsl } from '../helpers/workflow-dsl.js';

const TOKEN = 'metrics-secret';
let s: TestServer;
let fake: FakeOpenAI;
let origin: string;
let llmKey: string;
let pauseKey: string;

const LLM_APP = workflowDsl([startNode(), llmNode('llm', 'Say hi'), endNode({ text: ['llm', 'text'] })], [['start', 'llm'], ['llm', 'end']]);
const PAUSE_APP = workflowDsl(
  [
    startNode(),
    {
      id: 'review',
      type: 'human-input',
      delivery_methods: [{ id: 'web', type: 'webapp', enabled: true, config: {} }],
      form_content: 'OK?',
      inputs: [],
      user_actions: [{ id: 'approve', title: 'Approve', button_style: 'primary' }],
      timeout: 1,
      timeout_unit: 'hour',
    },
    endNode({}),
  ],
  [['start', 'review'], ['review', 'end', 'approve']],
);

beforeAll(async () => {
  fake = await startFakeOpenAI();
  s = await startServer({ env: { METRICS_TOKEN: TOKEN }, runtime: { providers: openAiCompatibleProviders(fake.baseUrl) } });
  origin = s.api.replace(/\/v1$/, '');
  ({ apiKey: llmKey } = await s.importApp(LLM_APP));
  ({ apiKey: pauseKey } = await s.importApp(PAUSE_APP));
});
afterAll(async () => {
  await s?.close();
  await fake?.close();
});

async function scrape(): Promise<string> {
  const r = await fetch(`${origin}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
  expect(r.status).toBe(200);
  expect(r.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return r.text();
}

/** The value of one sample (`name{labels}` exactly as exposed, labels in the registry's order), 0 when absent. */
function sample(text: string, series: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line ? Number(line.slice(series.length + 1)) : 0;
}

const runWorkflow = (key: string, mode: 'blocking' | 'streaming' = 'blocking') =>
  fetch(`${s.api}/workflows/run`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ inputs: {}, user: 'ops', response_mode: mode }) });

describe('GET /metrics', () => {
  it('requires METRICS_TOKEN when it is set (401 with the envelope)', async () => {
    const wrongSameLength = TOKEN.slice(0, -1) + (TOKEN.endsWith('x') ? 'y' : 'x');
    for (const headers of [{}, { authorization: 'Bearer wrong' }, { authorization: `Bearer ${wrongSameLength}` }, { authorization: `Bearer ${TOKEN}x` }, { authorization: TOKEN }, { authorization: `Basic ${TOKEN}` }, { authorization: 'Bearer ' }] as Record<string, string>[]) {
      const r = await fetch(`${origin}/metrics`, { headers });
      expect(r.status, JSON.stringify(headers)).toBe(401);
      expect(await r.json()).toEqual({ code: 'unauthorized', message: 'A valid METRICS_TOKEN bearer token is required.', status: 401 });
    }
  });

  it('takes the token compared in constant time (digests), the scheme in any case (RFC 6750)', async () => {
    for (const authorization of [`Bearer ${TOKEN}`, `bearer ${TOKEN}`, `BEARER  ${TOKEN}`]) {
      expect((await fetch(`${origin}/metrics`, { headers: { authorization } })).status, authorization).toBe(200);
    }
    // the comparison: SHA-256 digests through timingSafeEqual, never the strings themselves
    const probes = readFileSync(path.join(PROJECT_ROOT, 'src/http/probes.ts'), 'utf8');
    expect(probes).toMatch(/timingSafeEqual\(sha256\(/);
    expect(probes).not.toMatch(/authorization\s*!==?/);
  });

  it('HTTP requests, model calls and tokens by provider, and runs by status move', async () => {
    const before = await scrape();
    fake.behaviour = { reply: 'hello there', chunkSize: 4 };
    const r = await runWorkflow(llmKey);
    expect(r.status).toBe(200);
    expect((await r.json()).data.status).toBe('succeeded');
    const after = await scrape();
    const http = 'dovetail_http_requests_total{method="POST",route="/v1/workflows/run",status="200"}';
    expect(sample(after, http) - sample(before, http)).toBe(1);
    expect(sample(after, 'dovetail_http_request_duration_seconds_count{method="POST",route="/v1/workflows/run"}')).toBeGreaterThanOrEqual(1);
    expect(sample(after, 'dovetail_model_call_duration_seconds_count{provider="openai"}') - sample(before, 'dovetail_model_call_duration_seconds_count{provider="openai"}')).toBe(1);
    // the fake upstream reports prompt = ceil(len("Say hi") / 4) = 2, completion = 3 chunks
    expect(sample(after, 'dovetail_model_tokens_total{provider="openai",kind="prompt"}') - sample(before, 'dovetail_model_tokens_total{provider="openai",kind="prompt"}')).toBe(2);
    expect(sample(after, 'dovetail_model_tokens_total{provider="openai",kind="completion"}') - sample(before, 'dovetail_model_tokens_total{provider="openai",kind="completion"}')).toBe(3);
    expect(sample(after, 'dovetail_runs{status="succeeded"}') - sample(before, 'dovetail_runs{status="succeeded"}')).toBe(1);
    // a 404 is counted under its own label, not under the path asked for
    await fetch(`${s.api}/no/such/route`);
    expect(sample(await scrape(), 'dovetail_http_requests_total{method="GET",route="unmatched",status="404"}')).toBeGreaterThanOrEqual(1);
  });

  it('paused runs and open SSE streams are counted', async () => {
    const before = await scrape();
    const r = await runWorkflow(pauseKey);
    const runId = (await r.json()).workflow_run_id as string;
    const mid = await scrape();
    expect(sample(mid, 'dovetail_runs_paused') - sample(before, 'dovetail_runs_paused')).toBe(1);
    // a reopened stream of the paused run stays open (pings) until the client leaves
    const ac = new AbortController();
    const events = await fetch(`${s.api}/workflow/${runId}/events?user=ops`, { headers: { authorization: `Bearer ${pauseKey}` }, signal: ac.signal });
    await readSse(events)[Symbol.asyncIterator]().next(); // the leading ping: the stream is open
    expect(sample(await scrape(), 'dovetail_sse_active_streams')).toBe(sample(before, 'dovetail_sse_active_streams') + 1);
    ac.abort();
    let open = -1;
    for (let i = 0; i < 200 && open !== sample(before, 'dovetail_sse_active_streams'); i++) {
      await new Promise((res) => setTimeout(res, 25));
      open = sample(await scrape(), 'dovetail_sse_active_streams');
    }
    expect(open).toBe(sample(before, 'dovetail_sse_active_streams'));
  });

  it('indexing throughput and the queue are exposed', async () => {
    const before = await scrape();
    const kb = kbClient(s, await s.datasetKey());
    const ds = await kb.dataset('metrics kb');
    const doc = await kb.call('POST', `/datasets/${ds}/document/create-by-text`, { name: 'n', text: 'One paragraph.\n\nAnother paragraph.', indexing_technique: 'economy', process_rule: { mode: 'automatic' } });
    expect(doc.status).toBe(200);
    expect((await kb.settle(ds, doc.body.batch)).indexing_status).toBe('completed');
    const after = await scrape();
    expect(sample(after, 'dovetail_indexed_segments_total') - sample(before, 'dovetail_indexed_segments_total')).toBeGreaterThanOrEqual(1);
    expect(after).toMatch(/^dovetail_queue_depth \d+$/m);
    expect(after).toMatch(/^dovetail_job_failures \d+$/m);
    expect(sample(after, 'dovetail_jobs{status="done"}')).toBeGreaterThanOrEqual(1);
  });

  it('python3 sandbox workers start only once an app with python3 code is imported', async () => {
    // the apps of this file have no code node: no Pyodide interpreter was started for them
    expect(sample(await scrape(), 'dovetail_code_sandbox_workers{language="python3"}')).toBe(0);
    const code = { id: 'code', type: 'code', code_language: 'python3', code: 'def main():\n    return {"n": 1}', variables: [], outputs: { n: { type: 'number' } } };
    await s.importApp(workflowDsl([startNode(), code, endNode({ n: ['code', 'n'] })], [['start', 'code'], ['code', 'end']]));
    expect(sample(await scrape(), 'dovetail_code_sandbox_workers{language="python3"}')).toBeGreaterThanOrEqual(1);
  });
});
