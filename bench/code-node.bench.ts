import { stringify } from 'yaml';
import { benchServer, fmt, median } from './lib.js';

const RUNS = 30;
const WARMUP = 3;
const ITEMS = 10;

type N = { id: string; parentId?: string; data: Record<string, unknown> };

/** start (input x) → … → end (output r = `out`). */
function dsl(nodes: N[], edges: [string, string][], out: string[]): string {
  return stringify({
    app: { name: 'bench-code', mode: 'workflow' },
    kind: 'app',
    version: '0.3.1',
    workflow: {
      graph: {
        nodes: [
          { id: 'start', data: { type: 'start', title: 'start', variables: [{ variable: 'x', label: 'x', type: 'number', required: true }] } },
          ...nodes,
          { id: 'end', data: { type: 'end', title: 'end', outputs: [{ variable: 'r', value_selector: out }] } },
        ],
        edges: edges.map(([source, target]) => ({ source, target, sourceHandle: 'source' })),
      },
    },
  });
}

const code = (language: string, src: string, x: string[], type = 'number') => ({
  type: 'code',
  title: 'code',
  code_language: language,
  code: src,
  variables: [{ variable: 'x', value_selector: x }],
  outputs: { r: { type, children: null } },
});
const single = (data: Record<string, unknown>, out: string) => dsl([{ id: 'n', data }], [['start', 'n'], ['n', 'end']], ['n', out]);

/**
 * Blocking workflow runs over HTTP: one python3 / javascript code node (a child process each)
 * against a template-transform node (in-process) as the baseline, and an iteration running a
 * python3 code node per item.
 */
export async function run(): Promise<void> {
  // CODE_PYTHON_COMMAND from the environment (e.g. the interpreter itself rather than a version-manager shim)
  const s = await benchServer(process.env.CODE_PYTHON_COMMAND ? { CODE_PYTHON_COMMAND: process.env.CODE_PYTHON_COMMAND } : {});
  const api = `${s.url}/v1`;
  const keyOf = async (yaml: string) => {
    const a = await s.runtime.apps.importDsl(yaml);
    return (await s.runtime.keys.create('app', a.workspaceId, a.id)).apiKey;
  };
  const time = async (key: string, runs: number) => {
    const ms: number[] = [];
    for (let i = 0; i < runs + WARMUP; i++) {
      const t0 = performance.now();
      const r = await fetch(`${api}/workflows/run`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ inputs: { x: i }, user: 'bench' }) });
      const b = (await r.json()) as { data: { status: string; error: string | null } };
      if (b.data.status !== 'succeeded') throw new Error(`run ${b.data.status}: ${b.data.error}`);
      if (i >= WARMUP) ms.push(performance.now() - t0);
    }
    return median(ms);
  };
  const template = await keyOf(single({ type: 'template-transform', title: 't', template: '{{ x * 2 }}', variables: [{ variable: 'x', value_selector: ['start', 'x'] }] }, 'output'));
  const py = await keyOf(single(code('python3', 'def main(x):\n    return {"r": x * 2}\n', ['start', 'x']), 'r'));
  const js = await keyOf(single(code('javascript', 'function main({x}) { return { r: x * 2 }; }', ['start', 'x']), 'r'));
  const iter = await keyOf(
    dsl(
      [
        { id: 'items', data: code('python3', `def main(x):\n    return {"r": list(range(${ITEMS}))}\n`, ['start', 'x'], 'array[number]') },
        { id: 'it', data: { type: 'iteration', title: 'it', iterator_selector: ['items', 'r'], output_selector: ['inner', 'r'], start_node_id: 'itstart' } },
        { id: 'itstart', parentId: 'it', data: { type: 'iteration-start', title: '' } },
        { id: 'inner', parentId: 'it', data: code('python3', 'def main(x):\n    return {"r": x * 2}\n', ['it', 'item']) },
      ],
      [['start', 'items'], ['items', 'it'], ['itstart', 'inner'], ['it', 'end']],
      ['it', 'output'],
    ),
  );
  // Importing a python3 app starts Python's workers in the background (seconds of CPU): time nothing until they are up.
  await s.runtime.codeSandboxReady();
  const base = await time(template, RUNS);
  const pyMs = await time(py, RUNS);
  const jsMs = await time(js, RUNS);
  const iterMs = await time(iter, 10);
  console.log(`template-transform run (baseline, in-process): median ${fmt(base)} ms`);
  console.log(`python3 code node run:                         median ${fmt(pyMs)} ms (+${fmt(pyMs - base)} ms over the baseline)`);
  console.log(`javascript code node run:                      median ${fmt(jsMs)} ms (+${fmt(jsMs - base)} ms over the baseline)`);
  console.log(`iteration of ${ITEMS} python3 code nodes (+1 list): median ${fmt(iterMs)} ms (${fmt((iterMs - base) / (ITEMS + 1))} ms per code node)`);
  await s.close();
}
