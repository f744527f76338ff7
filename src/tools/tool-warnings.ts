import type { ImportWarning } from '../lib/import-warning.js';
import type { ToolRef, ToolRuntime } from './tool.js';

function refOf(d: Readonly<Record<string, unknown>>): ToolRef {
  return {
    providerType: typeof d.provider_type === 'string' ? d.provider_type : 'builtin',
    providerId: typeof d.provider_id === 'string' ? d.provider_id : typeof d.provider_name === 'string' ? d.provider_name : '',
    ...(typeof d.provider_name === 'string' ? { providerName: d.provider_name } : {}),
    toolName: typeof d.tool_name === 'string' ? d.tool_name : '',
  };
}

/** Agent strategies this server runs (`agent_strategy_provider_name` / `agent_strategy_name`). */
export const BUILTIN_AGENT_STRATEGIES: Readonly<Record<string, readonly string[]>> = {
  'langgenius/agent/agent': ['function_calling', 'ReAct'],
};

/**
 * Import warnings for a `tool` or `agent` node: each tool it names that cannot run here (an
 * unknown provider or plugin, a provider without its credentials) and, for agents, an unknown
 * strategy. The node still imports; running it fails with the same message.
 */
export async function toolNodeWarnings(node: { readonly id: string; readonly type: string; readonly data: Readonly<Record<string, unknown>> }, tools: ToolRuntime): Promise<ImportWarning[]> {
  const out: ImportWarning[] = [];
  const check = async (ref: ToolRef) => {
    const r = await tools.check(ref);
    if ('error' in r) out.push({ node_id: node.id, node_type: node.type, part: `tool ${ref.providerId}/${ref.toolName}`, setting: r.setting ?? null, message: r.error });
  };
  if (node.type === 'tool') await check(refOf(node.data));
  if (node.type === 'agent') {
    const provider = String(node.data.agent_strategy_provider_name ?? '');
    const strategy = String(node.data.agent_strategy_name ?? '');
    if (!BUILTIN_AGENT_STRATEGIES[provider]?.includes(strategy)) {
      out.push({
        node_id: node.id,
        node_type: node.type,
        part: `agent strategy ${provider}/${strategy}`,
        setting: null,
        message: `agent strategy "${strategy}" of "${provider}" is not available here (available: langgenius/agent/agent function_calling, ReAct)`,
      });
    }
    const params = node.data.agent_parameters as Record<string, { value?: unknown }> | undefined;
    const list = params?.tools?.value;
    if (Array.isArray(list)) {
      for (const t of list) {
        if (typeof t !== 'object' || t === null || (t as { enabled?: unknown }).enabled === false) continue;
        const o = t as Record<string, unknown>;
        await check({ providerType: typeof o.type === 'string' ? o.type : 'builtin', providerId: String(o.provider_name ?? ''), toolName: String(o.tool_name ?? '') });
      }
    }
  }
  return out;
}
