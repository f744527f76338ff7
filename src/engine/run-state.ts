import type { Graph, GraphEdge } from './types.js';
import type { UsageBody } from '../lib/usage.js';
import type { PoolData } from './variable-pool.js';
import type { HumanInputRequired } from './ports.js';
import type { RetrieverResource } from './retriever-resources.js';

/** Snapshot format version; bump when the shape changes (old snapshots keep their `v`). */
export const RUN_STATE_VERSION = 1;

export type EdgeState = 'unknown' | 'taken' | 'skipped';
export type NodeState = 'unknown' | 'done' | 'skipped';

/**
 * Everything needed to continue a run in another process: plain JSON, versioned. Node and edge
 * states drive readiness; `pending` are the nodes to start when the run continues.
 */
export interface RunState {
  readonly v: typeof RUN_STATE_VERSION;
  pool: PoolData;
  nodes: Record<string, NodeState>;
  edges: Record<string, EdgeState>;
  /** Ready nodes not yet started, with the node that made each ready. */
  pending: { node: string; from: string | null }[];
  /** Human-input reasons of the current pause. */
  paused: HumanInputRequired[];
  steps: number;
  tokens: number;
  /**
   * The sum of the run's model calls (Dify's `LLMUsage.plus`); absent in snapshots written before
   * it existed and in runs without a model call, read as zero usage.
   */
  usage?: UsageBody;
  exceptions: number;
  /** Execution index counter (node_started.index). */
  index: number;
  outputs: Record<string, unknown>;
  /** Chatflow: the answer streamed so far. */
  answer: string;
  /** Chatflow: answer node id → template segments already streamed live by an LLM node. */
  streamed?: Record<string, number>;
  /** Milliseconds already spent running before the current resume. */
  elapsedMs: number;
  /**
   * Chatflow: the citations of the knowledge that reached LLM nodes' contexts, merged as Dify's
   * message cycle manager merges them; absent when none (and in older snapshots).
   */
  retrieverResources?: RetrieverResource[];
}

/**
 * The state of a new run starting at `rootId` (default the graph's start). The graph's other entry
 * points (trigger nodes, or the start node of a triggered run) are skipped at once, with their
 * skips spread downstream as a branch not taken: a node reached only from another trigger is
 * skipped, one that two triggers share runs once its taken edge arrives (Dify's root node).
 */
export function initialState(graph: Graph, pool: PoolData, rootId: string = graph.startId): RunState {
  if (!graph.entryIds.includes(rootId)) throw new Error(`node ${rootId} is not an entry point of the graph (entries: ${graph.entryIds.join(', ')})`);
  const nodes: Record<string, NodeState> = {};
  for (const id of graph.nodes.keys()) nodes[id] = 'unknown';
  const edges: Record<string, EdgeState> = {};
  for (const e of graph.edges) edges[e.id] = 'unknown';
  const state: RunState = {
    v: RUN_STATE_VERSION,
    pool,
    nodes,
    edges,
    pending: [{ node: rootId, from: null }],
    paused: [],
    steps: 0,
    tokens: 0,
    exceptions: 0,
    index: 0,
    outputs: {},
    answer: '',
    elapsedMs: 0,
  };
  const touched: string[] = [];
  for (const id of graph.entryIds) {
    if (id === rootId) continue;
    nodes[id] = 'skipped';
    for (const e of graph.outgoing.get(id) ?? []) {
      edges[e.id] = 'skipped';
      touched.push(e.target);
    }
  }
  // nothing is taken yet, so this only spreads skips (a node with a pending edge from the root waits)
  settle(graph, state, touched, []);
  return state;
}

/** Checks a stored snapshot's version; throws for one this code cannot read. */
export function readState(raw: unknown): RunState {
  const s = raw as RunState;
  if (!s || s.v !== RUN_STATE_VERSION) throw new Error(`run snapshot version ${String(s?.v)} is not supported (expected ${RUN_STATE_VERSION})`);
  return s;
}

/**
 * Marks a node finished and its outgoing edges taken or skipped (`take` picks the edges to take;
 * default all), propagates skips downstream, and returns the nodes that became ready.
 */
export function completeNode(
  graph: Graph,
  state: RunState,
  nodeId: string,
  take: (e: GraphEdge) => boolean = () => true,
): string[] {
  state.nodes[nodeId] = 'done';
  const ready: string[] = [];
  const touched: string[] = [];
  for (const e of graph.outgoing.get(nodeId) ?? []) {
    state.edges[e.id] = take(e) ? 'taken' : 'skipped';
    touched.push(e.target);
  }
  settle(graph, state, touched, ready);
  return ready;
}

/** Decides readiness of the targets whose incoming edges changed; skips spread downstream. */
function settle(graph: Graph, state: RunState, targets: string[], ready: string[]): void {
  const queue = [...new Set(targets)];
  while (queue.length) {
    const id = queue.shift()!;
    if (state.nodes[id] !== 'unknown') continue;
    const inc = graph.incoming.get(id) ?? [];
    if (inc.some((e) => state.edges[e.id] === 'unknown')) continue;
    if (inc.some((e) => state.edges[e.id] === 'taken')) {
      if (!ready.includes(id)) ready.push(id);
      continue;
    }
    state.nodes[id] = 'skipped';
    for (const e of graph.outgoing.get(id) ?? []) {
      state.edges[e.id] = 'skipped';
      queue.push(e.target);
    }
  }
}
