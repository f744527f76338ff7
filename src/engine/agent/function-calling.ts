import type { ChatMessage, ToolCall } from '../../llm/model-provider.js';
import { callModel, type ModelSpec } from '../nodes/model-call.js';
import type { NodeContext } from '../types.js';
import type { AgentLog } from './agent-log.js';
import { parseArguments, type AgentToolbox } from './agent-toolbox.js';

/** What one agent run needs, whatever the strategy. */
export interface AgentRunInput {
  readonly ctx: NodeContext;
  readonly model: ModelSpec;
  readonly toolbox: AgentToolbox;
  readonly log: AgentLog;
  readonly instruction: string;
  readonly history: readonly ChatMessage[];
  readonly query: string;
  readonly maxIterations: number;
  /** Streams answer text as it arrives (the node's `text`). */
  readonly onText: (text: string) => void;
}

export interface AgentRunResult {
  readonly text: string;
  readonly files: unknown[];
  readonly promptTokens: number;
  readonly completionTokens: number;
}

/**
 * Dify's `function_calling` strategy: each round the model gets the tools as functions; the calls
 * it asks for run concurrently and their answers go back as tool messages; a round without calls
 * ends the run. The last allowed round offers no tools, so the model has to answer.
 */
export async function runFunctionCalling(a: AgentRunInput): Promise<AgentRunResult> {
  const { ctx, log } = a;
  const messages: ChatMessage[] = [...(a.instruction ? [{ role: 'system' as const, content: a.instruction }] : []), ...a.history, { role: 'user', content: a.query }];
  let text = '';
  const files: unknown[] = [];
  let promptTokens = 0;
  let completionTokens = 0;
  for (let round = 1; round <= a.maxIterations; round++) {
    const roundLog = log.start(`ROUND ${round}`, null);
    const last = round === a.maxIterations;
    const thought = log.start(`${a.model.name} Thought`, roundLog, {}, { provider: a.model.provider });
    const res = await callModel(ctx, a.model, messages, (t) => {
      text += t;
      a.onText(t);
    }, last ? [] : a.toolbox.definitions);
    promptTokens += res.promptTokens;
    completionTokens += res.completionTokens;
    const calls: readonly ToolCall[] = last ? [] : res.toolCalls;
    log.finish(thought, { output: res.text, tool_name: calls.map((c) => c.name).join(';'), tool_input: calls.map((c) => ({ name: c.name, args: parseArguments(c.arguments) })) }, undefined, {
      total_tokens: res.promptTokens + res.completionTokens,
      total_price: 0,
      currency: 'USD',
    });
    if (calls.length === 0) {
      log.finish(roundLog, { output: { llm_response: res.text, tool_responses: [] } });
      break;
    }
    messages.push({ role: 'assistant', content: res.text, toolCalls: calls });
    // every call of the round at once; their answers go back in the order the model asked
    const results = await Promise.all(
      calls.map(async (c) => {
        const args = parseArguments(c.arguments);
        const entry = log.start(`CALL ${c.name}`, roundLog, {}, { provider: a.toolbox.providerOf(c.name) });
        const r = await a.toolbox.call(c.name, args, ctx.signal);
        log.finish(entry, { output: { tool_call_id: c.id, tool_call_name: c.name, tool_call_args: args, tool_response: r.observation } }, r.error);
        return { call: c, result: r };
      }),
    );
    for (const { call, result } of results) {
      messages.push({ role: 'tool', toolCallId: call.id, content: result.observation });
      files.push(...result.files);
    }
    log.finish(roundLog, { output: { llm_response: res.text, tool_responses: results.map(({ call, result }) => ({ tool_call_id: call.id, tool_call_name: call.name, tool_response: result.observation })) } });
  }
  return { text, files, promptTokens, completionTokens };
}
