import type { ModelPrice } from '../config.js';
import { AgentLog } from '../engine/agent/agent-log.js';
import { AgentToolbox } from '../engine/agent/agent-toolbox.js';
import type { AgentContext, AgentRunResult } from '../engine/agent/agent-run.js';
import { runFunctionCalling } from '../engine/agent/function-calling.js';
import { runReact } from '../engine/agent/react.js';
import type { ModelSpec } from '../engine/nodes/model-call.js';
import { NodeFailure } from '../engine/types.js';
import type { ChatMessage, ModelProviders } from '../llm/model-provider.js';
import type { ToolRuntime } from '../tools/tool.js';
import type { AgentMode } from './agent-mode.js';
import type { AgentThoughtRecorder } from './agent-thoughts.js';
import type { Exchange } from './chat-prompt.js';

/** What one answer of an agent-chat app needs. */
export interface AgentTurn {
  /** For messages: `agent-chat app "NAME"`. */
  readonly appName: string;
  readonly mode: AgentMode;
  readonly model: ModelSpec;
  /** `pre_prompt` with the inputs filled in. */
  readonly instruction: string;
  readonly history: readonly Exchange[];
  readonly query: string;
  readonly signal: AbortSignal;
  readonly recorder: AgentThoughtRecorder;
  readonly onText: (text: string) => void;
}

export interface AgentTurnDeps {
  readonly providers: ModelProviders;
  readonly tools: ToolRuntime | undefined;
  readonly priceOf: (model: string) => ModelPrice | undefined;
  /** `AGENT_MAX_ITERATIONS`. */
  readonly maxIterations: number;
  now(): number;
  newId(): string;
}

/**
 * Runs an agent-chat answer with the agent node's loop (src/engine/agent): the app's tools, its
 * strategy, up to `max_iteration` rounds. Throws a NodeFailure naming the setting when the app's
 * agent cannot run here (a tool, the iteration limit); a stop rethrows the abort.
 */
export async function runAgentTurn(d: AgentTurnDeps, t: AgentTurn): Promise<AgentRunResult> {
  const where = `agent-chat app "${t.appName}" (model_config.agent_mode.tools)`;
  if (t.mode.maxIteration > d.maxIterations) {
    throw new NodeFailure(`model_config.agent_mode.max_iteration is ${t.mode.maxIteration}, over the limit of ${d.maxIterations} (AGENT_MAX_ITERATIONS)`, 'AgentNodeError', false);
  }
  const ctx: AgentContext = {
    signal: t.signal,
    ports: {
      providers: d.providers,
      humanInput: undefined,
      memory: undefined,
      tools: d.tools,
      priceOf: d.priceOf,
      now: d.now,
      newId: d.newId,
      sleep: (ms, signal) =>
        new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, ms);
          signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
        }),
    },
  };
  const toolbox = await AgentToolbox.create(ctx, t.mode.tools, where);
  const history: ChatMessage[] = t.history.flatMap((h) => [
    { role: 'user' as const, content: h.query },
    { role: 'assistant' as const, content: h.answer },
  ]);
  const input = {
    ctx,
    model: t.model,
    toolbox,
    // the node's agent_log has no reader here: the recorder's thoughts are what agent-chat shows
    log: new AgentLog(ctx.ports),
    instruction: t.instruction,
    history,
    query: t.query,
    maxIterations: t.mode.maxIteration,
    onText: t.onText,
    observer: t.recorder,
  };
  return t.mode.strategy === 'function_calling' ? runFunctionCalling(input) : runReact(input);
}
