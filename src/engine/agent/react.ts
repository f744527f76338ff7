import type { ChatMessage } from '../ports.js';
import { callModel } from '../nodes/model-call.js';
import { parseArguments } from './agent-toolbox.js';
import type { AgentRunInput, AgentRunResult } from './agent-run.js';
import { parseReact } from './react-parse.js';
import { reactSystemPrompt, scratchpadText, type ScratchpadUnit } from './react-prompt.js';

/**
 * A ReAct `action_input`: a mapping as is; a string that is JSON as parsed; any other string goes
 * to the tool's first parameter (as Dify's tool engine does).
 */
function argumentsOf(input: unknown, schema: Readonly<Record<string, unknown>> | undefined): Record<string, unknown> {
  if (typeof input !== 'string') return parseArguments(input);
  const parsed = parseArguments(input);
  if (Object.keys(parsed).length > 0 || input.trim().startsWith('{')) return parsed;
  const first = Object.keys((schema?.properties as Record<string, unknown> | undefined) ?? {})[0];
  return first ? { [first]: input } : {};
}

/**
 * Dify's `ReAct` strategy for models without native tool calls: the tools are described in the
 * system prompt, the model answers Thought / Action (a JSON blob), the tool's answer goes back as
 * the Observation in the scratchpad, until the action is "Final Answer". Generation stops at
 * "Observation" as in Dify. The last allowed round lists no tools; if it still names one, its
 * text is the answer.
 */
export async function runReact(a: AgentRunInput): Promise<AgentRunResult> {
  const { ctx, log } = a;
  const units: ScratchpadUnit[] = [];
  const files: unknown[] = [];
  let promptTokens = 0;
  let completionTokens = 0;
  const params = { ...a.model.params, stop: [...(Array.isArray(a.model.params.stop) ? a.model.params.stop : []), 'Observation'] };
  for (let round = 1; round <= a.maxIterations; round++) {
    const last = round === a.maxIterations;
    a.observer?.roundStarted?.(round);
    const roundLog = log.start(`ROUND ${round}`, null);
    const messages: ChatMessage[] = [
      { role: 'system', content: reactSystemPrompt(a.instruction, last ? [] : a.toolbox.definitions) },
      ...a.history,
      { role: 'user', content: a.query },
    ];
    if (units.length > 0) messages.push({ role: 'assistant', content: scratchpadText(units) }, { role: 'user', content: 'continue' });
    const thoughtLog = log.start(`${a.model.name} Thought`, roundLog, {}, { provider: a.model.provider });
    const res = await callModel(ctx, { ...a.model, params }, messages);
    promptTokens += res.promptTokens;
    completionTokens += res.completionTokens;
    const step = parseReact(res.text);
    log.finish(thoughtLog, { output: res.text, thought: step.thought, ...(step.type === 'action' ? { action_name: step.action, action_input: step.input } : {}) }, undefined, {
      total_tokens: res.promptTokens + res.completionTokens,
      total_price: 0,
      currency: 'USD',
    });
    if (step.type === 'final' || last) {
      a.observer?.thought?.(round, step.thought || res.text.trim(), []);
      const answer = step.type === 'final' ? step.answer : res.text.trim();
      a.onText(answer);
      log.finish(roundLog, { output: { llm_response: res.text, final_answer: answer } });
      return { text: answer, files, promptTokens, completionTokens };
    }
    const args = argumentsOf(step.input, a.toolbox.definitions.find((d) => d.name === step.action)?.parameters);
    a.observer?.thought?.(round, step.thought, [{ name: step.action, args }]);
    const callLog = log.start(`CALL ${step.action}`, roundLog, {}, { provider: a.toolbox.providerOf(step.action) });
    const r = await a.toolbox.call(step.action, args, ctx.signal);
    log.finish(callLog, { output: { tool_call_name: step.action, tool_call_args: args, tool_response: r.observation } }, r.error);
    files.push(...r.files);
    a.observer?.observed?.(round, [{ name: step.action, args, observation: r.observation, ...(r.error !== undefined ? { error: r.error } : {}), files: r.files }]);
    units.push({ thought: step.thought, actionText: step.actionText, observation: r.observation });
    log.finish(roundLog, { output: { llm_response: res.text, tool_responses: [{ tool_call_name: step.action, tool_response: r.observation }] } });
  }
  return { text: '', files, promptTokens, completionTokens };
}
