import { stringify } from 'yaml';
import { benchServer, fmt, median, percentile } from './lib.js';
import { startFakeOpenAI } from '../test/helpers/fake-openai.js';
import { openAiCompatibleProviders } from '../test/helpers/openai-providers.js';
import { readSse } from '../test/helpers/sse.js';

const RUNS = 25;

const dsl = stringify({
  app: { name: 'slow llm', mode: 'workflow' },
  workflow: {
    graph: {
      nodes: [
        { id: 'start', data: { type: 'start', title: 'Start', variables: [] } },
        { id: 'llm', data: { type: 'llm', title: 'LLM', model: { provider: 'openai', name: 'slow', mode: 'chat' }, prompt_template: [{ role: 'user', text: 'go' }] } },
        { id: 'end', data: { type: 'end', title: 'End', outputs: [{ variable: 'a', value_selector: ['llm', 'text'] }] } },
      ],
      edges: [
        { source: 'start', target: 'llm' },
        { source: 'llm', target: 'end' },
      ],
    },
  },
});

/** Bench 2: stop request → `workflow_finished` frame while an LLM node streams slowly. */
export async function run(): Promise<void> {
  const fake = await startFakeOpenAI({ reply: 'x'.repeat(5000), chunkSize: 1, delayMs: 20 });
  const server = await benchServer({}, {}, { providers: openAiCompatibleProviders(fake.baseUrl) });
  const app = await server.runtime.apps.importDsl(dsl);
  const { apiKey } = await server.runtime.keys.create('app', app.workspaceId, app.id);
  const headers = { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' };
  const lat: number[] = [];
  const rtt: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const r = await fetch(`${server.url}/v1/workflows/run`, { method: 'POST', headers, body: JSON.stringify({ inputs: {}, response_mode: 'streaming', user: 'bench' }) });
    let t0 = 0;
    let chunks = 0;
    for await (const f of readSse(r)) {
      if (f.kind !== 'data') continue;
      if (f.data.event === 'text_chunk' && ++chunks === 3) {
        t0 = performance.now();
        void fetch(`${server.url}/v1/workflows/tasks/${f.data.task_id}/stop`, { method: 'POST', headers, body: JSON.stringify({ user: 'ops' }) });
      }
      if (f.data.event === 'workflow_finished') {
        if ((f.data.data as { status: string }).status !== 'stopped') throw new Error('run was not stopped');
        lat.push(performance.now() - t0);
      }
    }
    const t1 = performance.now();
    await fetch(`${server.url}/v1/workflows/tasks/unknown/stop`, { method: 'POST', headers, body: JSON.stringify({ user: 'ops' }) });
    rtt.push(performance.now() - t1);
  }
  process.stdout.write(
    [
      `stop latency (stop request → workflow_finished frame), LLM streaming a chunk every 20 ms, ${RUNS} runs`,
      `Dovetail            median ${fmt(median(lat), 1)} ms   p95 ${fmt(percentile(lat, 95), 1)} ms   (target: median ≤ 50 ms)`,
      `baseline: a no-op stop request round trip  median ${fmt(median(rtt), 1)} ms   p95 ${fmt(percentile(rtt, 95), 1)} ms`,
    ].join('\n') + '\n',
  );
  await server.close();
  await fake.close();
}
