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

function contentText(content: ChatMessage['content']): string {
  return typeof content === 'string' ? content : content.map((p) => (p.type === 'text' ? p.text : '')).join('');
}

/**
 * Messages as Anthropic turns: assistant tool calls become `tool_use` blocks, tool answers
 * `tool_result` blocks of a user turn (consecutive ones share it, as the API requires).
 */
function toTurns(messages: readonly ChatMessage[]): { role: 'user' | 'assistant'; content: unknown }[] {
  const out: { role: 'user' | 'assistant'; content: unknown }[] = [];
  for (const m of messages) {
    if (m.role === 'system') continue;
    if (m.role === 'tool') {
      const block = { type: 'tool_result', tool_use_id: m.toolCallId ?? '', content: contentText(m.content) };
      const last = out.at(-1);
      if (last && last.role === 'user' && Array.isArray(last.content) && (last.content as { type: string }[]).every((b) => b.type === 'tool_result')) (last.content as unknown[]).push(block);
      else out.push({ role: 'user', content: [block] });
      continue;
    }
    if (m.role === 'assistant' && m.toolCalls && m.toolCalls.length > 0) {
      const text = contentText(m.content);
      out.push({
        role: 'assistant',
        content: [...(text ? [{ type: 'text', text }] : []), ...m.toolCalls.map((c) => ({ type: 'tool_use', id: c.id, name: c.name, input: parseArgs(c.arguments) }))],
      });
      continue;
    }
    out.push({ role: m.role, content: toBlocks(m.content) });
  }
  return out;
}

function parseArgs(text: string): unknown {
  try {
    const v: unknown = JSON.parse(text || '{}');
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? v : {};
  } catch {
    return {};
  }
}

function toolFields(req: GenerateRequest): Record<string, unknown> {
  if (!req.tools || req.tools.length === 0) return {};
  const c = req.toolChoice ?? 'auto';
  const choice = c === 'required' ? { type: 'any' } : c === 'none' ? { type: 'none' } : c === 'auto' ? { type: 'auto' } : { type: 'tool', name: c.name };
  return { tools: req.tools.map((t) => ({ name: t.name, description: t.description, input_schema: t.parameters })), tool_choice: choice };
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
        : toTurns(req.messages);
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
          ...toolFields(req),
        } as Anthropic.MessageCreateParamsStreaming,
        { signal: req.signal, ...reportSent(req.onSent) },
      );
      let promptTokens: number | undefined;
      // tool_use blocks by index: their input arrives as partial JSON and is complete at block stop
      const uses = new Map<number, { id: string; name: string; json: string }>();
      for await (const ev of stream) {
        if (ev.type === 'message_start') promptTokens = ev.message.usage.input_tokens;
        else if (ev.type === 'content_block_start' && ev.content_block.type === 'tool_use') uses.set(ev.index, { id: ev.content_block.id, name: ev.content_block.name, json: '' });
        else if (ev.type === 'content_block_delta' && ev.delta.type === 'input_json_delta') {
          const u = uses.get(ev.index);
          if (u) u.json += ev.delta.partial_json;
        } else if (ev.type === 'content_block_stop' && uses.has(ev.index)) {
          const u = uses.get(ev.index)!;
          yield { type: 'tool_call', call: { id: u.id, name: u.name, arguments: u.json || '{}' } };
        } else if (ev.type === 'content_block_delta' && ev.delta.type === 'text_delta') yield { type: 'text', text: ev.delta.text };
        else if (ev.type === 'message_delta') yield { type: 'usage', usage: { promptTokens, completionTokens: ev.usage.output_tokens } };
      }
    } catch (err) {
      throw upstreamError(err);
    }
  }
}
