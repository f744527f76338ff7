import { stringify } from 'yaml';
import { benchServer, fmt, median, percentile, timedPair } from './lib.js';

const RUNS = 100;
const WARMUP = 10;

const node = (id: string, data: Record<string, unknown>) => ({ id, data: { title: id, ...data } });
const dsl = (name: string, nodes: unknown[], edges: [string, string][]) =>
  stringify({ app: { name, mode: 'workflow' }, kind: 'app', version: '0.3.1', workflow: { graph: { nodes, edges: edges.map(([source, target]) => ({ source, target })) } } });

/** The workflow the tool runs: start → template → end. */
const INNER = dsl(
  'inner',
  [
    node('start', { type: 'start', variables: [{ variable: 'name', label: 'name', type: 'text-input', required: true }] }),
    node('greet', { type: 'template-transform', template: 'Hello {{ name }}', variables: [{ variable: 'name', value_selector: ['start', 'name'] }] }),
    node('end', { type: 'end', outputs: [{ variable: 'greeting', value_selector: ['greet', 'output'] }] }),
  ],
  [['start', 'greet'], ['greet', 'end']],
);

/** start → the inner workflow as a tool → end. */
const outer = (innerId: string) =>
  dsl(
    'outer',
    [
      node('start', { type: 'start', variables: [{ variable: 'name', label: 'name', type: 'text-input', required: true }] }),
      node('tool', { type: 'tool', provider_id: innerId, provider_type: 'workflow', tool_name: 'inner', tool_configurations: {}, tool_parameters: { name: { type: 'mixed', value: '{{#start.name#}}' } } }),
      node('end', { type: 'end', outputs: [{ variable: 'text', value_selector: ['tool', 'text'] }] }),
    ],
    [['start', 'tool'], ['tool', 'end']],
  );


/**
 * Workflow as tool: a workflow whose one tool node runs another workflow (in process, as a run of
 * its own), against the baseline of running that inner workflow directly over the API in the
 * same process. The difference is what calling a workflow through a tool node adds (the outer
 * run's start / tool / end nodes and the inner run's bookkeeping).
 */
export async function run(): Promise<void> {
  const s = await benchServer();
  const inner = await s.runtime.apps.importDsl(INNER);
  const innerKey = (await s.runtime.keys.create('app', inner.workspaceId, inner.id)).apiKey;
  const out = await s.runtime.apps.importDsl(outer(inner.id));
  const outerKey = (await s.runtime.keys.create('app', out.workspaceId, out.id)).apiKey;
  const call = (key: string, check: (outputs: Record<string, string>) => boolean) => async () => {
    const r = await fetch(`${s.url}/v1/workflows/run`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ inputs: { name: 'Ada' }, response_mode: 'blocking', user: 'bench' }) });
    const b = (await r.json()) as { data: { status: string; outputs: Record<string, string> } };
    if (b.data.status !== 'succeeded' || !check(b.data.outputs)) throw new Error(`run failed: ${JSON.stringify(b).slice(0, 300)}`);
  };
  const [direct, viaTool] = await timedPair(RUNS, WARMUP, 
    call(innerKey, (o) => o.greeting === 'Hello Ada'),
    call(outerKey, (o) => o.text === '{"greeting": "Hello Ada"}'),
  );
  process.stdout.write(
    [
      `workflow run calling a workflow as a tool (blocking)    p50 ${fmt(median(viaTool), 2)} ms  p95 ${fmt(percentile(viaTool, 95), 2)} ms`,
      `  baseline: the same inner workflow run directly        p50 ${fmt(median(direct), 2)} ms  p95 ${fmt(percentile(direct, 95), 2)} ms`,
      `  added by the tool call (p50 difference)               ${fmt(median(viaTool) - median(direct), 2)} ms`,
    ].join('\n') + '\n',
  );
  await s.close();
}
