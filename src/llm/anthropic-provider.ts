import Anthropic from '@anthropic-ai/sdk';
import { completionRequestError } from './errors.js';
import { createSdkFetch, reportSent } from './sdk-fetch.js';
import type { ChatMessage, GenerateChunk, GenerateRequest, ModelProvider } from './model-provider.js';

export interface AnthropicProviderOptions {
  readonly apiKey: string;
  readonly baseUrl?: string;
}

/** Anthropic requires `max_tokens`; used when the DSL sets none. */
const DEFAULT_MAX_TOKENS = 4096;

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

/** Anthropic's Messages API (streaming) through the official SDK. Completion mode is sent as one user turn. */
export class AnthropicProvider implements ModelProvider {
  readonly name = 'anthropic';
  readonly #client: Anthropic;

  constructor(opts: AnthropicProviderOptions) {
    this.#client = new Anthropic({ apiKey: opts.apiKey, baseURL: opts.baseUrl, maxRetries: 0, fetch: createSdkFetch() });
  }

  async *stream(req: GenerateRequest): AsyncIterable<GenerateChunk> {
    const system = req.messages.filter((m) => m.role === 'system').map((m) => (typeof m.content === 'string' ? m.content : '')).join('\n\n');
    const turns =
      req.mode === 'completion' && req.prompt !== undefined
        ? [{ role: 'user' as const, content: req.prompt }]
        : req.messages.filter((m) => m.role !== 'system').map((m) => ({ role: m.role as 'user' | 'assistant', content: toBlocks(m.content) }));
    const p = req.params;
    const maxTokens = typeof p.max_tokens === 'number' ? p.max_tokens : DEFAULT_MAX_TOKENS;
    try {
      const stream = await this.#client.messages.create(
        {
          model: req.model,
          max_tokens: maxTokens,
          messages: turns as Anthropic.MessageParam[],
          stream: true,
          ...(system ? { system } : {}),
          ...(typeof p.temperature === 'number' ? { temperature: p.temperature } : {}),
          ...(typeof p.top_p === 'number' ? { top_p: p.top_p } : {}),
          ...(Array.isArray(p.stop) && p.stop.length > 0 ? { stop_sequences: p.stop.map(String) } : {}),
        },
        { signal: req.signal, ...reportSent(req.onSent) },
      );
      let promptTokens: number | undefined;
      for await (const ev of stream) {
        if (ev.type === 'message_start') promptTokens = ev.message.usage.input_tokens;
        else if (ev.type === 'content_block_delta' && ev.delta.type === 'text_delta') yield { type: 'text', text: ev.delta.text };
        else if (ev.type === 'message_delta') yield { type: 'usage', usage: { promptTokens, completionTokens: ev.usage.output_tokens } };
      }
    } catch (err) {
      throw upstreamError(err);
    }
  }
}
