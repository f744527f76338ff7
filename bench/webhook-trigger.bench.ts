import { stringify } from 'yaml';
import { benchServer, fmt, median, percentile, type BenchServer } from './lib.js';

const RUNS = 100;
const WARMUP = 10;

const node = (id: string, data: Record<string, unknown>) => ({ id, data: { title: id, ...data } });
const edges = (from: string) => [{ source: from, target: 'end' }];

/** The same small run twice: entered by the start node (the API) or by a webhook trigger, each to an end node. */
const VIA_API = stringify({
  app: { name: 'via api', mode: 'workflow' },
  kind: 'app',
  version: '0.5.0',
  workflow: {
    graph: {
      nodes: [
        node('start', { type: 'start', variables: [{ variable: 'name', label: 'name', type: 'text-input', required: true }] }),
        node('end', { type: 'end', outputs: [{ variable: 'name', value_selector: ['start', 'name'] }] }),
      ],
      edges: edges('start'),
    },
  },
});
const VIA_WEBHOOK = stringify({
  app: { name: 'via webhook', mode: 'workflow' },
  kind: 'app',
  version: '0.5.0',
  workflow: {
    graph: {
      nodes: [
        node('hook', { type: 'trigger-webhook', method: 'post', content_type: 'application/json', body: [{ name: 'name', type: 'string', required: true }], async_mode: true }),
        node('end', { type: 'end', outputs: [{ variable: 'name', value_selector: ['hook', 'name'] }] }),
      ],
      edges: edges('hook'),
    },
  },
});

/** Epoch ms of the run's `workflow_started` event (written when a worker starts executing it). */
async function startedAt(s: BenchServer, runId: string): Promise<number> {
  for (;;) {
    const row = await s.runtime.store.db.selectFrom('workflow_run_events').select('created_at').where('run_id', '=', runId).where('event', '=', 'workflow_started').executeTakeFirst();
    if (row) return Number(row.created_at);
    await new Promise((r) => setTimeout(r, 2));
  }
}

/** Waits for the run to end (so runs do not pile up between samples). */
async function ended(s: BenchServer, runId: string): Promise<void> {
  while ((await s.runtime.runs.find(runId))?.status === 'running') await new Promise((r) => setTimeout(r, 2));
}

/**
 * Accept-to-start latency of a webhook-triggered run: from the moment the caller sends the
 * webhook call to the run's `workflow_started` event (the worker executing it), next to the same
 * run shape started with `POST /v1/workflows/run` (blocking) in the same process and the same run
 * of the bench, timed alternately. The webhook is async (Dify's default): it answers at once.
 */
export async function run(): Promise<void> {
  const s = await benchServer({ WEBHOOK_RATE_LIMIT_MAX_REQUESTS: '100000' });
  const api = await s.runtime.apps.importDsl(VIA_API);
  const key = (await s.runtime.keys.create('app', api.workspaceId, api.id)).apiKey;
  const hookApp = await s.runtime.apps.importDsl(VIA_WEBHOOK);
  const view = await s.runtime.triggers.view(hookApp);
  const hookUrl = `${s.url}${new URL(view[0]!.url!).pathname}`;

  const viaApi = async (): Promise<number> => {
    const t = Date.now();
    const r = await fetch(`${s.url}/v1/workflows/run`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ inputs: { name: 'Ada' }, response_mode: 'blocking', user: 'bench' }) });
    const b = (await r.json()) as { workflow_run_id: string; data: { status: string } };
    if (b.data.status !== 'succeeded') throw new Error(`run failed: ${JSON.stringify(b).slice(0, 300)}`);
    return (await startedAt(s, b.workflow_run_id)) - t;
  };
  const viaWebhook = async (): Promise<number> => {
    const t = Date.now();
    const r = await fetch(hookUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'Ada' }) });
    if (r.status !== 200) throw new Error(`webhook answered ${r.status}: ${await r.text()}`);
    const runId = r.headers.get('x-workflow-run-id')!;
    const ms = (await startedAt(s, runId)) - t;
    await ended(s, runId);
    return ms;
  };
  const out: [number[], number[]] = [[], []];
  for (let i = 0; i < RUNS + WARMUP; i++) {
    const a = await viaApi();
    const w = await viaWebhook();
    if (i >= WARMUP) {
      out[0].push(a);
      out[1].push(w);
    }
  }
  const [base, hook] = out;
  process.stdout.write(
    [
      `webhook trigger: accept-to-start of the run (async call)   p50 ${fmt(median(hook), 1)} ms  p95 ${fmt(percentile(hook, 95), 1)} ms`,
      `  baseline: the same run via POST /v1/workflows/run        p50 ${fmt(median(base), 1)} ms  p95 ${fmt(percentile(base, 95), 1)} ms`,
      `  difference (p50)                                         ${fmt(median(hook) - median(base), 1)} ms`,
    ].join('\n') + '\n',
  );
  await s.close();
}
