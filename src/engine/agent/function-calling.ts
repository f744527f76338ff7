import type { ChatMessage, ToolCall } from '../ports.js';
import { callModel } from '../nodes/model-call.js';
import type { AgentRunInput, AgentRunResult } from './agent-run.js';
import { parseArguments } from './agent-toolbox.js';

export type { AgentRunInput, AgentRunResult } from './agent-run.js';

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
    a.observer?.roundStarted?.(round);
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
    a.observer?.thought?.(round, res.text, calls.map((c) => ({ name: c.name, args: parseArguments(c.arguments) })));
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
        return { call: c, args, result: r };
      }),
    );
    a.observer?.observed?.(round, results.map(({ call, args, result }) => ({ name: call.name, args, observation: result.observation, ...(result.error !== undefined ? { error: result.error } : {}), files: result.files })));
    for (const { call, result } of results) {
      messages.push({ role: 'tool', toolCallId: call.id, content: result.observation });
      files.push(...result.files);
    }
    log.finish(roundLog, { output: { llm_response: res.text, tool_responses: results.map(({ call, result }) => ({ tool_call_id: call.id, tool_call_name: call.name, tool_response: result.observation })) } });
  }
  return { text, files, promptTokens, completionTokens };
}
