import Anthropic from '@anthropic-ai/sdk';
import { completionRequestError } from './errors.js';
import { createSdkFetch, reportSent } from './sdk-fetch.js';
import type { ChatMessage, GenerateChunk, GenerateRequest, ModelProvider } from './model-provider.js';
import { ThinkWrap } from './think-wrap.js';

export interface AnthropicProviderOptions {
  /** Provider name as resolved (`anthropic`, or one added in `dovetail.yaml`); default `anthropic`. */
  readonly name?: string;
  readonly apiKey: string;
  readonly baseUrl?: string;
}

/** Anthropic requires `max_tokens`; used when the DSL sets none. */
const DEFAULT_MAX_TOKENS = 4096;
/** Thinking budget when `thinking` is on and `thinking_budget` unset (Dify's Anthropic plugin default). */
const DEFAULT_THINKING_BUDGET = 1024;

/**
 * The DSL's `completion_params` the Messages API knows: `temperature`, `top_p`, `top_k`, `stop`
 * (as `stop_sequences`), and Dify's `thinking` switch with `thinking_budget` (extended thinking;
 * sampling parameters are then left out, which the API requires).
 */
export function anthropicParams(p: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const thinking = p.thinking === true || p.thinking === 'true';
  const budget = typeof p.thinking_budget === 'number' ? p.thinking_budget : DEFAULT_THINKING_BUDGET;
  return {
    max_tokens: typeof p.max_tokens === 'number' ? p.max_tokens : DEFAULT_MAX_TOKENS,
    ...(typeof p.temperature === 'number' && !thinking ? { temperature: p.temperature } : {}),
    ...(typeof p.top_p === 'number' && !thinking ? { top_p: p.top_p } : {}),
    ...(typeof p.top_k === 'number' && !thinking ? { top_k: p.top_k } : {}),
    ...(Array.isArray(p.stop) && p.stop.length > 0 ? { stop_sequences: p.stop.map(String) } : {}),
    ...(thinking ? { thinking: { type: 'enabled', budget_tokens: budget } } : {}),
  };
}

type Block =
  | { type: 'text'; text: string }
  | { type: 'image'; source: { type: 'url'; url: string } | { type: 'base64'; media_type: string; data: string } };

function toBlocks(content: ChatMessage['content']): string | Block[] {
  if (typeof content === 'string') return content;
  return content.map((p): Block => {
    if (p.type === 'text') return { type: 'text', text: p.text };
    const m = /^data:([^;,]+);base64,(.*)$/s.exec(p.url);
    return m ? { type: 'image', source: { type: 'base64', media_type: m[1]!, data: m[2]! } } : { type: 'image', source: { type: 'url', url: p.url } };
  });
}

function upstreamError(err: unknown): Error {
  if (err instanceof Anthropic.APIUserAbortError) return err;
  if (err instanceof Anthropic.APIError) {
    const body = err.error as { error?: { message?: unknown } } | undefined;
    const detail = typeof body?.error?.message === 'string' ? body.error.message : err.message;
    return completionRequestError(err.status ? `[${err.status}] ${detail}` : detail);
  }
  return completionRequestError(err instanceof Error ? err.message : String(err));
}

/**
 * Anthropic's Messages API (streaming) through the official SDK. Completion mode is sent as one
 * user turn. Thinking blocks stream inside `<think>` as Dify's Anthropic plugin hands them on.
 */
export class AnthropicProvider implements ModelProvider {
  readonly name: string;
  readonly #client: Anthropic;

  constructor(opts: AnthropicProviderOptions) {
    this.name = opts.name ?? 'anthropic';
    this.#client = new Anthropic({ apiKey: opts.apiKey, baseURL: opts.baseUrl, maxRetries: 0, fetch: createSdkFetch() });
  }

  async *stream(req: GenerateRequest): AsyncIterable<GenerateChunk> {
    const system = req.messages.filter((m) => m.role === 'system').map((m) => (typeof m.content === 'string' ? m.content : '')).join('\n\n');
    const turns =
      req.mode === 'completion' && req.prompt !== undefined
        ? [{ role: 'user' as const, content: req.prompt }]
        : req.messages.filter((m) => m.role !== 'system').map((m) => ({ role: m.role as 'user' | 'assistant', content: toBlocks(m.content) }));
    const think = new ThinkWrap();
    try {
      const body = { model: req.model, messages: turns as Anthropic.MessageParam[], stream: true, ...(system ? { system } : {}), ...anthropicParams(req.params) };
      const stream = await this.#client.messages.create(body as Anthropic.MessageCreateParamsStreaming, { signal: req.signal, ...reportSent(req.onSent) });
      let promptTokens: number | undefined;
      for await (const ev of stream) {
        if (ev.type === 'message_start') promptTokens = ev.message.usage.input_tokens;
        else if (ev.type === 'content_block_delta' && (ev.delta.type === 'text_delta' || ev.delta.type === 'thinking_delta')) {
          const text = ev.delta.type === 'text_delta' ? think.next(undefined, ev.delta.text) : think.next(ev.delta.thinking, undefined);
          if (text) yield { type: 'text', text };
        } else if (ev.type === 'message_delta') {
          const close = think.end();
          if (close) yield { type: 'text', text: close };
          yield { type: 'usage', usage: { promptTokens, completionTokens: ev.usage.output_tokens } };
        }
      }
    } catch (err) {
      throw upstreamError(err);
    }
  }
}
