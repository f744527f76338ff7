import v8 from 'node:v8';
import vm from 'node:vm';
import { stringify } from 'yaml';
import { benchServer, fmt, median, percentile } from './lib.js';
import { readSse } from '../test/helpers/sse.js';

const LATENCY_RUNS = 40;
const PAUSED_RUNS = Number(process.env.BENCH_PAUSED_RUNS ?? 10_000);

const dsl = stringify({
  app: { name: 'bench approval', mode: 'workflow' },
  workflow: {
    graph: {
      nodes: [
        { id: 'start', data: { type: 'start', title: 'Start', variables: [] } },
        {
          id: 'review',
          data: {
            type: 'human-input',
            title: 'Review',
            delivery_methods: [{ id: 'web', type: 'webapp', enabled: true, config: {} }],
            form_content: 'Approve? {{#$output.comment#}}',
            inputs: [{ type: 'paragraph', output_variable_name: 'comment' }],
            user_actions: [{ id: 'approve', title: 'Approve', button_style: 'primary' }],
            timeout: 3,
            timeout_unit: 'day',
          },
        },
        { id: 'end', data: { type: 'end', title: 'End', outputs: [{ variable: 'c', value_selector: ['review', 'comment'] }] } },
      ],
      edges: [
        { source: 'start', target: 'review' },
        { source: 'review', sourceHandle: 'approve', target: 'end' },
      ],
    },
  },
});

function gc(): void {
  v8.setFlagsFromString('--expose-gc');
  (vm.runInNewContext('gc') as () => void)();
}

/**
 * Human Input: submit → first resumed event on an open reopened stream, and memory held per
 * paused run (heap and RSS growth over many paused runs).
 */
export async function run(): Promise<void> {
  const server = await benchServer();
  const app = await server.runtime.apps.importDsl(dsl);
  const { apiKey } = await server.runtime.keys.create('app', app.workspaceId, app.id);
  const headers = { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' };
  const start = async (mode: 'blocking' | 'streaming') =>
    fetch(`${server.url}/v1/workflows/run`, { method: 'POST', headers, body: JSON.stringify({ inputs: {}, response_mode: mode, user: 'bench' }) });

  const lat: number[] = [];
  const base: number[] = [];
  for (let i = 0; i < LATENCY_RUNS + 5; i++) {
    let token = '';
    let runId = '';
    for await (const f of readSse(await start('streaming'))) {
      if (f.kind === 'data' && f.data.event === 'human_input_required') {
        token = String((f.data.data as { form_token: string }).form_token);
        runId = String(f.data.workflow_run_id);
      }
    }
    const stream = await fetch(`${server.url}/v1/workflow/${runId}/events?user=bench`, { headers });
    const it = readSse(stream)[Symbol.asyncIterator]();
    await it.next(); // the leading ping: the stream is open
    const b0 = performance.now();
    await fetch(`${server.url}/v1/form/human_input/${token}`, { method: 'POST', headers, body: JSON.stringify({ inputs: {}, action: 'nope', user: 'bench' }) });
    const b1 = performance.now();
    const t0 = performance.now();
    void fetch(`${server.url}/v1/form/human_input/${token}`, { method: 'POST', headers, body: JSON.stringify({ inputs: { comment: 'ok' }, action: 'approve', user: 'bench' }) });
    for (let n = await it.next(); !n.done; n = await it.next()) {
      if (n.value.kind === 'data') {
        if (i >= 5) lat.push(performance.now() - t0);
        break;
      }
    }
    if (i >= 5) base.push(b1 - b0);
    await it.return?.(undefined);
  }
  process.stdout.write(
    [
      `submit → first resumed event on an open reopened stream, ${LATENCY_RUNS} runs`,
      `Dovetail   median ${fmt(median(lat), 1)} ms   p95 ${fmt(percentile(lat, 95), 1)} ms   (target: median ≤ 20 ms)`,
      `baseline: a rejected submit's round trip (validation only, no resume)   median ${fmt(median(base), 1)} ms   p95 ${fmt(percentile(base, 95), 1)} ms`,
    ].join('\n') + '\n',
  );

  gc();
  const heap0 = process.memoryUsage().heapUsed;
  const rss0 = process.memoryUsage().rss;
  const t0 = performance.now();
  let next = 0;
  const worker = async () => {
    while (next < PAUSED_RUNS) {
      next++;
      const r = await start('blocking');
      const body = (await r.json()) as { data: { status: string } };
      if (body.data.status !== 'paused') throw new Error(`expected a paused run, got ${body.data.status}`);
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
  const secs = (performance.now() - t0) / 1000;
  gc();
  const heap = (process.memoryUsage().heapUsed - heap0) / PAUSED_RUNS;
  const rss = (process.memoryUsage().rss - rss0) / PAUSED_RUNS;
  const paused = await server.runtime.store.db.selectFrom('workflow_runs').select((eb) => eb.fn.countAll<number>().as('n')).where('status', '=', 'paused').executeTakeFirstOrThrow();
  process.stdout.write(
    [
      `memory per paused run: ${PAUSED_RUNS} runs paused in ${fmt(secs, 1)} s (${Number(paused.n)} paused in the database), same process`,
      `heap growth ${fmt(heap / 1024, 3)} KB per paused run   (target ≤ 2 KB)`,
      `RSS growth  ${fmt(rss / 1024, 3)} KB per paused run   (includes SQLite page cache; baseline: 0 = nothing held)`,
    ].join('\n') + '\n',
  );
  await server.close();
}
