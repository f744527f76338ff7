import type { DslDocument } from './dsl.js';
import { DslError } from './errors.js';
import { isObject } from '../infra/objects.js';
import { parseIdPairs } from './dataset-map.js';

/** `app import --tool OLD=APP_ID` pairs: old provider id → app id. */
export function parseToolMap(pairs: readonly string[]): Map<string, string> {
  return parseIdPairs(pairs, '--tool', 'OLD_PROVIDER_ID=APP_ID');
}

/**
 * A copy of the DSL with workflow tool provider ids replaced per `map`: `provider_id` of tool
 * nodes with `provider_type: workflow`, and `provider_name` of an agent node's `workflow` tools.
 * Throws DslError when an old id names no workflow tool of the app (a typo would pass silently).
 */
export function mapWorkflowTools(doc: DslDocument, map: ReadonlyMap<string, string>): DslDocument {
  if (map.size === 0 || !doc.workflow) return doc;
  const used = new Set<string>();
  const swap = (id: unknown): string | undefined => {
    const next = typeof id === 'string' ? map.get(id) : undefined;
    if (next !== undefined) used.add(id as string);
    return next;
  };
  const nodes = doc.workflow.graph.nodes.map((n) => {
    const d = n.data;
    if (d.type === 'tool' && d.provider_type === 'workflow') {
      const next = swap(d.provider_id);
      return next === undefined ? n : { ...n, data: { ...d, provider_id: next } };
    }
    const params = d.type === 'agent' && isObject(d.agent_parameters) ? d.agent_parameters : undefined;
    const tools = params && isObject(params.tools) && Array.isArray(params.tools.value) ? params.tools : undefined;
    if (!params || !tools) return n;
    const value = (tools.value as unknown[]).map((t) => {
      if (!isObject(t) || t.type !== 'workflow') return t;
      const next = swap(t.provider_name);
      return next === undefined ? t : { ...t, provider_name: next };
    });
    return { ...n, data: { ...d, agent_parameters: { ...params, tools: { ...tools, value } } } };
  });
  const unused = [...map.keys()].filter((k) => !used.has(k));
  if (unused.length > 0) throw new DslError(`--tool: the app uses no workflow tool with provider id ${unused.join(', ')}`);
  return { ...doc, workflow: { ...doc.workflow, graph: { ...doc.workflow.graph, nodes } } };
}
