import { DslError } from './errors.js';
import { isObject } from '../infra/objects.js';

/**
 * The newest DSL `version` Dovetail knows (Dify 1.16's `CURRENT_DSL_VERSION`). A newer file
 * imports with a warning (Dify asks the user to confirm).
 */
export const NEWEST_KNOWN_DSL_VERSION = '0.7.0';

/** Dify's version of a file without `version`. */
export const DEFAULT_DSL_VERSION = '0.1.0';

/** Container node types and the start node type Dify's editor gives each since 0.1.x's containers. */
const CONTAINER_STARTS: Readonly<Record<string, string>> = { iteration: 'iteration-start', loop: 'loop-start' };

/** `major.minor.patch` of a version string (`0.3`, `1` count the missing parts as 0); undefined when it is not one. */
export function parseDslVersion(v: string): [number, number, number] | undefined {
  const m = /^v?(\d+)(?:\.(\d+))?(?:\.(\d+))?$/.exec(v.trim());
  return m ? [Number(m[1]), Number(m[2] ?? 0), Number(m[3] ?? 0)] : undefined;
}

/** Whether version `a` is newer than `b` (both parseable). */
export function isNewerDslVersion(a: string, b: string): boolean {
  const x = parseDslVersion(a)!;
  const y = parseDslVersion(b)!;
  for (let i = 0; i < 3; i++) if (x[i] !== y[i]) return x[i]! > y[i]!;
  return false;
}

/**
 * The DSL version of a document as Dify's importer reads it: a missing `version` is `0.1.0`; a
 * version that is not a string, or not a version, is refused (as Dify refuses it), naming the
 * field. The document itself is kept as it came (its export writes the version it was imported with).
 */
export function dslVersionOf(doc: Readonly<Record<string, unknown>>): string {
  const v = doc.version;
  if (v === undefined || v === null || v === '') return DEFAULT_DSL_VERSION;
  if (typeof v !== 'string') throw new DslError(`version must be a string such as "0.5.0", got ${typeof v} ${JSON.stringify(v)} (quote it in the YAML)`);
  if (!parseDslVersion(v)) throw new DslError(`version must be a version such as "0.5.0", got "${v}"`);
  return v;
}

type RawNode = Record<string, unknown> & { id: string; data: Record<string, unknown> };
type RawEdge = Record<string, unknown> & { source: string; target: string };

/**
 * Older graphs upgraded the way Dify's editor upgrades them when it opens one
 * (`preprocessNodesAndEdges`): a child that names its container only in `data.iteration_id` /
 * `data.loop_id` gets the `parentId`, and a container without its start node (a DSL from before
 * 0.1.x's `iteration-start`, whose `start_node_id` is its first child) gets one, `{id}start`, with
 * an edge to that first child, and `start_node_id` names it. Graphs that have their start nodes are
 * returned as they are. `nodes` and `edges` are structurally valid (checked by the caller).
 */
export function upgradeGraph(nodes: readonly RawNode[], edges: readonly RawEdge[]): { nodes: RawNode[]; edges: RawEdge[] } {
  const types = new Map(nodes.map((n) => [n.id, n.data.type] as const));
  let out = nodes.map((n) => {
    if (typeof n.parentId === 'string' && n.parentId) return n;
    const owner = [n.data.iteration_id, n.data.loop_id].find((p): p is string => typeof p === 'string' && p !== '' && CONTAINER_STARTS[String(types.get(p))] !== undefined);
    return owner && owner !== n.id ? { ...n, parentId: owner } : n;
  });
  const added: RawNode[] = [];
  const newEdges: RawEdge[] = [];
  const ids = new Set(out.map((n) => n.id));
  out = out.map((container) => {
    const startType = CONTAINER_STARTS[String(container.data.type)];
    if (!startType) return container;
    const children = out.filter((n) => n.parentId === container.id);
    if (children.some((c) => c.data.type === startType)) return container;
    const inside = new Set(children.map((c) => c.id));
    const declared = container.data.start_node_id;
    const first =
      children.find((c) => c.id === declared) ??
      children.find((c) => c.data.isIterationStart === true || c.data.isLoopStart === true) ??
      onlyEntry(children, edges.filter((e) => inside.has(e.source) && inside.has(e.target)));
    let id = `${container.id}start`;
    for (let i = 1; ids.has(id); i++) id = `${container.id}start${i}`;
    ids.add(id);
    const kind = container.data.type === 'loop' ? 'Loop' : 'Iteration';
    added.push({
      id,
      type: `custom-${startType}`,
      parentId: container.id,
      data: { type: startType, title: '', desc: '', [`isIn${kind}`]: true, ...(kind === 'Loop' ? { loop_id: container.id } : { iteration_id: container.id }) },
    });
    if (first) {
      newEdges.push({
        id: `${id}-source-${first.id}-target`,
        type: 'custom',
        source: id,
        sourceHandle: 'source',
        target: first.id,
        targetHandle: 'target',
        data: { sourceType: startType, targetType: first.data.type, [`isIn${kind}`]: true, ...(kind === 'Loop' ? { loop_id: container.id } : { iteration_id: container.id }) },
      });
    }
    return { ...container, data: { ...container.data, start_node_id: id } };
  });
  if (added.length === 0 && out.every((n, i) => n === nodes[i])) return { nodes: [...nodes], edges: [...edges] };
  return { nodes: [...out, ...added], edges: [...edges, ...newEdges] };
}

/** The one child no edge inside the container leads to, if exactly one. */
function onlyEntry(children: readonly RawNode[], inner: readonly RawEdge[]): RawNode | undefined {
  const targets = new Set(inner.map((e) => e.target));
  const entries = children.filter((c) => !targets.has(c.id));
  return entries.length === 1 ? entries[0] : undefined;
}

/** Whether `v` is a node as `upgradeGraph` takes it. */
export function isRawNode(v: unknown): v is RawNode {
  return isObject(v) && typeof v.id === 'string' && isObject(v.data);
}
