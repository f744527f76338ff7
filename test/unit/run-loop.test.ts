import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { DslDocument } from '../../src/apps/dsl.js';
import { compileGraph } from '../../src/engine/graph.js';
import { initialState } from '../../src/engine/run-state.js';
import type { CodeExecutor, CodeRequest, EnginePorts, Graph } from '../../src/engine/types.js';
import type { Bus } from '../../src/infra/bus/bus.js';
import { RunJournal } from '../../src/runs/journal.js';
import type { JournalWrite } from '../../src/runs/run-event-store.js';
import { RunLoop, type RunMeta } from '../../src/runs/run-loop.js';
import { STOPPED_BY_USER } from '../../src/runs/run-types.js';
import { MemoryHumanInput } from '../helpers/memory-human-input.js';
import { endNode, startNode, workflowDsl, type NodeSpec } from '../helpers/workflow-dsl.js';

/**
 * The run loop with fake ports and a journal over an in-memory event store: what it writes to the
 * log and the run row for a run that succeeds, fails, pauses, stops, is fenced out or hands back.
 * No server, no database.
 */

class MemoryEventStore {
  readonly writes: JournalWrite[] = [];
  /** Flushes from this one on answer false (another owner took the run). */
  fencedFrom = Infinity;
  async flush(w: JournalWrite): Promise<boolean> {
    if (this.writes.length >= this.fencedFrom) return false;
    this.writes.push(w);
    return true;
  }
  get events(): { event: string; [k: string]: unknown }[] {
    return this.writes.flatMap((w) => w.events.map((e) => JSON.parse(e.payload) as { event: string }));
  }
  get names(): string[] {
    return this.events.map((e) => e.event);
  }
  /** The run row as the patches leave it. */
  get row(): Record<string, unknown> {
    return Object.assign({}, ...this.writes.map((w) => w.patch)) as Record<string, unknown>;
  }
}

const quietBus: Bus = { shared: false, publish: async () => undefined, subscribe: async () => async () => undefined, close: async () => undefined };

/** A code executor that answers `main`'s result from a function of the request, or waits until aborted. */
function codeExecutor(answer: (req: CodeRequest, signal: AbortSignal) => Promise<unknown>): CodeExecutor & { calls: CodeRequest[] } {
  const calls: CodeRequest[] = [];
  return {
    calls,
    run: async (req, signal) => {
      calls.push(req);
      return answer(req, signal);
    },
  };
}

const LIMITS = { loopMaxCount: 100, iterationMaxItems: 99, iterationMaxParallel: 10, agentMaxIterations: 5, code: { maxStringLength: 80_000, maxStringArrayLength: 30, maxObjectArrayLength: 30, maxNumberArrayLength: 1000, maxDepth: 5, maxPrecision: 20 } };

function ports(over: Partial<EnginePorts> = {}): EnginePorts {
  let t = 1_700_000_000_000;
  let id = 0;
  return {
    providers: undefined,
    humanInput: undefined,
    memory: undefined,
    limits: LIMITS,
    now: () => (t += 5),
    newId: () => `id-${++id}`,
    sleep: async () => undefined,
    ...over,
  };
}

const codeNode = (id: string, from: string[]): NodeSpec => ({
  id,
  type: 'code',
  code_language: 'javascript',
  code: 'function main({ x }) { return { y: x + "!" } }',
  variables: [{ variable: 'x', value_selector: from }],
  outputs: { y: { type: 'string', children: null } },
});

function setup(nodes: NodeSpec[], edges: [string, string, string?][], p: EnginePorts, opts: { maxSteps?: number; lastSeq?: number } = {}) {
  const graph: Graph = compileGraph(parse(workflowDsl(nodes, edges)) as DslDocument);
  const meta: RunMeta = { id: 'run-1', taskId: 'task-1', appId: 'app-1', workflowId: 'app-1', mode: 'workflow', endUserId: 'eu-1', user: 'alice', conversationId: null, messageId: null, createdAt: 1_700_000_000_000, inputs: { x: 'hi' } };
  const state = initialState(graph, { sys: { user_id: 'alice', app_id: 'app-1', workflow_run_id: 'run-1', files: [] }, env: {}, conversation: {}, [graph.startId]: { x: 'hi' } });
  const store = new MemoryEventStore();
  const journal = new RunJournal(store, quietBus, { now: () => 1_700_000_000_000 }, 'run-1', opts.lastSeq ?? 0, 1);
  const loop = new RunLoop({ meta, graph, state, ports: p, journal, limits: { maxSteps: opts.maxSteps ?? 50, maxTimeMs: 60_000 } });
  return { loop, store, state, journal };
}

const chain = { nodes: [startNode([{ variable: 'x' }]), codeNode('a', ['start', 'x']), codeNode('b', ['a', 'y']), endNode({ out: ['b', 'y'] })], edges: [['start', 'a'], ['a', 'b'], ['b', 'end']] as [string, string][] };

describe('RunLoop with fake ports', () => {
  it('runs a chain to its end: events in order with numbered frames, the row ended succeeded with the outputs', async () => {
    const code = codeExecutor(async (req) => ({ y: `${String(req.inputs.x)}!` }));
    const { loop, store } = setup(chain.nodes, chain.edges, ports({ code }));
    const end = await loop.run('initial');
    expect(end).toMatchObject({ status: 'succeeded', outputs: { out: 'hi!!' }, error: null });
    expect(store.names).toEqual(['workflow_started', 'node_started', 'node_finished', 'node_started', 'node_finished', 'node_started', 'node_finished', 'node_started', 'node_finished', 'workflow_finished']);
    expect(store.writes.flatMap((w) => w.events.map((e) => e.seq))).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    const finished = store.events.at(-1)!;
    expect(finished).toMatchObject({ event: 'workflow_finished', workflow_run_id: 'run-1', task_id: 'task-1', data: { status: 'succeeded', outputs: { out: 'hi!!' }, total_steps: 4, error: null } });
    expect(store.row).toMatchObject({ status: 'succeeded', owner_job: null, total_steps: 4, error: null, outputs: JSON.stringify({ out: 'hi!!' }) });
    expect(code.calls.map((c) => c.inputs)).toEqual([{ x: 'hi' }, { x: 'hi!' }]);
    expect(store.writes.at(-1)!.snapshot).toBeDefined();
  });

  it('a failing node fails the run: node_finished carries the error, the run ends failed with no outputs', async () => {
    const code = codeExecutor(async () => {
      throw new Error('ValueError: bad input');
    });
    const { loop, store } = setup(chain.nodes, chain.edges, ports({ code }));
    const end = await loop.run('initial');
    expect(end.status).toBe('failed');
    expect(end.error).toMatch(/bad input/);
    expect(loop.failedNode).toEqual({ id: 'a', title: 'a', type: 'code' });
    expect(store.names).toEqual(['workflow_started', 'node_started', 'node_finished', 'node_started', 'node_finished', 'workflow_finished']);
    expect(store.events[4]).toMatchObject({ event: 'node_finished', data: { node_id: 'a', status: 'failed' } });
    expect(store.row).toMatchObject({ status: 'failed', outputs: null });
  });

  it('the step limit ends the run failed with Dify\'s message', async () => {
    const code = codeExecutor(async (req) => ({ y: String(req.inputs.x) }));
    const { loop } = setup(chain.nodes, chain.edges, ports({ code }), { maxSteps: 2 });
    const end = await loop.run('initial');
    expect(end).toMatchObject({ status: 'failed', error: 'Max steps 2 reached.' });
  });

  it('a stop aborts the node in flight and ends the run stopped', async () => {
    let started!: () => void;
    const running = new Promise<void>((r) => (started = r));
    const code = codeExecutor(
      (_req, signal) =>
        new Promise((_resolve, reject) => {
          started();
          signal.addEventListener('abort', () => reject(new Error('aborted')), { once: true });
        }),
    );
    const { loop, store } = setup(chain.nodes, chain.edges, ports({ code }));
    const done = loop.run('initial');
    await running;
    loop.requestStop();
    const end = await done;
    expect(end).toMatchObject({ status: 'stopped', error: STOPPED_BY_USER });
    expect(store.names.at(-1)).toBe('workflow_finished');
    expect(store.row).toMatchObject({ status: 'stopped' });
    expect(code.calls).toHaveLength(1); // the next node never started
  });

  it('a Human Input node pauses the run: one human_input_required, then workflow_paused, the row paused and released', async () => {
    const humanInput = new MemoryHumanInput();
    const nodes = [startNode([{ variable: 'x' }]), { id: 'ask', type: 'human-input', title: 'Ask', form_content: 'ok?', inputs: [], user_actions: [{ id: 'yes', title: 'Yes' }], delivery_methods: [{ type: 'webapp', enabled: true }] }, endNode({ out: ['start', 'x'] })];
    const { loop, store } = setup(nodes, [['start', 'ask'], ['ask', 'end', 'yes']], ports({ humanInput }));
    const end = await loop.run('initial');
    expect(end.status).toBe('paused');
    expect(store.names).toEqual(['workflow_started', 'node_started', 'node_finished', 'node_started', 'human_input_required', 'workflow_paused']);
    expect(store.events.at(-1)).toMatchObject({ event: 'workflow_paused', data: { paused_nodes: ['ask'], status: 'paused' } });
    expect(store.row).toMatchObject({ status: 'paused', owner_job: null });
  });

  it('a takeover sends no second workflow_started; the sequence goes on from the log', async () => {
    const code = codeExecutor(async (req) => ({ y: String(req.inputs.x) }));
    const { loop, store } = setup(chain.nodes, chain.edges, ports({ code }), { lastSeq: 12 });
    await loop.run('takeover');
    expect(store.names[0]).toBe('node_started');
    expect(store.writes[0]!.events[0]!.seq).toBe(13);
  });

  it('fenced out by another owner: the loop stops, aborts what is in flight and throws; nothing more is written', async () => {
    let aborted = false;
    const code = codeExecutor(
      (_req, signal) =>
        new Promise((_resolve, reject) => {
          signal.addEventListener('abort', () => {
            aborted = true;
            reject(new Error('aborted'));
          }, { once: true });
        }),
    );
    const { loop, store } = setup(chain.nodes, chain.edges, ports({ code }));
    store.fencedFrom = 0;
    await expect(loop.run('initial')).rejects.toThrow(/another worker took the run over/);
    expect(aborted).toBe(true);
    expect(store.writes).toHaveLength(0);
  });

  it('a hand-back (shutdown) saves the state with the node in flight queued again and leaves the run running', async () => {
    let started!: () => void;
    const running = new Promise<void>((r) => (started = r));
    const code = codeExecutor(
      (_req, signal) =>
        new Promise((_resolve, reject) => {
          started();
          signal.addEventListener('abort', () => reject(new Error('aborted')), { once: true });
        }),
    );
    const { loop, store, state } = setup(chain.nodes, chain.edges, ports({ code }));
    const done = loop.run('initial');
    await running;
    loop.requestHandBack();
    const end = await done;
    expect(end.status).toBe('handed-back');
    expect(store.names).not.toContain('workflow_finished');
    expect(store.row.status).toBeUndefined(); // still running
    expect(state.pending[0]).toMatchObject({ node: 'a' }); // it runs again from its start
  });
});
