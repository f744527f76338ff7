import type { DslDocument } from './ports.js';
import { ENTRY_TYPES, NODE_TYPES, PIPELINE_TYPES, TRIGGER_TYPES, isNodeType, type CompileChecks, type Graph, type GraphEdge, type GraphNode } from './types.js';
import { NODE_HANDLERS } from './nodes/registry.js';
import { isObject } from './nodes/shared.js';

/** Why a DSL graph cannot run; the message names the node id and type. */
export class GraphError extends Error {
  override name = 'GraphError';
}

/** Canvas-only node kinds (notes) that carry no behaviour and are ignored. */
const CANVAS_ONLY = new Set(['custom-note']);

/** Container node types and the start node type their children begin with. */
const CONTAINERS: Readonly<Record<string, string>> = { loop: 'loop-start', iteration: 'iteration-start' };
/** Node types that only exist inside a container of the given type. */
const INSIDE_ONLY: Readonly<Record<string, string>> = { 'loop-start': 'loop', 'loop-end': 'loop', 'iteration-start': 'iteration' };

/**
 * Compiles a workflow / chatflow DSL graph; throws GraphError on anything the engine cannot run.
 * `checks` adds the import-time checks the engine cannot do itself (template syntax).
 */
export function compileGraph(doc: DslDocument, checks: CompileChecks = {}): Graph {
  const wf = doc.workflow;
  if (!wf) throw new GraphError('the app has no workflow graph');
  // a knowledge pipeline (`kind: rag_pipeline`) starts at one of its datasource nodes
  const pipeline = doc.kind === 'rag_pipeline';
  const all = new Map<string, GraphNode>();
  for (const raw of wf.graph.nodes) {
    if (typeof raw.type === 'string' && CANVAS_ONLY.has(raw.type)) continue;
    const type = raw.data.type;
    if (!isNodeType(type)) {
      throw new GraphError(
        `node ${raw.id} has type "${type}", which Dovetail does not support (supported: ${NODE_TYPES.join(', ')})`,
      );
    }
    const parentId = typeof raw.parentId === 'string' && raw.parentId ? raw.parentId : undefined;
    const title = typeof raw.data.title === 'string' ? raw.data.title : raw.id;
    const node: GraphNode = parentId ? { id: raw.id, type, title, data: raw.data, parentId } : { id: raw.id, type, title, data: raw.data };
    try {
      NODE_HANDLERS[type].validate?.(node, checks);
    } catch (err) {
      throw new GraphError(`node ${raw.id} (${type}): ${(err as Error).message}`);
    }
    all.set(raw.id, node);
  }
  for (const n of all.values()) {
    const parent = n.parentId === undefined ? undefined : all.get(n.parentId);
    if (n.parentId !== undefined && (!parent || !CONTAINERS[parent.type])) {
      throw new GraphError(`node ${n.id} (${n.type}) has parentId ${n.parentId}, which is not a loop or iteration node`);
    }
    const inside = INSIDE_ONLY[n.type];
    if (inside && parent?.type !== inside) throw new GraphError(`node ${n.id} (${n.type}) must be inside a ${inside} node`);
    if (parent && n.type === 'human-input') throw new GraphError(`node ${n.id} (human-input) cannot run inside a loop or iteration`);
    if (parent && ENTRY_TYPES.includes(n.type)) throw new GraphError(`node ${n.id} (${n.type}) cannot be inside a loop or iteration`);
    if (TRIGGER_TYPES.includes(n.type) && doc.app.mode !== 'workflow') {
      throw new GraphError(`node ${n.id} (${n.type}): trigger nodes start workflow apps only, and this app is ${doc.app.mode}`);
    }
    if (PIPELINE_TYPES.includes(n.type) && !pipeline) {
      throw new GraphError(`node ${n.id} (${n.type}) belongs to knowledge pipelines (kind: rag_pipeline); attach the pipeline to a dataset with \`dovetail dataset create --pipeline FILE\``);
    }
    if (pipeline && n.type === 'start') throw new GraphError(`node ${n.id} (start): a knowledge pipeline starts at its datasource nodes, not a start node`);
    if (parent && n.type === 'datasource') throw new GraphError(`node ${n.id} (datasource) cannot be inside a loop or iteration`);
    if ((ENTRY_TYPES.includes(n.type) || (pipeline && n.type === 'datasource')) && (wf.graph.edges ?? []).some((e) => e.target === n.id)) {
      throw new GraphError(`node ${n.id} (${n.type}) starts the run, so no edge may lead into it`);
    }
  }
  const scopeOf = (id: string) => all.get(id)?.parentId ?? '';
  const byScope = new Map<string, GraphNode[]>();
  for (const n of all.values()) {
    const list = byScope.get(n.parentId ?? '') ?? [];
    list.push(n);
    byScope.set(n.parentId ?? '', list);
  }
  const edgesByScope = new Map<string, GraphEdge[]>();
  wf.graph.edges.forEach((e, i) => {
    if (!all.has(e.source) || !all.has(e.target)) throw new GraphError(`edge ${e.id ?? i} connects a node that does not exist`);
    if (scopeOf(e.source) !== scopeOf(e.target)) throw new GraphError(`edge ${e.id ?? i} crosses the border of a loop or iteration node`);
    const edge: GraphEdge = {
      id: typeof e.id === 'string' && e.id ? e.id : `${e.source}-${e.sourceHandle ?? 'source'}-${e.target}-${i}`,
      source: e.source,
      target: e.target,
      handle: typeof e.sourceHandle === 'string' && e.sourceHandle ? e.sourceHandle : 'source',
    };
    const list = edgesByScope.get(scopeOf(e.source)) ?? [];
    list.push(edge);
    edgesByScope.set(scopeOf(e.source), list);
  });
  const environment = namedValues(wf.environment_variables);
  const secrets: Record<string, string> = {};
  for (const v of wf.environment_variables ?? []) if (v.value_type === 'secret' && typeof v.name === 'string' && typeof v.value === 'string' && v.value) secrets[v.name] = v.value;
  const conversationDefaults = namedValues(wf.conversation_variables);
  // one map for every level, so a container inside a container finds its own child graph
  const children = new Map<string, Graph>();
  for (const n of all.values()) {
    const startType = CONTAINERS[n.type];
    if (!startType) continue;
    const members = byScope.get(n.id) ?? [];
    const starts = members.filter((m) => m.type === startType);
    if (starts.length !== 1) throw new GraphError(`node ${n.id} (${n.type}) must contain exactly one ${startType} node, found ${starts.length}`);
    const declared = n.data.start_node_id;
    if (typeof declared === 'string' && declared && declared !== starts[0]!.id) {
      throw new GraphError(`node ${n.id} (${n.type}): start_node_id ${declared} is not its ${startType} node`);
    }
    children.set(n.id, scopeGraph(members, edgesByScope.get(n.id) ?? [], [starts[0]!.id], { environment, secrets }, conversationDefaults, children));
  }
  const top = byScope.get('') ?? [];
  if (pipeline) {
    const sources = top.filter((n) => n.type === 'datasource');
    if (sources.length === 0) throw new GraphError('a knowledge pipeline needs at least one datasource node');
    if (!top.some((n) => n.type === 'knowledge-index')) throw new GraphError('a knowledge pipeline needs a knowledge-index node');
    return scopeGraph(top, edgesByScope.get('') ?? [], sources.map((n) => n.id), { environment, secrets }, conversationDefaults, children);
  }
  const starts = top.filter((n) => n.type === 'start');
  const triggers = top.filter((n) => TRIGGER_TYPES.includes(n.type));
  if (starts.length > 1 || (starts.length === 0 && triggers.length === 0)) {
    throw new GraphError(
      doc.app.mode === 'workflow'
        ? `the graph must have one start node or trigger nodes (trigger-webhook, trigger-schedule, trigger-plugin), found ${starts.length} start nodes`
        : `the graph must have exactly one start node, found ${starts.length}`,
    );
  }
  if (doc.app.mode === 'workflow' && [...all.values()].some((n) => n.type === 'answer')) {
    const a = [...all.values()].find((n) => n.type === 'answer')!;
    throw new GraphError(`node ${a.id} (answer) is only allowed in chatflow (advanced-chat) apps`);
  }
  // the API starts runs at the start node; a graph of triggers only at its first trigger, as Dify's
  // graph picks its root when none is named
  const entries = [...starts, ...triggers].map((n) => n.id);
  const graph = scopeGraph(top, edgesByScope.get('') ?? [], entries, { environment, secrets }, conversationDefaults, children);
  const rr = wf.features?.retriever_resource;
  const showRetrieveSource = isObject(rr) && rr.enabled === true;
  return showRetrieveSource ? { ...graph, showRetrieveSource } : graph;
}

/**
 * One level of the graph: its nodes, edges and entries (the first is where the API's runs start);
 * every node must be reachable from an entry.
 */
function scopeGraph(
  members: readonly GraphNode[],
  edgeList: readonly GraphEdge[],
  entryIds: readonly string[],
  env: { environment: Record<string, unknown>; secrets: Record<string, string> },
  conversationDefaults: Record<string, unknown>,
  children: ReadonlyMap<string, Graph>,
): Graph {
  const nodes = new Map(members.map((n) => [n.id, n] as const));
  const outgoing = new Map<string, GraphEdge[]>();
  const incoming = new Map<string, GraphEdge[]>();
  for (const id of nodes.keys()) {
    outgoing.set(id, []);
    incoming.set(id, []);
  }
  for (const edge of edgeList) {
    outgoing.get(edge.source)!.push(edge);
    incoming.get(edge.target)!.push(edge);
  }
  const seen = new Set(entryIds);
  const queue = [...entryIds];
  while (queue.length) for (const e of outgoing.get(queue.shift()!)!) if (!seen.has(e.target)) {
      seen.add(e.target);
      queue.push(e.target);
    }
  for (const n of nodes.values()) {
    if (!seen.has(n.id)) {
      const where = n.parentId ? ` of ${n.parentId}` : '';
      throw new GraphError(`node ${n.id} (${n.type}) is not reachable from the start node${where}`);
    }
  }
  return { nodes, edges: [...edgeList], outgoing, incoming, startId: entryIds[0]!, entryIds, environment: env.environment, secrets: env.secrets, conversationDefaults, children };
}

function namedValues(list: readonly Record<string, unknown>[] | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const v of list ?? []) if (typeof v.name === 'string') out[v.name] = v.value ?? null;
  return out;
}

/** The import-time validator the app service runs on every workflow / chatflow DSL. */
export function validateGraph(doc: DslDocument, checks: CompileChecks = {}): void {
  if (doc.app.mode !== 'workflow' && doc.app.mode !== 'advanced-chat') return;
  compileGraph(doc, checks);
}
