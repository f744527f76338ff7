import os from 'node:os';
import path from 'node:path';
import { readFileSync, rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.js';
import { dataFrames, parseSse, readSse, type SseFrame } from '../helpers/sse.js';
import { endNode, startNode, workflowDsl, type NodeSpec } from '../helpers/workflow-dsl.js';

let s: TestServer;
/** A server with a short code timeout, for the tests of the timeout (the others keep a long one: a busy machine starts python slowly). */
let quick: TestServer;

beforeAll(async () => {
  [s, quick] = await Promise.all([startServer({ env: { LOOP_NODE_MAX_COUNT: '20', CODE_EXECUTION_TIMEOUT: '30' } }), startServer({ env: { CODE_EXECUTION_TIMEOUT: '3' } })]);
  // Python runs in Pyodide: its interpreters take seconds to boot, once per file.
  await Promise.all([s.runtime.codeSandboxReady(), quick.runtime.codeSandboxReady()]);
}, 180_000);
afterAll(async () => {
  await Promise.all([s?.close(), quick?.close()]);
});

const headers = (key: string) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' });

async function run(key: string, inputs: Record<string, unknown>, mode: 'blocking' | 'streaming' = 'blocking', server = s) {
  const r = await fetch(`${server.api}/workflows/run`, { method: 'POST', headers: headers(key), body: JSON.stringify({ inputs, response_mode: mode, user: 'u' }) });
  expect(r.status).toBe(200);
  return r;
}
const blocking = async (key: string, inputs: Record<string, unknown> = {}, server = s) => (await (await run(key, inputs, 'blocking', server)).json()).data;
const streaming = async (key: string, inputs: Record<string, unknown> = {}) => dataFrames(parseSse(await (await run(key, inputs, 'streaming')).text()));

const codeNode = (id: string, language: string, code: string, outputs: Record<string, string>, variables: Record<string, string[]> = {}, extra: Record<string, unknown> = {}): NodeSpec => ({
  id,
  type: 'code',
  code_language: language,
  code,
  outputs: Object.fromEntries(Object.entries(outputs).map(([k, type]) => [k, { type, children: null }])),
  variables: Object.entries(variables).map(([variable, value_selector]) => ({ variable, value_selector })),
  ...extra,
});

/** A loop that appends `x` to `acc` and adds 1 to `n` until n ≥ `until` (at most `count` rounds). */
const loopApp = (count: number, until: number) =>
  workflowDsl(
    [
      startNode(),
      {
        id: 'loop',
        type: 'loop',
        loop_count: count,
        logical_operator: 'and',
        break_conditions: [{ variable_selector: ['loop', 'n'], comparison_operator: '≥', value: String(until), varType: 'number' }],
        loop_variables: [
          { label: 'n', var_type: 'number', value_type: 'constant', value: '0' },
          { label: 'acc', var_type: 'array[string]', value_type: 'constant', value: '[]' },
        ],
        start_node_id: 'loopstart',
      },
      { id: 'loopstart', type: 'loop-start', parentId: 'loop' },
      {
        id: 'assign',
        type: 'assigner',
        version: '2',
        parentId: 'loop',
        items: [
          { variable_selector: ['loop', 'n'], input_type: 'constant', operation: '+=', value: 1 },
          { variable_selector: ['loop', 'acc'], input_type: 'constant', operation: 'append', value: 'x' },
        ],
      },
      endNode({ n: ['loop', 'n'], acc: ['loop', 'acc'], rounds: ['loop', 'loop_round'] }),
    ],
    [['start', 'loop'], ['loopstart', 'assign'], ['loop', 'end']],
  );

describe('loop + assigner over HTTP', () => {
  it('runs rounds until the break condition holds and streams loop events with loop_id on child nodes', async () => {
    const { apiKey } = await s.importApp(loopApp(10, 3));
    const d = await blocking(apiKey);
    expect(d).toMatchObject({ status: 'succeeded', outputs: { n: 3, acc: ['x', 'x', 'x'], rounds: 3 } });
    const events = await streaming(apiKey);
    const loopEvents = events.filter((e) => String(e.event).startsWith('loop_'));
    expect(loopEvents.map((e) => e.event)).toEqual(['loop_started', 'loop_next', 'loop_next', 'loop_completed']);
    const started = loopEvents[0]!.data as Record<string, unknown>;
    const loopNodeStarted = events.find((e) => e.event === 'node_started' && (e.data as { node_id: string }).node_id === 'loop')!.data as Record<string, unknown>;
    expect(started).toMatchObject({ id: loopNodeStarted.id, node_id: 'loop', node_type: 'loop', inputs: { n: 0, acc: [] } });
    expect(loopEvents.map((e) => (e.data as { index?: number }).index)).toEqual([undefined, 1, 2, undefined]);
    expect(loopEvents[3]!.data).toMatchObject({ status: 'succeeded', error: null, steps: 3, outputs: { n: 3, acc: ['x', 'x', 'x'], loop_round: 3 } });
    const children = events.filter((e) => e.event === 'node_finished' && (e.data as { loop_id: string | null }).loop_id === 'loop');
    expect(children.map((e) => (e.data as { node_id: string }).node_id)).toEqual(['loopstart', 'assign', 'loopstart', 'assign', 'loopstart', 'assign']);
    expect((children[1]!.data as { execution_metadata: Record<string, unknown> }).execution_metadata).toMatchObject({ loop_id: 'loop', loop_index: 0 });
    const top = events.filter((e) => e.event === 'node_started' && (e.data as { loop_id: string | null }).loop_id === null);
    expect(top.map((e) => (e.data as { node_id: string }).node_id)).toEqual(['start', 'loop', 'end']);
    const fin = events.at(-1)!;
    expect(fin).toMatchObject({ event: 'workflow_finished', data: { status: 'succeeded', total_steps: 9 } });
  });

  it('stops at loop_count when the condition never holds; a loop_count over LOOP_NODE_MAX_COUNT fails naming the limit', async () => {
    const d = await blocking((await s.importApp(loopApp(2, 99))).apiKey);
    expect(d.outputs).toEqual({ n: 2, acc: ['x', 'x'], rounds: 2 });
    const over = await blocking((await s.importApp(loopApp(21, 3))).apiKey);
    expect(over.status).toBe('failed');
    expect(over.error).toBe('Loop count 21 exceeds the limit of 20 (LOOP_NODE_MAX_COUNT).');
  });

  it('a failing assigner fails the loop and the run with its message', async () => {
    const app = loopApp(3, 99).replace("operation: append", "operation: +=");
    const d = await blocking((await s.importApp(app)).apiKey);
    expect(d.status).toBe('failed');
    expect(d.error).toBe('Operation += is not supported: variable loop.acc and the value must be numbers');
  });
});

describe('stopping a loop', () => {
  it('a stop during a round ends the loop and the run stopped; no node after the loop runs', async () => {
    const app = workflowDsl(
      [
        startNode(),
        { id: 'loop', type: 'loop', loop_count: 20, break_conditions: [], loop_variables: [{ label: 'n', var_type: 'number', value_type: 'constant', value: '0' }], start_node_id: 'loopstart' },
        { id: 'loopstart', type: 'loop-start', parentId: 'loop' },
        codeNode('nap', 'python3', 'import time\ndef main(n: int) -> dict:\n    time.sleep(0.2)\n    return {"r": n}\n', { r: 'number' }, { n: ['loop', 'n'] }, { parentId: 'loop' }),
        { id: 'assign', type: 'assigner', version: '2', parentId: 'loop', items: [{ variable_selector: ['loop', 'n'], input_type: 'constant', operation: '+=', value: 1 }] },
        endNode({ n: ['loop', 'n'] }),
      ],
      [['start', 'loop'], ['loopstart', 'nap'], ['nap', 'assign'], ['loop', 'end']],
    );
    const { apiKey } = await s.importApp(app);
    const r = await run(apiKey, {}, 'streaming');
    const seen: SseFrame[] = [];
    let stopped = false;
    for await (const f of readSse(r)) {
      seen.push(f);
      if (!stopped && f.kind === 'data' && f.data.event === 'loop_next') {
        stopped = true;
        const stop = await fetch(`${s.api}/workflows/tasks/${f.data.task_id}/stop`, { method: 'POST', headers: headers(apiKey), body: JSON.stringify({ user: 'u' }) });
        expect(await stop.json()).toEqual({ result: 'success' });
      }
    }
    const events = dataFrames(seen);
    expect(events.at(-1)).toMatchObject({ event: 'workflow_finished', data: { status: 'stopped', error: 'Stopped by user.' } });
    const loopFinished = events.find((e) => e.event === 'node_finished' && (e.data as { node_id: string }).node_id === 'loop');
    expect(loopFinished?.data).toMatchObject({ status: 'stopped' });
    expect(events.filter((e) => e.event === 'loop_next').length).toBeLessThan(19);
    expect(events.some((e) => (e.data as { node_id?: string })?.node_id === 'end')).toBe(false);
  });
});

describe('code node over HTTP', () => {
  const app = (node: NodeSpec, outputs: Record<string, string[]>) =>
    workflowDsl([startNode([{ variable: 'x', type: 'number', required: false }]), node, endNode(outputs)], [['start', node.id], [node.id, 'end']]);

  it('python3 and javascript run main with the variables and return the declared outputs', async () => {
    const py = codeNode('c', 'python3', 'def main(x: int) -> dict:\n    print("noise")\n    return {"double": x * 2, "label": f"x={x}"}\n', { double: 'number', label: 'string' }, { x: ['start', 'x'] });
    expect((await blocking((await s.importApp(app(py, { d: ['c', 'double'], l: ['c', 'label'] }))).apiKey, { x: 21 })).outputs).toEqual({ d: 42, l: 'x=21' });
    const js = codeNode('c', 'javascript', 'function main({x}) {\n  return { double: x * 2, items: [x, x + 1] };\n}\n', { double: 'number', items: 'array[number]' }, { x: ['start', 'x'] });
    expect((await blocking((await s.importApp(app(js, { d: ['c', 'double'], i: ['c', 'items'] }))).apiKey, { x: 2 })).outputs).toEqual({ d: 4, i: [2, 3] });
  });

  it('fails the node with the program error, a type mismatch, or the timeout (naming CODE_EXECUTION_TIMEOUT)', async () => {
    const fail = async (node: NodeSpec, server = s) => {
      const d = await blocking((await server.importApp(app(node, { r: ['c', 'r'] }))).apiKey, { x: 1 }, server);
      expect(d.status).toBe('failed');
      return d.error as string;
    };
    expect(await fail(codeNode('c', 'python3', 'def main(x):\n    raise ValueError("bad input")\n', { r: 'string' }, { x: ['start', 'x'] }))).toMatch(/ValueError: bad input/);
    expect(await fail(codeNode('c', 'python3', 'def main():\n    return {"r": 5}\n', { r: 'string' }))).toBe('Output variable `r` must be a string');
    expect(await fail(codeNode('c', 'python3', 'import time\ndef main():\n    time.sleep(30)\n    return {"r": "late"}\n', { r: 'string' }), quick)).toBe('Code execution timed out after 3s (CODE_EXECUTION_TIMEOUT).');
    expect(await fail(codeNode('c', 'javascript', 'function main() { return { r: require("fs") } }', { r: 'string' }))).toMatch(/require is not defined/);
  });

  it('in process mode, the timeout also ends the processes the code started (the sandbox cannot start any)', async () => {
    const pidFile = path.join(os.tmpdir(), `dovetail-grandchild-${process.pid}-${Date.now()}`);
    const code = `import subprocess, time\ndef main():\n    p = subprocess.Popen(["sleep", "60"])\n    open(${JSON.stringify(pidFile)}, "w").write(str(p.pid))\n    time.sleep(60)\n    return {"r": "late"}\n`;
    const proc = await startServer({ env: { CODE_EXECUTION_MODE: 'process', CODE_EXECUTION_TIMEOUT: '3' } });
    let d: Record<string, unknown>;
    try {
      d = await blocking((await proc.importApp(app(codeNode('c', 'python3', code, { r: 'string' }), { r: ['c', 'r'] }))).apiKey, { x: 1 }, proc);
    } finally {
      await proc.close();
    }
    expect(d).toMatchObject({ status: 'failed', error: 'Code execution timed out after 3s (CODE_EXECUTION_TIMEOUT).' });
    const pid = Number(readFileSync(pidFile, 'utf8'));
    rmSync(pidFile, { force: true });
    // Gone, or a zombie waiting to be reaped by init: either way no longer running.
    const running = () => {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
        return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
      } catch {
        return false;
      }
    };
    for (let i = 0; i < 50 && running(); i++) await new Promise((r) => setTimeout(r, 20));
    expect(running()).toBe(false);
  });

  it('in process mode, a missing python3 fails the node with a clear message', async () => {
    const other = await startServer({ env: { CODE_EXECUTION_MODE: 'process', CODE_PYTHON_COMMAND: '/nonexistent/python3' } });
    try {
      const { apiKey } = await other.importApp(app(codeNode('c', 'python3', 'def main():\n    return {"r": "x"}\n', { r: 'string' }), { r: ['c', 'r'] }));
      const r = await fetch(`${other.api}/workflows/run`, { method: 'POST', headers: headers(apiKey), body: JSON.stringify({ inputs: {}, user: 'u' }) });
      const d = (await r.json()).data;
      expect(d.status).toBe('failed');
      expect(d.error).toBe('Code execution failed: python3 ("/nonexistent/python3", CODE_PYTHON_COMMAND) is not installed on this server.');
    } finally {
      await other.close();
    }
  });
});

describe('iteration over HTTP', () => {
  /**
   * Iterates `start.xs` (JSON list) through a python3 code node that fails on negative items; in
   * parallel (4 at once) unless `extra` says otherwise. test/e2e/iteration-parallel.test.ts covers
   * what parallel mode adds.
   */
  const iterApp = (mode: string, extra: Record<string, unknown> = {}) =>
    workflowDsl(
      [
        startNode([{ variable: 'xs', type: 'paragraph' }]),
        codeNode('parse', 'python3', 'import json\ndef main(xs: str) -> dict:\n    return {"items": json.loads(xs)}\n', { items: 'array[number]' }, { xs: ['start', 'xs'] }),
        { id: 'it', type: 'iteration', iterator_selector: ['parse', 'items'], output_selector: ['sq', 'r'], error_handle_mode: mode, is_parallel: true, parallel_nums: 4, start_node_id: 'itstart', ...extra },
        { id: 'itstart', type: 'iteration-start', parentId: 'it' },
        codeNode('sq', 'python3', 'def main(x: int, i: int) -> dict:\n    if x < 0:\n        raise ValueError(f"negative at {i}")\n    return {"r": x * x}\n', { r: 'number' }, { x: ['it', 'item'], i: ['it', 'index'] }, { parentId: 'it' }),
        endNode({ out: ['it', 'output'] }),
      ],
      [['start', 'parse'], ['parse', 'it'], ['itstart', 'sq'], ['it', 'end']],
    );

  it('sequential: collects one output per item, with iteration events and iteration_id on child nodes in item order', async () => {
    const { apiKey } = await s.importApp(iterApp('terminated', { is_parallel: false }));
    const events = await streaming(apiKey, { xs: '[1, 2, 3]' });
    expect(events.at(-1)).toMatchObject({ event: 'workflow_finished', data: { status: 'succeeded', outputs: { out: [1, 4, 9] } } });
    const it = events.filter((e) => String(e.event).startsWith('iteration_'));
    expect(it.map((e) => e.event)).toEqual(['iteration_started', 'iteration_next', 'iteration_next', 'iteration_next', 'iteration_completed']);
    expect(it[0]!.data).toMatchObject({ node_id: 'it', node_type: 'iteration', inputs: { iterator_selector: [1, 2, 3] }, metadata: { iterator_length: 3 } });
    expect(it.slice(1, 4).map((e) => (e.data as { index: number }).index)).toEqual([0, 1, 2]);
    expect(it[4]!.data).toMatchObject({ status: 'succeeded', outputs: { output: [1, 4, 9] }, steps: 3 });
    const children = events.filter((e) => e.event === 'node_finished' && (e.data as { iteration_id: string | null }).iteration_id === 'it');
    expect(children.map((e) => (e.data as { node_id: string; outputs: unknown }).outputs)).toEqual([{}, { r: 1 }, {}, { r: 4 }, {}, { r: 9 }]);
    expect(children.map((e) => (e.data as { execution_metadata: Record<string, unknown> }).execution_metadata)).toEqual([0, 0, 1, 1, 2, 2].map((i) => ({ iteration_id: 'it', iteration_index: i })));
    expect(await blocking(apiKey, { xs: '[]' })).toMatchObject({ status: 'succeeded', outputs: { out: [] } });
  });

  it('parallel, error_handle_mode: terminated fails the run; continue-on-error keeps null; remove-abnormal-output drops the item', async () => {
    const run = async (mode: string) => blocking((await s.importApp(iterApp(mode))).apiKey, { xs: '[2, -1, 3]' });
    const term = await run('terminated');
    expect(term.status).toBe('failed');
    expect(term.error).toMatch(/ValueError: negative at 1/);
    expect((await run('continue-on-error')).outputs).toEqual({ out: [4, null, 9] });
    expect((await run('remove-abnormal-output')).outputs).toEqual({ out: [4, 9] });
  });

  it('a non-list iterator or more items than MAX_ITERATIONS_NUM fails the node with a clear message', async () => {
    const other = await startServer({ env: { MAX_ITERATIONS_NUM: '2' } });
    try {
      const { apiKey } = await other.importApp(iterApp('terminated'));
      const r = await fetch(`${other.api}/workflows/run`, { method: 'POST', headers: headers(apiKey), body: JSON.stringify({ inputs: { xs: '[1, 2, 3]' }, user: 'u' }) });
      expect((await r.json()).data).toMatchObject({ status: 'failed', error: 'Iterator length 3 exceeds the limit of 2 (MAX_ITERATIONS_NUM).' });
    } finally {
      await other.close();
    }
    const app = iterApp('terminated', { iterator_selector: ['start', 'xs'] });
    expect(await blocking((await s.importApp(app)).apiKey, { xs: '[1]' })).toMatchObject({ status: 'failed', error: 'Invalid iterator value: "[1]", please provide a list.' });
  });
});

describe('iteration children start clean each item', () => {
  it('a branch skipped for an item leaves no output from an earlier item', async () => {
    const app = workflowDsl(
      [
        startNode([{ variable: 'xs', type: 'paragraph' }]),
        codeNode('parse', 'python3', 'import json\ndef main(xs: str) -> dict:\n    return {"items": json.loads(xs)}\n', { items: 'array[number]' }, { xs: ['start', 'xs'] }),
        { id: 'it', type: 'iteration', iterator_selector: ['parse', 'items'], output_selector: ['big', 'output'], start_node_id: 'itstart', flatten_output: false },
        { id: 'itstart', type: 'iteration-start', parentId: 'it' },
        { id: 'if', type: 'if-else', parentId: 'it', cases: [{ case_id: 'true', logical_operator: 'and', conditions: [{ variable_selector: ['it', 'item'], comparison_operator: '>', value: '5' }] }] },
        { id: 'big', type: 'template-transform', parentId: 'it', template: 'big {{ x }}', variables: [{ variable: 'x', value_selector: ['it', 'item'] }] },
        endNode({ out: ['it', 'output'] }),
      ],
      [['start', 'parse'], ['parse', 'it'], ['itstart', 'if'], ['if', 'big', 'true'], ['it', 'end']],
    );
    expect((await blocking((await s.importApp(app)).apiKey, { xs: '[7, 1, 9]' })).outputs).toEqual({ out: ['big 7', null, 'big 9'] });
  });
});
