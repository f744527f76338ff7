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

interface Target {
  readonly s: BenchServer;
  readonly headers: Record<string, string>;
  readonly first: number[];
  readonly blocking: number[];
}

async function target(s: BenchServer): Promise<Target> {
  const app = await s.runtime.apps.importDsl(dsl());
  const { apiKey } = await s.runtime.keys.create('app', app.workspaceId, app.id);
  return { s, headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' }, first: [], blocking: [] };
}

/** One streaming run (time to its first `data:` frame) and one blocking run (its whole time). */
async function once(t: Target, keep: boolean): Promise<void> {
  let t0 = performance.now();
  const r = await fetch(`${t.s.url}/v1/workflows/run`, { method: 'POST', headers: t.headers, body: JSON.stringify({ inputs: {}, response_mode: 'streaming', user: 'bench' }) });
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
  if (keep) t.first.push(firstAt);
  t0 = performance.now();
  const b = (await (await fetch(`${t.s.url}/v1/workflows/run`, { method: 'POST', headers: t.headers, body: JSON.stringify({ inputs: {}, response_mode: 'blocking', user: 'bench' }) })).json()) as { data: { status: string } };
  if (b.data.status !== 'succeeded') throw new Error(`blocking run: ${JSON.stringify(b)}`);
  if (keep) t.blocking.push(performance.now() - t0);
}

/**
 * What executing runs as queue jobs costs on embedded SQLite: the same server with a queue worker
 * (the run is a `run.execute` job; enqueued by the process that runs it, it starts without a poll)
 * and without one (`QUEUE_WORKER=false`: the run executes inline in the request's process, as
 * before runs were jobs). Both servers run at once and the runs alternate between them, so a busy
 * machine slows both alike; each figure is the median of the per-pair differences too.
 */
export async function run(): Promise<void> {
  const inline = await target(await benchServer({ QUEUE_WORKER: 'false' }));
  const queued = await target(await benchServer({}));
  try {
    for (let i = 0; i < RUNS + WARMUP; i++) {
      // the order alternates as well: neither side always runs right after the other
      const [a, b] = i % 2 === 0 ? [inline, queued] : [queued, inline];
      await once(a, i >= WARMUP);
      await once(b, i >= WARMUP);
    }
  } finally {
    await inline.s.close();
    await queued.s.close();
  }
  process.stdout.write(`${RUNS} runs of a 5-node workflow on each of two servers at once, alternating, embedded SQLite\n`);
  for (const [label, m] of [['inline (no queue hop)', inline], ['queue job (run.execute)', queued]] as const) {
    process.stdout.write(`${label.padEnd(26)} first event p50 ${fmt(median(m.first))} ms, p99 ${fmt(percentile(m.first, 99))} ms; blocking run p50 ${fmt(median(m.blocking))} ms\n`);
  }
  const pairDiff = (a: number[], b: number[]) => median(a.map((x, i) => x - b[i]!));
  process.stdout.write(`queue hop adds, median of pair differences: ${fmt(pairDiff(queued.first, inline.first))} ms to the first event, ${fmt(pairDiff(queued.blocking, inline.blocking))} ms to a blocking run (issue #46 target: <= 1 ms)\n`);
}
