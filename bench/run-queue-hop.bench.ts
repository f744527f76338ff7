import { stringify } from 'yaml';
import { benchServer, fmt, median, percentile, type BenchServer } from './lib.js';

const RUNS = 60;
const WARMUP = 15;

/** start → 3 template nodes → end: short, so the hop's share shows. */
function dsl(): string {
  const nodes: Record<string, unknown>[] = [{ id: 'start', data: { type: 'start', title: 'Start', variables: [] } }];
  const edges: Record<string, unknown>[] = [];
  let prev = 'start';
  for (let i = 0; i < 3; i++) {
    nodes.push({ id: `t${i}`, data: { type: 'template-transform', title: `t${i}`, template: 'x{{ i }}', variables: [{ variable: 'i', value_selector: ['sys', 'workflow_run_id'] }] } });
    edges.push({ source: prev, target: `t${i}` });
    prev = `t${i}`;
  }
  nodes.push({ id: 'end', data: { type: 'end', title: 'End', outputs: [{ variable: 'out', value_selector: [prev, 'output'] }] } });
  edges.push({ source: prev, target: 'end' });
  return stringify({ app: { name: 'hop', mode: 'workflow' }, kind: 'app', version: '0.3.1', workflow: { graph: { nodes, edges } } });
}

/** Time to the first `data:` frame of a streaming run, and the time of a blocking run. */
async function measure(s: BenchServer): Promise<{ first: number[]; blocking: number[] }> {
  const app = await s.runtime.apps.importDsl(dsl());
  const { apiKey } = await s.runtime.keys.create('app', app.workspaceId, app.id);
  const headers = { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' };
  const first: number[] = [];
  const blocking: number[] = [];
  for (let i = 0; i < RUNS + WARMUP; i++) {
    let t0 = performance.now();
    const r = await fetch(`${s.url}/v1/workflows/run`, { method: 'POST', headers, body: JSON.stringify({ inputs: {}, response_mode: 'streaming', user: 'bench' }) });
    const reader = r.body!.getReader();
    let text = '';
    let firstAt = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += Buffer.from(value).toString();
      if (!firstAt && text.includes('data: ')) firstAt = performance.now() - t0;
    }
    if (!text.includes('"workflow_finished"')) throw new Error('streaming run did not finish');
    if (i >= WARMUP) first.push(firstAt);
    t0 = performance.now();
    const b = (await (await fetch(`${s.url}/v1/workflows/run`, { method: 'POST', headers, body: JSON.stringify({ inputs: {}, response_mode: 'blocking', user: 'bench' }) })).json()) as { data: { status: string } };
    if (b.data.status !== 'succeeded') throw new Error(`blocking run: ${JSON.stringify(b)}`);
    if (i >= WARMUP) blocking.push(performance.now() - t0);
  }
  return { first, blocking };
}

/**
 * What executing runs as queue jobs costs on embedded SQLite: the same server with a queue worker
 * (the run is a `run.execute` job claimed by the worker) and without one (`QUEUE_WORKER=false`: the
 * run executes inline in the request's process, as before runs were jobs), side by side.
 */
export async function run(): Promise<void> {
  const rows: [string, { first: number[]; blocking: number[] }][] = [];
  for (const [label, env] of [
    ['inline (no queue hop)', { QUEUE_WORKER: 'false' }],
    ['queue job (run.execute)', {}],
  ] as const) {
    const s = await benchServer(env);
    try {
      rows.push([label, await measure(s)]);
    } finally {
      await s.close();
    }
  }
  process.stdout.write(`${RUNS} sequential runs of a 5-node workflow, embedded SQLite\n`);
  for (const [label, m] of rows) {
    process.stdout.write(`${label.padEnd(26)} first event p50 ${fmt(median(m.first))} ms, p99 ${fmt(percentile(m.first, 99))} ms; blocking run p50 ${fmt(median(m.blocking))} ms\n`);
  }
  const [inline, queued] = [rows[0]![1], rows[1]![1]];
  process.stdout.write(`queue hop adds ${fmt(median(queued.first) - median(inline.first))} ms to the first event at the median (target <= 5 ms)\n`);
}
