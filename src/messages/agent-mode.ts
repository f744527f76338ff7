import type { DslDocument } from '../apps/dsl.js';
import type { AgentStrategy, AgentToolSpec } from '../engine/agent/agent-params.js';
import { isObject } from '../infra/objects.js';
import { isDatasetToolEntry } from '../apps/app-datasets.js';
import type { ToolRef } from '../tools/tool.js';

/** Dify's default `agent_mode.max_iteration` of agent-chat apps. */
export const DEFAULT_AGENT_CHAT_MAX_ITERATION = 5;

/** An agent-chat app's `model_config.agent_mode`, as the agent loop runs it. */
export interface AgentMode {
  readonly strategy: AgentStrategy;
  readonly maxIteration: number;
  /** The enabled tools, in order, with `agent_mode.tools[i]` as where each comes from. */
  readonly tools: readonly (AgentToolSpec & { readonly where: string; readonly label: string })[];
}

/**
 * Dify's `agent_mode.strategy`: `react` (and the legacy `react_router`) is the ReAct prompt;
 * `function_call`, the legacy `router`, or none is native function calling.
 */
function strategyOf(raw: unknown): AgentStrategy {
  return raw === 'react' || raw === 'react_router' ? 'ReAct' : 'function_calling';
}

/** A tool entry's reference (`provider_type`, `provider_id`, `tool_name`). */
export function agentChatToolRef(t: Readonly<Record<string, unknown>>): ToolRef {
  return {
    providerType: typeof t.provider_type === 'string' && t.provider_type ? t.provider_type : 'builtin',
    providerId: typeof t.provider_id === 'string' && t.provider_id ? t.provider_id : typeof t.provider_name === 'string' ? t.provider_name : '',
    toolName: typeof t.tool_name === 'string' ? t.tool_name : '',
  };
}

/** The enabled entries of `agent_mode.tools` with their index (the DSL was checked at import). */
export function enabledAgentTools(app: { readonly dsl: DslDocument }): { readonly index: number; readonly entry: Readonly<Record<string, unknown>> }[] {
  const am = app.dsl.model_config?.agent_mode;
  const list = isObject(am) && Array.isArray(am.tools) ? am.tools : [];
  const out: { index: number; entry: Record<string, unknown> }[] = [];
  list.forEach((t: unknown, index: number) => {
    // a `{"dataset": …}` entry is a dataset (a dataset retriever tool, see app-datasets.ts), not a tool
    if (isObject(t) && t.enabled !== false && !isDatasetToolEntry(t)) out.push({ index, entry: t });
  });
  return out;
}

/**
 * The agent settings of an agent-chat app. `tool_parameters` with a value are fixed for the
 * tool (Dify's form parameters); empty ones are left to the model with the tool's `llm` ones.
 */
export function agentModeOf(app: { readonly dsl: DslDocument }): AgentMode {
  const am = app.dsl.model_config?.agent_mode;
  const o = isObject(am) ? am : {};
  const max = typeof o.max_iteration === 'number' ? o.max_iteration : DEFAULT_AGENT_CHAT_MAX_ITERATION;
  const tools = enabledAgentTools(app).map(({ index, entry }) => {
    const fixed: Record<string, unknown> = {};
    if (isObject(entry.tool_parameters)) for (const [k, v] of Object.entries(entry.tool_parameters)) if (v !== '' && v !== null && v !== undefined) fixed[k] = v;
    const ref = agentChatToolRef(entry);
    const label = typeof entry.tool_label === 'string' && entry.tool_label ? entry.tool_label : ref.toolName;
    return { ref, description: '', fixed, auto: undefined, where: `model_config.agent_mode.tools[${index}]`, label };
  });
  return { strategy: strategyOf(o.strategy), maxIteration: max, tools };
}
