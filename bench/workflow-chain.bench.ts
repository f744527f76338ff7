import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import nunjucks from 'nunjucks';
import { stringify } from 'yaml';
import { Annotation, END, START, StateGraph } from '@langchain/langgraph';
import { SqliteSaver } from '@langchain/langgraph-checkpoint-sqlite';
import { benchServer, fmt, median } from './lib.js';

const NODES = 200;
const RUNS = 30;
const WARMUP = 20;
const TEMPLATE = '{{ v | length }}:{{ i }}';

/**
 * A linear chain of `NODES` template-transform nodes between start and end, or of
 * variable-aggregator nodes (`aggregator`): the engine's own cost per node, the templates' baseline.
 */
function chainDsl(kind: 'template' | 'aggregator' = 'template'): string {
  const nodes: Record<string, unknown>[] = [{ id: 'start', data: { type: 'start', title: 'Start', variables: [] } }];
  const edges: Record<string, unknown>[] = [];
  let prev = 'start';
  for (let i = 0; i < NODES; i++) {
    const id = `t${i}`;
    const input = prev === 'start' ? ['sys', 'app_id'] : [prev, 'output'];
    if (kind === 'aggregator') {
      nodes.push({ id, data: { type: 'variable-aggregator', title: id, output_type: 'string', variables: [input] } });
      edges.push({ source: prev, target: id });
      prev = id;
      continue;
    }
    nodes.push({
      id,
      data: {
        type: 'template-transform',
        title: id,
        template: TEMPLATE,
        variables: [
          { variable: 'v', value_selector: input },
          { variable: 'i', value_selector: ['sys', 'workflow_run_id'] },
        ],
      },
    });
    edges.push({ source: prev, target: id });
    prev = id;
  }
  nodes.push({ id: 'end', data: { type: 'end', title: 'End', outputs: [{ variable: 'out', value_selector: [prev, 'output'] }] } });
  edges.push({ source: prev, target: 'end' });
  return stringify({ app: { name: 'chain', mode: 'workflow' }, kind: 'app', version: '0.3.1', workflow: { graph: { nodes, edges } } });
}

async function dovetail(kind: 'template' | 'aggregator'): Promise<number[]> {
  const s = await benchServer();
  const app = await s.runtime.apps.importDsl(chainDsl(kind));
  const { apiKey } = await s.runtime.keys.create('app', app.workspaceId, app.id);
  const times: number[] = [];
  for (let i = 0; i < RUNS + WARMUP; i++) {
    const t0 = performance.now();
    const r = await fetch(`${s.url}/v1/workflows/run`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ inputs: {}, response_mode: 'blocking', user: 'bench' }),
    });
    const body = (await r.json()) as { data: { status: string; total_steps: number } };
    if (body.data.status !== 'succeeded' || body.data.total_steps !== NODES + 2) throw new Error(`run did not succeed: ${JSON.stringify(body)}`);
    if (i >= WARMUP) times.push(performance.now() - t0);
  }
  const events = await s.runtime.store.db.selectFrom('workflow_run_events').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  if (Number(events.n) < (RUNS + WARMUP) * (2 * (NODES + 2) + 2)) throw new Error('event log incomplete');
  await s.close();
  return times;
}

async function langgraph(): Promise<number[]> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'dovetail-lg-'));
  const env = new nunjucks.Environment(null, { autoescape: false });
  const tpl = nunjucks.compile(TEMPLATE, env);
  const State = Annotation.Root({ v: Annotation<string>(), i: Annotation<string>() });
  const graph = new StateGraph(State);
  for (let i = 0; i < NODES; i++) graph.addNode(`t${i}`, (s: typeof State.State) => ({ v: tpl.render({ v: s.v, i: s.i }) }));
  const g = graph as unknown as { addEdge(a: string, b: string): void; compile(o: object): { invoke(input: object, cfg: object): Promise<{ v: string }> } };
  g.addEdge(START, 't0');
  for (let i = 1; i < NODES; i++) g.addEdge(`t${i - 1}`, `t${i}`);
  g.addEdge(`t${NODES - 1}`, END);
  const saver = SqliteSaver.fromConnString(path.join(dir, 'checkpoints.db'));
  const compiled = g.compile({ checkpointer: saver });
  const times: number[] = [];
  for (let i = 0; i < RUNS + WARMUP; i++) {
    const t0 = performance.now();
    await compiled.invoke({ v: 'app', i: String(i) }, { configurable: { thread_id: `run-${i}` }, recursionLimit: NODES + 10 });
    if (i >= WARMUP) times.push(performance.now() - t0);
  }
  rmSync(dir, { recursive: true, force: true });
  return times;
}

/** Bench 1: per-node overhead of a 200-node template chain, blocking, event log persisted. */
export async function run(): Promise<void> {
  const lg = median(await langgraph()) / NODES;
  const aggregator = median(await dovetail('aggregator')) / NODES;
  const ours = median(await dovetail('template')) / NODES;
  process.stdout.write(
    [
      `${NODES}-node template-transform chain, blocking, median of ${RUNS} runs after ${WARMUP} warm-up runs`,
      `Dovetail (HTTP, SQLite event log + snapshot persisted)   ${fmt(ours, 4)} ms/node`,
      `baseline: the same chain of variable-aggregator nodes   ${fmt(aggregator, 4)} ms/node (templates add ${fmt(ours - aggregator, 4)} ms/node; target: template chain ≤ 0.05 ms/node)`,
      `LangGraph.js 1.7.3 (SqliteSaver checkpointer), baseline  ${fmt(lg, 4)} ms/node`,
      `ratio: Dovetail is ${fmt(lg / ours, 1)}x faster per node (target ≥ 10x)`,
    ].join('\n') + '\n',
  );
}
