import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parse, stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { schemaErrors } from '../helpers/openapi.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { dataFrames, parseSse, readSse, type SseFrame } from '../helpers/sse.js';
import { endNode, startNode, workflowDsl, type NodeSpec } from '../helpers/workflow-dsl.js';

/**
 * A server that holds each `GET /hold?g=…&want=N&v=…` until N requests of group `g` are held, then
 * answers them all, last arrived first (so items finish out of order). A request still held after
 * `ms` (default 200) is answered alone, so a run that never reaches N still ends. `max` is the most
 * requests of a group held at once: how many items really ran at the same time.
 */
interface Group {
  held: (() => void)[];
  max: number;
  seen: string[];
  aborted: number;
}
const groups = new Map<string, Group>();
const group = (g: string): Group => {
  let v = groups.get(g);
  if (!v) groups.set(g, (v = { held: [], max: 0, seen: [], aborted: 0 }));
  return v;
};
let nextGroup = 0;
const newGroup = () => `g${nextGroup++}`;

function hold(url: URL, res: ServerResponse): void {
  const g = group(url.searchParams.get('g') ?? '');
  const want = Number(url.searchParams.get('want') ?? 1);
  const v = url.searchParams.get('v') ?? '';
  g.seen.push(v);
  let timer: NodeJS.Timeout | undefined;
  const answer = () => {
    clearTimeout(timer);
    g.held = g.held.filter((a) => a !== answer);
    if (!res.destroyed) res.writeHead(200, { 'content-type': 'text/plain' }).end(v);
  };
  res.on('close', () => {
    if (g.held.includes(answer)) {
      g.aborted++;
      clearTimeout(timer);
      g.held = g.held.filter((a) => a !== answer);
    }
  });
  g.held.push(answer);
  g.max = Math.max(g.max, g.held.length);
  if (g.held.length >= want) for (const a of [...g.held].reverse()) a();
  else timer = setTimeout(answer, Number(url.searchParams.get('ms') ?? 200));
}

let s: TestServer;
let upstream: Server;
let base = '';

beforeAll(async () => {
  upstream = createServer((req, res) => hold(new URL(req.url ?? '/', 'http://x'), res));
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  s = await startServer({ env: { SSRF_ALLOW_HOSTS: '127.0.0.1' } });
  // Python runs in Pyodide: its interpreter takes seconds to boot, once per file.
  await s.runtime.codeSandboxReady();
}, 180_000);
afterAll(async () => {
  await s?.close();
  upstream?.closeAllConnections();
  await new Promise((resolve) => upstream?.close(resolve));
});

const headers = (key: string) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' });
const run = (server: TestServer, key: string, xs: number[], mode: 'blocking' | 'streaming') =>
  fetch(`${server.api}/workflows/run`, { method: 'POST', headers: headers(key), body: JSON.stringify({ inputs: { xs: JSON.stringify(xs) }, response_mode: mode, user: 'u' }) });
const blocking = async (server: TestServer, key: string, xs: number[]) => (await (await run(server, key, xs, 'blocking')).json()).data;
const streaming = async (server: TestServer, key: string, xs: number[]) => dataFrames(parseSse(await (await run(server, key, xs, 'streaming')).text()));

const code = (id: string, src: string, outputs: Record<string, string>, variables: Record<string, string[]>, extra: Record<string, unknown> = {}): NodeSpec => ({
  id,
  type: 'code',
  code_language: 'python3',
  code: src,
  outputs: Object.fromEntries(Object.entries(outputs).map(([k, type]) => [k, { type, children: null }])),
  variables: Object.entries(variables).map(([variable, value_selector]) => ({ variable, value_selector })),
  ...extra,
});

/**
 * Iterates the JSON list `start.xs`: per item `chk` (python) fails on a negative item, then `http`
 * asks the hold server; `output` collects the bodies (the items as text).
 */
function holdApp(g: string, want: number, iteration: Record<string, unknown>, ms = 200): string {
  return workflowDsl(
    [
      startNode([{ variable: 'xs', type: 'paragraph' }]),
      code('parse', 'import json\ndef main(xs: str) -> dict:\n    return {"items": json.loads(xs)}\n', { items: 'array[number]' }, { xs: ['start', 'xs'] }),
      { id: 'it', type: 'iteration', iterator_selector: ['parse', 'items'], output_selector: ['http', 'body'], start_node_id: 'itstart', error_handle_mode: 'terminated', ...iteration },
      { id: 'itstart', type: 'iteration-start', parentId: 'it' },
      code('chk', 'def main(x: int) -> dict:\n    if x < 0:\n        raise ValueError(f"negative {x}")\n    return {"r": x}\n', { r: 'number' }, { x: ['it', 'item'] }, { parentId: 'it' }),
      {
        id: 'http',
        type: 'http-request',
        parentId: 'it',
        method: 'get',
        url: `${base}/hold?g=${g}&want=${want}&ms=${ms}&v={{#it.item#}}`,
        authorization: { type: 'no-auth' },
        headers: '',
        params: '',
        body: { type: 'none', data: [] },
        timeout: { connect: 5, read: 30, write: 5 },
      },
      endNode({ out: ['it', 'output'] }),
    ],
    [['start', 'parse'], ['parse', 'it'], ['itstart', 'chk'], ['chk', 'http'], ['it', 'end']],
  );
}

type Data = Record<string, unknown> & { node_id: string; iteration_id?: string | null; execution_metadata?: Record<string, unknown> | null };
const dataOf = (e: Record<string, unknown>) => e.data as Data;
const childEvents = (events: Record<string, unknown>[], event: string) => events.filter((e) => e.event === event && dataOf(e).iteration_id === 'it').map(dataOf);

describe('parallel iteration over HTTP', () => {
  it('runs items at once (all four held together), collects outputs in item order and tags child events per item', async () => {
    const g = newGroup();
    const { apiKey } = await s.importApp(holdApp(g, 4, { is_parallel: true, parallel_nums: 4 }, 5000));
    const events = await streaming(s, apiKey, [1, 2, 3, 4]);
    expect(group(g).max).toBe(4);
    // answered last-arrived first, yet the output keeps item order
    expect(events.at(-1)).toMatchObject({ event: 'workflow_finished', data: { status: 'succeeded', outputs: { out: ['1', '2', '3', '4'] } } });
    for (const e of events) expect(schemaErrors('ChunkWorkflowEvent', e), String(e.event)).toEqual([]);

    const next = events.filter((e) => e.event === 'iteration_next').map((e) => dataOf(e).index as number);
    expect([...next].sort()).toEqual([0, 1, 2, 3]);
    const completed = dataOf(events.find((e) => e.event === 'iteration_completed')!);
    expect(completed).toMatchObject({ status: 'succeeded', steps: 4, outputs: { output: ['1', '2', '3', '4'] } });
    expect(Object.keys(completed.execution_metadata!.iteration_duration_map as object).sort()).toEqual(['0', '1', '2', '3']);

    // every child node_started carries its item's parallel_run_id; node_finished the same id in execution_metadata
    const started = childEvents(events, 'node_started');
    const finished = childEvents(events, 'node_finished');
    expect(started).toHaveLength(12);
    expect(finished).toHaveLength(12);
    const runIdOf = new Map(started.map((d) => [d.id, d.parallel_run_id]));
    const byItem = new Map<number, Data[]>();
    for (const d of finished) {
      const meta = d.execution_metadata!;
      expect(meta).toMatchObject({ iteration_id: 'it', parallel_mode_run_id: runIdOf.get(d.id) });
      expect(d).not.toHaveProperty('parallel_run_id');
      byItem.set(meta.iteration_index as number, [...(byItem.get(meta.iteration_index as number) ?? []), d]);
    }
    expect(new Set(started.map((d) => d.parallel_run_id)).size).toBe(4);
    for (const [i, list] of byItem) {
      expect(list.map((d) => d.node_id)).toEqual(['itstart', 'chk', 'http']);
      expect(list.map((d) => d.outputs)).toEqual([{}, { r: i + 1 }, expect.objectContaining({ body: String(i + 1) })]);
      expect(new Set(list.map((d) => d.execution_metadata!.parallel_mode_run_id)).size).toBe(1);
    }
  });

  it('never runs more than parallel_nums items at once; is_parallel false runs one at a time', async () => {
    const g = newGroup();
    const { apiKey } = await s.importApp(holdApp(g, 2, { is_parallel: true, parallel_nums: 2 }, 5000));
    expect(await blocking(s, apiKey, [1, 2, 3, 4, 5, 6])).toMatchObject({ status: 'succeeded', outputs: { out: ['1', '2', '3', '4', '5', '6'] } });
    expect(group(g).max).toBe(2);
    expect(group(g).seen).toHaveLength(6);

    const seq = newGroup();
    const app = await s.importApp(holdApp(seq, 3, { is_parallel: false, parallel_nums: 3 }, 50));
    const events = await streaming(s, app.apiKey, [1, 2, 3]);
    expect(events.at(-1)).toMatchObject({ data: { status: 'succeeded', outputs: { out: ['1', '2', '3'] } } });
    expect(group(seq).max).toBe(1);
    expect(group(seq).seen).toEqual(['1', '2', '3']);
    expect(childEvents(events, 'node_started').some((d) => 'parallel_run_id' in d)).toBe(false);
  });

  it('clamps parallel_nums to ITERATION_MAX_PARALLEL, and a bad ITERATION_MAX_PARALLEL is refused naming it', async () => {
    const other = await startServer({ env: { SSRF_ALLOW_HOSTS: '127.0.0.1', ITERATION_MAX_PARALLEL: '2' } });
    try {
      await other.runtime.codeSandboxReady();
      const g = newGroup();
      const { apiKey } = await other.importApp(holdApp(g, 2, { is_parallel: true, parallel_nums: 10 }, 5000));
      expect(await blocking(other, apiKey, [1, 2, 3, 4])).toMatchObject({ status: 'succeeded', outputs: { out: ['1', '2', '3', '4'] } });
      expect(group(g).max).toBe(2);
    } finally {
      await other.close();
    }
    // parallel_nums absent: Dify's 10
    const g = newGroup();
    const { apiKey } = await s.importApp(holdApp(g, 10, { is_parallel: true }, 5000));
    expect((await blocking(s, apiKey, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10])).status).toBe('succeeded');
    expect(group(g).max).toBe(10);

    expect(() => loadConfig({ ITERATION_MAX_PARALLEL: '0' })).toThrow('ITERATION_MAX_PARALLEL must be at least 1, got 0');
    expect(() => loadConfig({ ITERATION_MAX_PARALLEL: 'many' })).toThrow('ITERATION_MAX_PARALLEL must be an integer, got "many"');
  }, 180_000);

  it('a bad parallel_nums is refused at import naming the field', async () => {
    await expect(s.importApp(holdApp(newGroup(), 1, { is_parallel: true, parallel_nums: 0 }))).rejects.toThrow('node it (iteration): parallel_nums must be a positive integer, got 0');
    await expect(s.importApp(holdApp(newGroup(), 1, { is_parallel: 'yes' }))).rejects.toThrow('node it (iteration): is_parallel must be a boolean');
    // not parallel: parallel_nums is not read
    await expect(s.importApp(holdApp(newGroup(), 1, { is_parallel: false, parallel_nums: 0 }))).resolves.toMatchObject({ apiKey: expect.any(String) });
  });
});

describe('parallel iteration error modes', () => {
  it('terminated: no item starts after a failure, the running ones finish, the node fails with the error', async () => {
    const g = newGroup();
    const { apiKey } = await s.importApp(holdApp(g, 2, { is_parallel: true, parallel_nums: 2 }, 1000));
    const events = await streaming(s, apiKey, [-1, 1, 2, 3]);
    expect(events.at(-1)).toMatchObject({ event: 'workflow_finished', data: { status: 'failed' } });
    expect(dataOf(events.at(-1)!).error).toMatch(/ValueError: negative -1/);
    // item 0 failed at once; item 1 was running (held) and finished; items 2 and 3 never started
    expect(events.filter((e) => e.event === 'iteration_next').map((e) => dataOf(e).index)).toEqual([0, 1]);
    expect(group(g).seen).toEqual(['1']);
    expect(childEvents(events, 'node_finished').find((d) => d.node_id === 'http')).toMatchObject({ status: 'succeeded', outputs: { body: '1' } });
    expect(dataOf(events.find((e) => e.event === 'iteration_completed')!)).toMatchObject({ status: 'failed', steps: 2 });
    expect(dataOf(events.find((e) => e.event === 'node_finished' && dataOf(e).node_id === 'it')!)).toMatchObject({ status: 'failed' });
  });

  it('terminated with several failures reports the lowest failing index', async () => {
    const { apiKey } = await s.importApp(holdApp(newGroup(), 1, { is_parallel: true, parallel_nums: 4 }));
    for (let round = 0; round < 3; round++) {
      const d = await blocking(s, apiKey, [5, -2, -3, -4]);
      expect(d.status).toBe('failed');
      expect(d.error).toMatch(/ValueError: negative -2$/);
    }
  });

  it('continue-on-error keeps null at the failed index; remove-abnormal-output drops the item', async () => {
    const cont = await s.importApp(holdApp(newGroup(), 2, { is_parallel: true, parallel_nums: 3, error_handle_mode: 'continue-on-error' }));
    expect(await blocking(s, cont.apiKey, [1, -1, 2])).toMatchObject({ status: 'succeeded', outputs: { out: ['1', null, '2'] } });
    const drop = await s.importApp(holdApp(newGroup(), 2, { is_parallel: true, parallel_nums: 3, error_handle_mode: 'remove-abnormal-output' }));
    expect(await blocking(s, drop.apiKey, [1, -1, 2])).toMatchObject({ status: 'succeeded', outputs: { out: ['1', '2'] } });
  });
});

describe('stopping a parallel iteration', () => {
  it('a stop while items are in flight stops them all and ends the run stopped', async () => {
    const g = newGroup();
    const { apiKey } = await s.importApp(holdApp(g, 99, { is_parallel: true, parallel_nums: 3 }, 20_000));
    const r = await run(s, apiKey, [1, 2, 3, 4, 5, 6], 'streaming');
    const seen: SseFrame[] = [];
    let stopped = false;
    let httpStarted = 0;
    for await (const f of readSse(r)) {
      seen.push(f);
      if (f.kind === 'data' && f.data.event === 'node_started' && dataOf(f.data).node_id === 'http') httpStarted++;
      if (!stopped && httpStarted === 3) {
        stopped = true;
        // the third request may still be on its way: stop once all three are held
        while (group(g).held.length < 3) await new Promise((resolve) => setTimeout(resolve, 10));
        const stop = await fetch(`${s.api}/workflows/tasks/${f.kind === 'data' ? f.data.task_id : ''}/stop`, { method: 'POST', headers: headers(apiKey), body: JSON.stringify({ user: 'u' }) });
        expect(await stop.json()).toEqual({ result: 'success' });
      }
    }
    const events = dataFrames(seen);
    expect(events.at(-1)).toMatchObject({ event: 'workflow_finished', data: { status: 'stopped', error: 'Stopped by user.' } });
    expect(dataOf(events.find((e) => e.event === 'node_finished' && dataOf(e).node_id === 'it')!)).toMatchObject({ status: 'stopped' });
    expect(childEvents(events, 'node_finished').filter((d) => d.node_id === 'http').map((d) => d.status)).toEqual(['stopped', 'stopped', 'stopped']);
    expect(events.filter((e) => e.event === 'iteration_next')).toHaveLength(3);
    expect(events.some((e) => dataOf(e)?.node_id === 'end')).toBe(false);
    for (let i = 0; i < 100 && group(g).aborted < 3; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(group(g).aborted).toBe(3);
  });
});

describe('conversation variables in a parallel iteration', () => {
  it("an assigner's write inside each item reaches the conversation", async () => {
    const doc = parse(
      workflowDsl(
        [
          startNode(),
          { id: 'it', type: 'iteration', iterator_selector: ['conversation', 'items'], output_selector: ['it', 'index'], is_parallel: true, parallel_nums: 3, start_node_id: 'itstart' },
          { id: 'itstart', type: 'iteration-start', parentId: 'it' },
          { id: 'bump', type: 'assigner', version: '2', parentId: 'it', items: [{ variable_selector: ['conversation', 'count'], input_type: 'variable', operation: '+=', value: ['it', 'item'] }] },
          { id: 'answer', type: 'answer', answer: 'count {{#conversation.count#}} indexes {{#it.output#}}' },
        ],
        [['start', 'it'], ['itstart', 'bump'], ['it', 'answer']],
        { mode: 'advanced-chat', name: 'parallel counter' },
      ),
    ) as { workflow: Record<string, unknown> };
    doc.workflow.conversation_variables = [
      { id: '33333333-3333-4333-8333-333333333333', name: 'count', value_type: 'number', value: 0, description: '', selector: ['conversation', 'count'] },
      { id: '44444444-4444-4444-8444-444444444444', name: 'items', value_type: 'array[number]', value: [1, 10, 100], description: '', selector: ['conversation', 'items'] },
    ];
    const { apiKey } = await s.importApp(stringify(doc));
    const chat = async (conversation_id?: string) =>
      (await fetch(`${s.api}/chat-messages`, { method: 'POST', headers: headers(apiKey), body: JSON.stringify({ inputs: {}, query: 'q', user: 'cv', conversation_id, response_mode: 'blocking' }) })).json();
    const first = await chat();
    expect(first.answer).toBe('count 111 indexes [0,1,2]');
    expect((await chat(first.conversation_id)).answer).toBe('count 222 indexes [0,1,2]');
    const vars = await (await fetch(`${s.api}/conversations/${first.conversation_id}/variables?user=cv`, { headers: headers(apiKey) })).json();
    expect(vars.data.find((v: { name: string }) => v.name === 'count')).toMatchObject({ value: '222' });
  });
});
