import type { ChatMessage, ToolCall, ToolDefinition } from '../ports.js';
import type { GraphNode, NodeContext, NodeHandler } from '../types.js';
import { toText } from '../variable-pool.js';
import { firstJsonObject } from './json-in-text.js';
import { memoryText, savedPrompts, visionParts, withFiles } from './llm-prompting.js';
import { callModel, modelSpecOf, providerOf, type ModelSpec } from './model-call.js';
import {
  CHAT_JSON_EXAMPLES,
  chatJsonSystemPrompt,
  chatJsonUserPrompt,
  completionJsonPrompt,
  FUNCTION_CALLING_EXAMPLES,
  FUNCTION_NAME,
  functionCallingSystemPrompt,
  functionCallingUserPrompt,
} from './parameter-extractor-prompts.js';
import {
  checkResult,
  defaultResult,
  ExtractionError,
  parameterJsonSchema,
  parametersForInputs,
  parametersOf,
  transformResult,
  type ParameterSpec,
} from './parameter-extractor-schema.js';
import { pyJsonDumps } from './python-json.js';
import { selectorOf } from './shared.js';

interface ExtractorSpec {
  readonly model: ModelSpec;
  readonly query: string[];
  readonly parameters: readonly ParameterSpec[];
  readonly mode: 'function_call' | 'prompt';
}

function specOf(node: GraphNode): ExtractorSpec {
  const d = node.data;
  const model = modelSpecOf(d.model, 'model');
  const query = selectorOf(d.query);
  if (!query) throw new Error('query must be a list of at least 2 names (the selector of the text to extract from)');
  const parameters = parametersOf(d.parameters);
  const mode = d.reasoning_mode === undefined || d.reasoning_mode === null || d.reasoning_mode === '' ? 'function_call' : d.reasoning_mode;
  if (mode !== 'function_call' && mode !== 'prompt') throw new Error('reasoning_mode must be "function_call" or "prompt"');
  return { model, query, parameters, mode };
}

/** Dify's answer to each example call. */
const EXAMPLE_TOOL_RESULT = 'Great! You have called the function with the correct parameters.';
const EXAMPLE_AFTER_CALL = "I have extracted the parameters, let's move on.";

/** Inserts `examples` before the last user message, as Dify does. */
function beforeLastUser(messages: ChatMessage[], examples: ChatMessage[]): ChatMessage[] {
  let last = -1;
  messages.forEach((m, i) => m.role === 'user' && (last = i));
  return last < 0 ? [...messages.slice(0, -1), ...examples, ...messages.slice(-1)] : [...messages.slice(0, last), ...examples, ...messages.slice(last)];
}

/** The function-calling prompt: instructions, two worked calls, then the text with the schema; and the tool. */
function functionCallPrompt(ctx: NodeContext, spec: ExtractorSpec, query: string, instruction: string, histories: string): { messages: ChatMessage[]; tool: ToolDefinition } {
  const schema = parameterJsonSchema(spec.parameters);
  const compiled = withFiles(
    [
      { role: 'system', content: ctx.pool.render(functionCallingSystemPrompt({ histories, instruction })) },
      { role: 'user', content: ctx.pool.render(functionCallingUserPrompt({ content: query, structure: pyJsonDumps(schema) })) },
    ].filter((m) => m.content !== '') as ChatMessage[],
    visionParts(ctx),
  );
  const examples = FUNCTION_CALLING_EXAMPLES.flatMap((e): ChatMessage[] => {
    const id = ctx.ports.newId().replace(/-/g, '');
    return [
      { role: 'user', content: e.query },
      { role: 'assistant', content: e.text, toolCalls: [{ id, name: FUNCTION_NAME, arguments: pyJsonDumps(e.arguments) }] },
      { role: 'tool', content: EXAMPLE_TOOL_RESULT, toolCallId: id },
      { role: 'assistant', content: EXAMPLE_AFTER_CALL },
    ];
  });
  return { messages: beforeLastUser(compiled, examples), tool: { name: FUNCTION_NAME, description: 'Extract parameters from the natural language text', parameters: schema } };
}

/** The prompt mode: Dify's JSON instructions (chat: with two worked examples; completion: one prompt). */
function jsonPrompt(ctx: NodeContext, spec: ExtractorSpec, query: string, instruction: string, histories: string): ChatMessage[] {
  const structure = pyJsonDumps(parameterJsonSchema(spec.parameters));
  if (spec.model.mode === 'completion') {
    // Dify prepends the (empty) memory text and a line break to a completion prompt without `#histories#`.
    const text = '\n' + completionJsonPrompt({ histories, text: query, instruction, structure });
    return withFiles([{ role: 'user', content: ctx.pool.render(text) }], visionParts(ctx));
  }
  const compiled = withFiles(
    [
      { role: 'system', content: ctx.pool.render(chatJsonSystemPrompt({ histories, instruction })) },
      { role: 'user', content: ctx.pool.render(chatJsonUserPrompt({ structure, text: query })) },
    ].filter((m) => m.content !== '') as ChatMessage[],
    visionParts(ctx),
  );
  const examples = CHAT_JSON_EXAMPLES.flatMap((e): ChatMessage[] => [
    { role: 'user', content: chatJsonUserPrompt({ structure: pyJsonDumps(e.schema), text: e.query }) },
    { role: 'assistant', content: pyJsonDumps(e.answer) },
  ]);
  return beforeLastUser(compiled, examples);
}

/** The JSON object of the call's arguments (Dify reads it as it reads text); undefined when there is none. */
function fromToolCall(call: ToolCall): Record<string, unknown> | undefined {
  return call.arguments ? firstJsonObject(call.arguments) : undefined;
}

/**
 * Dify's parameter extractor: has the model pull `parameters` out of the text at `query`, by a
 * function call (`reasoning_mode: function_call`, when the provider can call functions and the
 * model is a chat model) or by JSON it writes (`prompt`). Outputs each parameter (coerced to its
 * type), `__is_success`, `__reason` and `__usage`; an answer that does not check out succeeds with
 * `__is_success: 0` and Dify's reason.
 */
export const parameterExtractorNode: NodeHandler = {
  validate(node) {
    specOf(node);
  },
  async run(ctx) {
    const spec = specOf(ctx.node);
    const provider = providerOf(ctx, spec.model);
    const query = toText(ctx.pool.get(spec.query));
    const rawInstruction = typeof ctx.node.data.instruction === 'string' ? ctx.node.data.instruction : null;
    const instruction = ctx.pool.render(rawInstruction ?? '');
    const histories = await memoryText(ctx);
    const calling = spec.mode === 'function_call' && spec.model.mode === 'chat' && provider.toolCalling === true;
    const { messages, tool } = calling ? functionCallPrompt(ctx, spec, query, instruction, histories) : { messages: jsonPrompt(ctx, spec, query, instruction, histories), tool: undefined };
    const answer = await callModel(ctx, spec.model, messages, undefined, tool ? [tool] : undefined);
    const usage = answer.usage;
    const call = answer.toolCalls[0];

    let error: string | null = null;
    let result: Record<string, unknown> | undefined;
    if (call) result = fromToolCall(call);
    else {
      result = firstJsonObject(answer.text);
      if (!result) {
        result = defaultResult(spec.parameters);
        error = 'Failed to extract result from function call or text response, using empty result.';
      }
    }
    try {
      checkResult(spec.parameters, result ?? {});
    } catch (err) {
      if (!(err instanceof ExtractionError)) throw err;
      error = err.message;
    }
    return {
      type: 'succeeded',
      inputs: {
        query,
        files: [],
        parameters: parametersForInputs(spec.parameters),
        instruction: rawInstruction,
        model_provider: spec.model.provider,
        model_name: spec.model.name,
      },
      processData: {
        model_mode: spec.model.mode,
        prompts: savedPrompts(spec.model.mode, messages),
        usage,
        function: tool ?? {},
        tool_call: call ? { id: call.id, type: 'function', function: { name: call.name, arguments: call.arguments } } : null,
        model_provider: spec.model.provider,
        model_name: spec.model.name,
        llm_text: answer.text,
      },
      outputs: { __is_success: error ? 0 : 1, __reason: error, __usage: usage, ...transformResult(spec.parameters, result ?? {}) },
      usage,
    };
  },
};
