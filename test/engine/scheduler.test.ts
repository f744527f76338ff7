import { describe, expect, it } from 'vitest';
import { initialState } from '../../src/engine/run-state.js';
import { Scheduler, STOPPED_BY_USER, type StartNode } from '../../src/engine/scheduler.js';
import { NodeFailure, type Graph, type GraphEdge, type GraphNode, type NodeResult } from '../../src/engine/types.js';
import type { HumanInputRequired } from '../../src/engine/ports.js';

/** A graph from `[id, type]` nodes and `[source, target, handle?]` edges; the first node starts. */
function graph(nodes: [string, string][], edges: [string, string, string?][]): Graph {
  const es: GraphEdge[] = edges.map(([source, target, handle]) => ({ id: `${source}-${target}`, source, target, handle: handle ?? 'source' }));
  const outgoing = new Map<string, GraphEdge[]>();
  const incoming = new Map<string, GraphEdge[]>();
  for (const e of es) {
    outgoing.set(e.source, [...(outgoing.get(e.source) ?? []), e]);
    incoming.set(e.target, [...(incoming.get(e.target) ?? []), e]);
  }
  const ns = new Map(nodes.map(([id, type]) => [id, { id, type, title: id, data: {} } as GraphNode]));
  return { nodes: ns, edges: es, outgoing, incoming, startId: nodes[0]![0], entryIds: [nodes[0]![0]], environment: {}, secrets: {} } as unknown as Graph;
}

const ok = (outputs: Record<string, unknown> = {}): NodeResult => ({
  type: 'succeeded',
  outputs,
  inputs: null,
  processData: null,
  take: (e) => e.handle !== 'fail-branch',
  usage: undefined,
  error: null,
  errorStrategy: null,
});

const LIMITS = { maxSteps: 50, maxTimeMs: 60_000 };

/** A scheduler over `g` and a shell that starts what it picks, naming each execution after its node. */
function setup(g: Graph, limits = LIMITS) {
  const state = initialState(g, {});
  const sched = new Scheduler(g, state, limits);
  const start = (): string[] => {
    const started: StartNode[] = [];
    for (const s of sched.ready()) {
      sched.started(s.node, s);
      started.push(s);
    }
    return started.map((s) => s.node);
  };
  return { state, sched, start };
}

const required = { form_id: 'f1', node_id: 'a' } as unknown as HumanInputRequired;

describe('scheduler (the run loop without I/O)', () => {
  const fork = graph(
    [
      ['start', 'start'],
      ['a', 'code'],
      ['b', 'code'],
      ['c', 'code'],
      ['end', 'end'],
    ],
    [
      ['start', 'a'],
      ['start', 'b'],
      ['a', 'c'],
      ['b', 'c'],
      ['c', 'end'],
    ],
  );

  it('starts parallel branches together, joins them, collects the end outputs and succeeds', () => {
    const { state, sched, start } = setup(fork);
    expect(start()).toEqual(['start']);
    expect(sched.complete('start', ok())).toMatchObject({ type: 'finished', status: 'succeeded', abort: false });
    expect(start()).toEqual(['a', 'b']);
    expect(sched.inFlight).toBe(2);
    sched.complete('a', ok({ x: 1 }));
    expect(start()).toEqual([]);
    sched.complete('b', ok());
    expect(start()).toEqual(['c']);
    sched.complete('c', ok());
    expect(start()).toEqual(['end']);
    sched.complete('end', ok({ result: 'r' }));
    expect(start()).toEqual([]);
    expect(sched.pool.get(['a', 'x'])).toBe(1);
    expect(state).toMatchObject({ steps: 5, index: 5, outputs: { result: 'r' }, pending: [] });
    expect(sched.end()).toEqual({ type: 'succeeded' });
  });

  it('a stop request starts nothing more and ends with the stop reason after the in-flight nodes', () => {
    const { sched, start } = setup(fork);
    start();
    sched.complete('start', ok());
    start();
    expect(sched.requestStop()).toBe(true);
    expect(sched.requestStop('again')).toBe(false);
    expect(sched.stopReason).toBe(STOPPED_BY_USER);
    expect(sched.complete('a', { type: 'stopped' })).toMatchObject({ type: 'finished', status: 'stopped', error: STOPPED_BY_USER });
    expect(sched.complete('b', ok())).toMatchObject({ type: 'finished', status: 'succeeded' });
    expect(start()).toEqual([]);
    expect(sched.requestHandBack()).toBe(false);
    expect(sched.end()).toEqual({ type: 'stopped', error: STOPPED_BY_USER });
  });

  it('a pause drains the in-flight nodes, defers the ready ones and queues the paused node again', () => {
    const g = graph(
      [
        ['start', 'start'],
        ['a', 'human-input'],
        ['b', 'code'],
        ['d', 'code'],
      ],
      [
        ['start', 'a'],
        ['start', 'b'],
        ['b', 'd'],
      ],
    );
    const { state, sched, start } = setup(g);
    start();
    sched.complete('start', ok());
    expect(start()).toEqual(['a', 'b']);
    expect(sched.complete('a', { type: 'pause', required })).toEqual({ type: 'paused' });
    expect(sched.complete('b', ok())).toMatchObject({ type: 'finished', status: 'succeeded' });
    expect(start()).toEqual([]); // d is ready but deferred
    expect(sched.end()).toEqual({ type: 'paused', pausedNodes: ['a'], reasons: [required] });
    expect(state.pending).toEqual([
      { node: 'a', from: 'start' },
      { node: 'd', from: 'b' },
    ]);
    expect(state.paused).toEqual([required]);
    expect(state.steps).toBe(3);
  });

  it('the step limit fails the run with Dify’s message and keeps the node first in the queue', () => {
    const { state, sched, start } = setup(fork, { maxSteps: 2, maxTimeMs: 60_000 });
    start();
    sched.complete('start', ok());
    expect(start()).toEqual(['a']);
    expect(state.pending[0]).toEqual({ node: 'b', from: 'start' });
    sched.complete('a', ok());
    expect(start()).toEqual([]);
    expect(() => sched.childStep()).toThrow(NodeFailure);
    expect(() => sched.childStep()).toThrow('Max steps 2 reached.');
    expect(sched.end()).toEqual({ type: 'failed', error: 'Max steps 2 reached.' });
  });

  it('loop / iteration children count as steps and take execution indexes', () => {
    const { state, sched, start } = setup(fork, { maxSteps: 3, maxTimeMs: 60_000 });
    start();
    expect(sched.childStep()).toBe(2);
    expect(sched.childStep()).toBe(3);
    expect(state.steps).toBe(3);
    expect(() => sched.childStep()).toThrow('Max steps 3 reached.');
  });

  it('the time limit comes from the time spent before this execution and fails the run with Dify’s message', () => {
    const { state, sched, start } = setup(fork, { maxSteps: 50, maxTimeMs: 1500 });
    state.elapsedMs = 400;
    expect(sched.timeLeftMs()).toBe(1100);
    sched.begin(10_000);
    expect(sched.elapsed(10_250)).toBe(650);
    start();
    sched.timeUp();
    expect(start()).toEqual([]);
    expect(sched.complete('start', { type: 'stopped' })).toMatchObject({ type: 'finished', status: 'failed', error: 'Max execution time 2s reached.' });
    sched.timeUp();
    expect(sched.end()).toEqual({ type: 'failed', error: 'Max execution time 2s reached.' });
  });

  it('a failed node aborts the others and fails the run with its error (the first failure wins)', () => {
    const { sched, start } = setup(fork);
    start();
    sched.complete('start', ok());
    start();
    expect(sched.complete('a', { type: 'failed', error: 'boom' })).toMatchObject({ type: 'finished', status: 'failed', error: 'boom', abort: true });
    expect(sched.complete('b', { type: 'stopped' })).toMatchObject({ type: 'finished', status: 'failed', error: 'boom', abort: false });
    expect(start()).toEqual([]);
    expect(sched.end()).toEqual({ type: 'failed', error: 'boom' });
  });

  it('an exception (fail-branch error strategy) follows the fail branch, counts and ends partial-succeeded', () => {
    const g = graph(
      [
        ['start', 'start'],
        ['a', 'code'],
        ['ok', 'code'],
        ['handler', 'code'],
      ],
      [
        ['start', 'a'],
        ['a', 'ok', 'source'],
        ['a', 'handler', 'fail-branch'],
      ],
    );
    const { state, sched, start } = setup(g);
    start();
    sched.complete('start', ok());
    start();
    const exception: NodeResult = {
      type: 'exception',
      outputs: { error_message: 'bad', error_type: 'NodeError' },
      inputs: null,
      processData: null,
      take: (e) => e.handle === 'fail-branch',
      usage: undefined,
      error: 'bad',
      errorStrategy: 'fail-branch',
    };
    expect(sched.complete('a', exception)).toMatchObject({ type: 'finished', status: 'exception', error: 'bad', metadata: { error_strategy: 'fail-branch' } });
    expect(start()).toEqual(['handler']);
    expect(state.nodes.ok).toBe('skipped');
    sched.complete('handler', ok());
    expect(state.exceptions).toBe(1);
    expect(sched.pool.get(['a', 'error_message'])).toBe('bad');
    expect(sched.end()).toEqual({ type: 'partial-succeeded' });
  });

  it('a hand-back requeues interrupted nodes uncounted; a snapshot lists in-flight nodes first', () => {
    const { state, sched, start } = setup(fork);
    start();
    sched.complete('start', ok());
    sched.begin(1000);
    start();
    expect(sched.snapshot(1300)).toMatchObject({ elapsedMs: 300, steps: 1, pending: [{ node: 'a' }, { node: 'b' }] });
    expect(sched.requestHandBack()).toBe(true);
    expect(sched.requestHandBack()).toBe(false);
    expect(sched.complete('b', { type: 'stopped' })).toEqual({ type: 'requeued' });
    expect(sched.complete('a', ok())).toMatchObject({ type: 'finished' });
    expect(start()).toEqual([]);
    expect(state.steps).toBe(2);
    expect(state.pending).toEqual([{ node: 'b', from: 'start' }]);
    expect(sched.end()).toEqual({ type: 'handed-back' });
  });
});
