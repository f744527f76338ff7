import type { ToolDefinition } from '../ports.js';
import type { Tool, ToolRef } from '../ports.js';
import { isObject, selectorOf } from '../nodes/shared.js';
import type { ModelSpec } from '../nodes/model-call.js';
import type { GraphNode, NodeContext } from '../types.js';

/** The strategies of Dify's built-in agent plugin (`langgenius/agent/agent`). */
export const AGENT_STRATEGIES = ['function_calling', 'ReAct'] as const;
export type AgentStrategy = (typeof AGENT_STRATEGIES)[number];
export const AGENT_STRATEGY_PROVIDER = 'langgenius/agent/agent';

/** Dify's default `maximum_iterations` of the agent strategies. */
export const DEFAULT_MAX_ITERATIONS = 3;

/** One tool as an agent node lists it (`agent_parameters.tools.value[]`). */
export interface AgentToolSpec {
  readonly ref: ToolRef;
  /** Extra description the node gives the model (`extra.description`), else the tool's own. */
  readonly description: string;
  /** Values fixed on the node: `settings` and `parameters` with `auto: 0`. */
  readonly fixed: Readonly<Record<string, unknown>>;
  /** Parameters the node leaves to the model (`auto: 1`); undefined = every `llm` parameter. */
  readonly auto: readonly string[] | undefined;
}

/** The value of `agent_parameters.NAME` (`{type, value}`; `variable` reads the pool, strings are templates). */
export function agentParam(ctx: NodeContext | undefined, node: GraphNode, name: string): unknown {
  const params = node.data.agent_parameters;
  if (!isObject(params)) return undefined;
  const p = params[name];
  if (!isObject(p) || !('value' in p)) return p;
  if (!ctx) return p.value;
  if (p.type === 'variable') {
    const sel = selectorOf(p.value);
    return sel ? ctx.pool.get(sel) : undefined;
  }
  return typeof p.value === 'string' ? ctx.pool.render(p.value) : p.value;
}

/** The node's model (`agent_parameters.model.value`: provider, model or name, mode, completion_params). */
export function agentModel(node: GraphNode): ModelSpec {
  const m = agentParam(undefined, node, 'model');
  if (!isObject(m)) throw new Error('agent_parameters.model must be a mapping with provider and model');
  const name = typeof m.model === 'string' && m.model ? m.model : m.name;
  if (typeof m.provider !== 'string' || typeof name !== 'string') throw new Error('agent_parameters.model.provider and agent_parameters.model.model must be strings');
  return { provider: m.provider, name, mode: 'chat', params: isObject(m.completion_params) ? m.completion_params : {} };
}

/** The enabled tools of the node, in order. */
export function agentTools(node: GraphNode): AgentToolSpec[] {
  const list = agentParam(undefined, node, 'tools');
  if (list === undefined || list === null) return [];
  if (!Array.isArray(list)) throw new Error('agent_parameters.tools.value must be a list');
  const out: AgentToolSpec[] = [];
  list.forEach((t, i) => {
    if (!isObject(t)) throw new Error(`agent_parameters.tools.value[${i}] must be a mapping`);
    if (t.enabled === false) return;
    if (typeof t.tool_name !== 'string' || t.tool_name === '') throw new Error(`agent_parameters.tools.value[${i}].tool_name must be a non-empty string`);
    const fixed: Record<string, unknown> = {};
    let auto: string[] | undefined;
    if (isObject(t.settings)) for (const [k, v] of Object.entries(t.settings)) fixed[k] = isObject(v) && 'value' in v ? v.value : v;
    if (isObject(t.parameters)) {
      auto = [];
      for (const [k, v] of Object.entries(t.parameters)) {
        if (isObject(v) && v.auto === 0 && v.value !== undefined && v.value !== null) fixed[k] = isObject(v.value) && 'value' in v.value ? v.value.value : v.value;
        else auto.push(k);
      }
    }
    const extra = isObject(t.extra) && typeof t.extra.description === 'string' ? t.extra.description : '';
    out.push({
      ref: { providerType: typeof t.type === 'string' ? t.type : 'builtin', providerId: String(t.provider_name ?? t.provider_id ?? ''), toolName: t.tool_name },
      description: extra,
      fixed,
      auto,
    });
  });
  return out;
}

const JSON_TYPES: Readonly<Record<string, string>> = { string: 'string', 'secret-input': 'string', select: 'string', number: 'number', boolean: 'boolean', array: 'array', object: 'object' };

/** The function a model sees for a tool: its `llm` parameters (minus fixed ones) as a JSON Schema. */
export function toolDefinition(spec: AgentToolSpec, tool: Tool): ToolDefinition {
  if (tool.inputSchema) {
    // the tool's own schema (MCP), minus the arguments the node fixes
    const props = isObject(tool.inputSchema.properties) ? tool.inputSchema.properties : {};
    const kept = Object.fromEntries(Object.entries(props).filter(([k]) => !(k in spec.fixed)));
    const req = Array.isArray(tool.inputSchema.required) ? tool.inputSchema.required.filter((k) => typeof k === 'string' && !(k in spec.fixed)) : [];
    return { name: tool.name, description: spec.description || tool.description, parameters: { ...tool.inputSchema, type: 'object', properties: kept, required: req } };
  }
  const properties: Record<string, Record<string, unknown>> = {};
  const required: string[] = [];
  for (const p of tool.parameters) {
    if (p.name in spec.fixed) continue;
    const offered = spec.auto ? spec.auto.includes(p.name) || p.form === 'llm' : p.form === 'llm';
    if (!offered || p.type === 'file' || p.type === 'files') continue;
    properties[p.name] = { type: JSON_TYPES[p.type] ?? 'string', description: p.llmDescription ?? '', ...(p.type === 'select' && p.options?.length ? { enum: [...p.options] } : {}) };
    if (p.required) required.push(p.name);
  }
  return { name: tool.name, description: spec.description || tool.description, parameters: { type: 'object', properties, required } };
}
