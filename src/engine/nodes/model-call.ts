import type { ChatMessage, ModelProvider, ToolCall, ToolDefinition } from '../../llm/model-provider.js';
import { NodeFailure, type NodeContext } from '../types.js';
import { isObject } from './shared.js';

/** A node's model settings (`model` of an llm node, `metadata_model_config` of a knowledge-retrieval node). */
export interface ModelSpec {
  readonly provider: string;
  readonly name: string;
  readonly mode: 'chat' | 'completion';
  readonly params: Record<string, unknown>;
}

/** Reads a DSL model mapping; throws a message naming `field` when it is malformed. */
export function modelSpecOf(raw: unknown, field: string): ModelSpec {
  if (!isObject(raw)) throw new Error(`${field} must be a mapping with provider and name`);
  if (typeof raw.provider !== 'string' || typeof raw.name !== 'string') throw new Error(`${field}.provider and ${field}.name must be strings`);
  return {
    provider: raw.provider,
    name: raw.name,
    mode: raw.mode === 'completion' ? 'completion' : 'chat',
    params: isObject(raw.completion_params) ? raw.completion_params : {},
  };
}

/** The model's provider through the engine port; a missing or unconfigured one fails the node. */
export function providerOf(ctx: NodeContext, spec: ModelSpec): ModelProvider {
  const providers = ctx.ports.providers;
  if (!providers) throw new NodeFailure('no model provider is configured on this server', 'ProviderNotInitialize', false);
  try {
    return providers.get(spec.provider);
  } catch (err) {
    throw new NodeFailure((err as Error).message, 'ProviderNotInitialize', false, { cause: err });
  }
}

/**
 * Calls the model with `messages` and returns its whole answer and token counts; `onText` sees
 * each piece as it arrives. A failure of the call is `LLMInvokeError` (retryable).
 */
export async function callModel(
  ctx: NodeContext,
  spec: ModelSpec,
  messages: ChatMessage[],
  onText?: (text: string) => void,
  /** Function calling: the functions offered; the calls the model asks for come back in `toolCalls`. */
  tools?: { readonly tools: readonly ToolDefinition[]; readonly toolChoice?: 'auto' | 'none' | 'required' | { readonly name: string }; readonly signal?: AbortSignal },
): Promise<{ text: string; promptTokens: number; completionTokens: number; toolCalls: ToolCall[] }> {
  const provider = providerOf(ctx, spec);
  const toolCalls: ToolCall[] = [];
  let text = '';
  let promptTokens = 0;
  let completionTokens = 0;
  try {
    for await (const chunk of provider.stream({
      model: spec.name,
      mode: spec.mode,
      messages,
      prompt: spec.mode === 'completion' ? messages.map((m) => (typeof m.content === 'string' ? m.content : '')).join('\n') : undefined,
      params: spec.params,
      signal: tools?.signal ?? ctx.signal,
      ...(tools && tools.tools.length > 0 ? { tools: tools.tools, toolChoice: tools.toolChoice ?? 'auto' } : {}),
    })) {
      if (chunk.type === 'text') {
        if (!chunk.text) continue;
        text += chunk.text;
        onText?.(chunk.text);
      } else if (chunk.type === 'tool_call') {
        toolCalls.push(chunk.call);
      } else {
        promptTokens = chunk.usage.promptTokens ?? promptTokens;
        completionTokens = chunk.usage.completionTokens ?? completionTokens;
      }
    }
  } catch (err) {
    if (ctx.signal.aborted) throw err;
    throw new NodeFailure((err as Error).message || 'model invocation failed', 'LLMInvokeError', true, { cause: err });
  }
  return { text, promptTokens, completionTokens, toolCalls };
}
