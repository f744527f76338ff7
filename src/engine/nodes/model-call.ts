import type { ChatMessage, ModelProvider, ToolCall, ToolDefinition } from '../ports.js';
import type { UsageBody } from '../../lib/usage.js';
import { pricedUsage } from '../../lib/usage.js';
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
export function providerOf(ctx: { readonly ports: Pick<NodeContext['ports'], 'providers'> }, spec: ModelSpec): ModelProvider {
  const providers = ctx.ports.providers;
  if (!providers) throw new NodeFailure('no model provider is configured on this server', 'ProviderNotInitialize', false);
  try {
    return providers.get(spec.provider);
  } catch (err) {
    throw new NodeFailure((err as Error).message, 'ProviderNotInitialize', false, { cause: err });
  }
}

/** What one model call gave back. */
export interface ModelAnswer {
  readonly text: string;
  readonly promptTokens: number;
  readonly completionTokens: number;
  /** Priced usage of this call (Dify's LLMUsage). */
  readonly usage: UsageBody;
  /** The calls the model made (only when `tools` were offered). */
  readonly toolCalls: readonly ToolCall[];
}

/**
 * Calls the model with `messages` and returns its whole answer, token counts and priced usage
 * (`ports.priceOf` of the model name); `onText` sees each piece as it arrives. With `tools`, the
 * model may answer with calls of them instead of (or besides) text. A failure of the call is
 * `LLMInvokeError` (retryable).
 */
export async function callModel(
  ctx: { readonly ports: Omit<NodeContext['ports'], 'limits'>; readonly signal: AbortSignal; readonly node?: Pick<NodeContext['node'], 'id' | 'title' | 'type'> },
  spec: ModelSpec,
  messages: ChatMessage[],
  onText?: (text: string) => void,
  tools?: readonly ToolDefinition[],
): Promise<ModelAnswer> {
  const provider = providerOf(ctx, spec);
  const started = ctx.ports.now();
  let text = '';
  let promptTokens = 0;
  let completionTokens = 0;
  let toolCalls: readonly ToolCall[] = [];
  try {
    for await (const chunk of provider.stream({
      model: spec.name,
      mode: spec.mode,
      messages,
      prompt: spec.mode === 'completion' ? messages.map((m) => (typeof m.content === 'string' ? m.content : '')).join('\n') : undefined,
      params: spec.params,
      signal: ctx.signal,
      ...(tools?.length ? { tools } : {}),
    })) {
      if (chunk.type === 'text') {
        if (!chunk.text) continue;
        text += chunk.text;
        onText?.(chunk.text);
      } else if (chunk.type === 'usage') {
        promptTokens = chunk.usage.promptTokens ?? promptTokens;
        completionTokens = chunk.usage.completionTokens ?? completionTokens;
      } else {
        toolCalls = chunk.calls;
      }
    }
  } catch (err) {
    if (ctx.signal.aborted) throw err;
    const message = (err as Error).message || 'model invocation failed';
    // a provider that could not be reached: say which node called it (the provider names itself and its host)
    const where = (err as { connection?: unknown }).connection === true && ctx.node ? ` (${ctx.node.type} node "${ctx.node.title}", id ${ctx.node.id})` : '';
    throw new NodeFailure(where ? `${message.replace(/\.$/, '')}${where}.` : message, 'LLMInvokeError', true, { cause: err });
  }
  const usage = pricedUsage(promptTokens, completionTokens, ctx.ports.priceOf?.(spec.name), (ctx.ports.now() - started) / 1000);
  return { text, promptTokens, completionTokens, usage, toolCalls };
}
