import type { ChatMessage } from '../ports.js';
import { AgentLog } from '../agent/agent-log.js';
import { AGENT_STRATEGIES, AGENT_STRATEGY_PROVIDER, DEFAULT_MAX_ITERATIONS, agentModel, agentParam, agentTools, type AgentStrategy } from '../agent/agent-params.js';
import { AgentToolbox } from '../agent/agent-toolbox.js';
import { runFunctionCalling } from '../agent/function-calling.js';
import { runReact } from '../agent/react.js';
import { NodeFailure, type GraphNode, type NodeContext, type NodeHandler } from '../types.js';
import { providerOf } from './model-call.js';
import { pricedUsage } from '../../lib/usage.js';
import { isObject } from './shared.js';

/** The strategy the node names, or why it cannot run here (naming it and what is available). */
function strategyOf(node: GraphNode): AgentStrategy | { error: string } {
  const provider = String(node.data.agent_strategy_provider_name ?? '');
  const name = String(node.data.agent_strategy_name ?? '');
  if (provider === AGENT_STRATEGY_PROVIDER && (AGENT_STRATEGIES as readonly string[]).includes(name)) return name as AgentStrategy;
  return { error: `agent strategy "${name}" of "${provider}" is not available on this server (available: ${AGENT_STRATEGY_PROVIDER} ${AGENT_STRATEGIES.join(', ')}); choose one of them in the node` };
}

function maxIterations(ctx: NodeContext): number {
  const raw = agentParam(ctx, ctx.node, 'maximum_iterations') ?? agentParam(ctx, ctx.node, 'max_iterations') ?? ctx.node.data.max_iteration;
  const n = raw === undefined || raw === null || raw === '' ? DEFAULT_MAX_ITERATIONS : Number(raw);
  const limit = ctx.ports.limits.agentMaxIterations;
  if (!Number.isInteger(n) || n < 1) throw new NodeFailure(`agent_parameters.maximum_iterations must be a whole number of at least 1, got ${JSON.stringify(raw)}`, 'AgentNodeError', false);
  if (n > limit) throw new NodeFailure(`agent_parameters.maximum_iterations is ${n}, over the limit of ${limit} (AGENT_MAX_ITERATIONS)`, 'AgentNodeError', false);
  return n;
}

async function history(ctx: NodeContext): Promise<ChatMessage[]> {
  const memory = ctx.node.data.memory;
  if (!isObject(memory) || ctx.kind !== 'advanced-chat' || !ctx.conversationId || !ctx.ports.memory) return [];
  const w = isObject(memory.window) ? memory.window : {};
  const size = w.enabled === true && typeof w.size === 'number' ? w.size : 50;
  return ctx.ports.memory.history(ctx.conversationId, size);
}

/**
 * Dify's agent node with the built-in strategies of `langgenius/agent/agent`: `function_calling`
 * (native tool calls) and `ReAct` (the ReAct prompt, for models without them). Parameters
 * `model`, `tools` (with per-tool settings), `instruction`, `query`, `maximum_iterations`,
 * `memory`; streams `agent_log` events; outputs `text`, `files`, `json` (`agent_logs`).
 * An unknown strategy imports and fails at run time naming it.
 */
export const agentNode: NodeHandler = {
  validate(node) {
    const params = node.data.agent_parameters;
    if (params !== undefined && !isObject(params)) throw new Error('agent_parameters must be a mapping');
    if (typeof strategyOf(node) === 'string') {
      agentModel(node);
      agentTools(node);
    }
  },
  async run(ctx) {
    const where = `agent node "${ctx.node.title}" (${ctx.node.id})`;
    const strategy = strategyOf(ctx.node);
    if (typeof strategy !== 'string') throw new NodeFailure(`${where}: ${strategy.error}`, 'AgentNodeError', false);
    const model = agentModel(ctx.node);
    providerOf(ctx, model);
    const toolbox = await AgentToolbox.create(ctx, agentTools(ctx.node), where);
    const instruction = String(agentParam(ctx, ctx.node, 'instruction') ?? '');
    const query = String(agentParam(ctx, ctx.node, 'query') ?? '');
    const log = new AgentLog(ctx.ports, (e) =>
      ctx.emit({
        type: 'event',
        event: 'agent_log',
        data: { node_execution_id: ctx.executionId ?? '', id: e.id, label: e.label, parent_id: e.parent_id, error: e.error, status: e.status, data: e.data, metadata: e.metadata, node_id: ctx.node.id },
      }),
    ctx.node.id);
    const input = {
      ctx,
      model,
      toolbox,
      log,
      instruction,
      history: await history(ctx),
      query,
      maxIterations: maxIterations(ctx),
      onText: (t: string) => ctx.emit({ type: 'text', text: t, selector: [ctx.node.id, 'text'] }),
    };
    const started = ctx.ports.now();
    const result = strategy === 'function_calling' ? await runFunctionCalling(input) : await runReact(input);
    // the sum of the model calls (tool time included in latency), priced from the model's row of the price table
    const usage = pricedUsage(result.promptTokens, result.completionTokens, ctx.ports.priceOf?.(model.name), (ctx.ports.now() - started) / 1000);
    return {
      type: 'succeeded',
      inputs: { model: { provider: model.provider, model: model.name }, instruction, query, tools: toolbox.definitions.map((d) => d.name), maximum_iterations: input.maxIterations },
      processData: { strategy },
      outputs: { text: result.text, files: result.files, json: { agent_logs: log.json() }, usage },
      usage,
    };
  },
};
