import type { DslDocument } from '../apps/dsl.js';
import { NODE_TYPES, isNodeType, type Graph, type GraphEdge, type GraphNode } from './types.js';
import { NODE_HANDLERS } from './nodes/registry.js';

/** Why a DSL graph cannot run; the message names the node id and type. */
export class GraphError extends Error {
  override name = 'GraphError';
}

/** Canvas-only node kinds (notes) that carry no behaviour and are ignored. */
const CANVAS_ONLY = new Set(['custom-note']);

/** Compiles a workflow / chatflow DSL graph; throws GraphError on anything the engine cannot run. */
export function compileGraph(doc: DslDocument): Graph {
  const wf = doc.workflow;
  if (!wf) throw new GraphError('the app has no workflow graph');
  const nodes = new Map<string, GraphNode>();
  for (const raw of wf.graph.nodes) {
    if (typeof raw.type === 'string' && CANVAS_ONLY.has(raw.type)) continue;
    const type = raw.data.type;
    if (!isNodeType(type)) {
      throw new GraphError(
        `node ${raw.id} has type "${type}", which Dovetail does not support (supported: ${NODE_TYPES.join(', ')})`,
      );
    }
    const node: GraphNode = { id: raw.id, type, title: typeof raw.data.title === 'string' ? raw.data.title : raw.id, data: raw.data };
    try {
      NODE_HANDLERS[type].validate?.(node);
    } catch (err) {
      throw new GraphError(`node ${raw.id} (${type}): ${(err as Error).message}`);
    }
    nodes.set(raw.id, node);
  }
  const edges: GraphEdge[] = [];
  const outgoing = new Map<string, GraphEdge[]>();
  const incoming = new Map<string, GraphEdge[]>();
  for (const id of nodes.keys()) {
    outgoing.set(id, []);
    incoming.set(id, []);
  }
  wf.graph.edges.forEach((e, i) => {
    if (!nodes.has(e.source) || !nodes.has(e.target)) throw new GraphError(`edge ${e.id ?? i} connects a node that does not exist`);
    const edge: GraphEdge = {
      id: typeof e.id === 'string' && e.id ? e.id : `${e.source}-${e.sourceHandle ?? 'source'}-${e.target}-${i}`,
      source: e.source,
      target: e.target,
      handle: typeof e.sourceHandle === 'string' && e.sourceHandle ? e.sourceHandle : 'source',
    };
    edges.push(edge);
    outgoing.get(e.source)!.push(edge);
    incoming.get(e.target)!.push(edge);
  });
  const starts = [...nodes.values()].filter((n) => n.type === 'start');
  if (starts.length !== 1) throw new GraphError(`the graph must have exactly one start node, found ${starts.length}`);
  const startId = starts[0]!.id;
  // every node must be reachable from the start node
  const seen = new Set([startId]);
  const queue = [startId];
  while (queue.length) for (const e of outgoing.get(queue.shift()!)!) if (!seen.has(e.target)) (seen.add(e.target), queue.push(e.target));
  for (const n of nodes.values()) {
    if (!seen.has(n.id)) throw new GraphError(`node ${n.id} (${n.type}) is not reachable from the start node`);
  }
  if (doc.app.mode === 'workflow' && [...nodes.values()].some((n) => n.type === 'answer')) {
    const a = [...nodes.values()].find((n) => n.type === 'answer')!;
    throw new GraphError(`node ${a.id} (answer) is only allowed in chatflow (advanced-chat) apps`);
  }
  return {
    nodes,
    edges,
    outgoing,
    incoming,
    startId,
    environment: namedValues(wf.environment_variables),
    conversationDefaults: namedValues(wf.conversation_variables),
  };
}

function namedValues(list: readonly Record<string, unknown>[] | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const v of list ?? []) if (typeof v.name === 'string') out[v.name] = v.value ?? null;
  return out;
}

/** The import-time validator the app service runs on every workflow / chatflow DSL. */
export function validateGraph(doc: DslDocument): void {
  if (doc.app.mode !== 'workflow' && doc.app.mode !== 'advanced-chat') return;
  compileGraph(doc);
}
