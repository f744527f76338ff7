import type Anthropic from '@anthropic-ai/sdk';
import { completionRequestError, providerConnectionError } from './errors.js';
import { createSdkFetch, reportSent } from './sdk-fetch.js';
import type { ChatMessage, GenerateChunk, GenerateRequest, ModelProvider, ToolCall } from './model-provider.js';
import { ThinkWrap } from './think-wrap.js';

export interface AnthropicProviderOptions {
  /** Provider name as resolved (`anthropic`, or one added in `dovetail.yaml`); default `anthropic`. */
  readonly name?: string;
  readonly apiKey: string;
  readonly baseUrl?: string;
  /** Idle time of a kept-alive connection (`createUpstreamHttp`). */
  readonly keepAliveMs?: number;
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
  | { type: 'image'; source: { type: 'url'; url: string } | { type: 'base64'; media_type: string; data: string } }
  | { type: 'tool_use'; id: string; name: string; input: unknown }
  | { type: 'tool_result'; tool_use_id: string; content: string };

function toBlocks(content: ChatMessage['content']): string | Block[] {
  if (typeof content === 'string') return content;
  return content.map((p): Block => {
    if (p.type === 'text') return { type: 'text', text: p.text };
    const m = /^data:([^;,]+);base64,(.*)$/s.exec(p.url);
    return m ? { type: 'image', source: { type: 'base64', media_type: m[1]!, data: m[2]! } } : { type: 'image', source: { type: 'url', url: p.url } };
  });
}

/** The arguments a call wrote, as the object `tool_use.input` needs (`{}` when they are not a JSON object). */
function toolInput(args: string): unknown {
  try {
    const v: unknown = JSON.parse(args);
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? v : {};
  } catch {
    return {};
  }
}

/**
 * One Messages API turn: an assistant's tool calls become `tool_use` blocks after its text, and a
 * `tool` message a user turn with its `tool_result` (the API joins consecutive user turns).
 */
function toTurn(m: ChatMessage): { role: 'user' | 'assistant'; content: string | Block[] } {
  if (m.role === 'tool') {
    const text = typeof m.content === 'string' ? m.content : m.content.map((p) => (p.type === 'text' ? p.text : '')).join('');
    return { role: 'user', content: [{ type: 'tool_result', tool_use_id: m.toolCallId ?? '', content: text }] };
  }
  const role = m.role === 'assistant' ? 'assistant' : 'user';
  if (!m.toolCalls?.length) return { role, content: toBlocks(m.content) };
  const blocks = toBlocks(m.content);
  const lead: Block[] = typeof blocks === 'string' ? (blocks ? [{ type: 'text', text: blocks }] : []) : blocks;
  return { role, content: [...lead, ...m.toolCalls.map((c): Block => ({ type: 'tool_use', id: c.id, name: c.name, input: toolInput(c.arguments) }))] };
}

/** `tools` / `tool_choice` of a Messages request, when the caller offers functions. */
function toolFields(req: GenerateRequest): Record<string, unknown> {
  if (!req.tools?.length) return {};
  const tools = req.tools.map((t) => ({ name: t.name, description: t.description, input_schema: t.parameters }));
  const c = req.toolChoice;
  if (c === undefined) return { tools };
  return { tools, tool_choice: c === 'auto' ? { type: 'auto' } : c === 'required' ? { type: 'any' } : { type: 'tool', name: c.name } };
}

type Sdk = typeof import('@anthropic-ai/sdk').default;

/**
 * The SDK, loaded when the first request is sent: its ~270 modules cost every process about a third
 * of a second of CPU at start-up, whether or not an app uses Anthropic.
 */
let sdk: Promise<Sdk> | undefined;
const loadSdk = (): Promise<Sdk> => (sdk ??= import('@anthropic-ai/sdk').then((m) => m.default));

function upstreamError(Sdk: Sdk, err: unknown, provider: string, url: string | undefined): Error {
  if (err instanceof Sdk.APIUserAbortError) return err;
  if (err instanceof Sdk.APIConnectionError) return providerConnectionError(provider, url, err);
  if (err instanceof Sdk.APIError) {
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
  readonly toolCalling = true;
  readonly #opts: AnthropicProviderOptions;
  #client: Anthropic | undefined;

  constructor(opts: AnthropicProviderOptions) {
    this.name = opts.name ?? 'anthropic';
    this.#opts = opts;
  }

  #clientOf(Sdk: Sdk): Anthropic {
    const o = this.#opts;
    return (this.#client ??= new Sdk({ apiKey: o.apiKey, baseURL: o.baseUrl, maxRetries: 0, fetch: createSdkFetch({ keepAliveMs: o.keepAliveMs }) }));
  }

  async *stream(req: GenerateRequest): AsyncIterable<GenerateChunk> {
    const system = req.messages.filter((m) => m.role === 'system').map((m) => (typeof m.content === 'string' ? m.content : '')).join('\n\n');
    const turns =
      req.mode === 'completion' && req.prompt !== undefined
        ? [{ role: 'user' as const, content: req.prompt }]
        : req.messages.filter((m) => m.role !== 'system').map(toTurn);
    const think = new ThinkWrap();
    const Sdk = await loadSdk();
    try {
      const body = { model: req.model, messages: turns as Anthropic.MessageParam[], stream: true, ...(system ? { system } : {}), ...anthropicParams(req.params), ...toolFields(req) };
      const stream = await this.#clientOf(Sdk).messages.create(body as Anthropic.MessageCreateParamsStreaming, { signal: req.signal, ...reportSent(req.onSent) });
      let promptTokens: number | undefined;
      const calls = new Map<number, { id: string; name: string; arguments: string }>();
      for await (const ev of stream) {
        if (ev.type === 'message_start') promptTokens = ev.message.usage.input_tokens;
        else if (ev.type === 'content_block_start' && ev.content_block.type === 'tool_use') calls.set(ev.index, { id: ev.content_block.id, name: ev.content_block.name, arguments: '' });
        else if (ev.type === 'content_block_delta' && (ev.delta.type === 'text_delta' || ev.delta.type === 'thinking_delta')) {
          const text = ev.delta.type === 'text_delta' ? think.next(undefined, ev.delta.text) : think.next(ev.delta.thinking, undefined);
          if (text) yield { type: 'text', text };
        } else if (ev.type === 'content_block_delta' && ev.delta.type === 'input_json_delta') {
          const call = calls.get(ev.index);
          if (call) call.arguments += ev.delta.partial_json;
        } else if (ev.type === 'message_delta') {
          const close = think.end();
          if (close) yield { type: 'text', text: close };
          yield { type: 'usage', usage: { promptTokens, completionTokens: ev.usage.output_tokens } };
        }
      }
      // the SDK's stream ends quietly when the signal aborts; the port's callers expect the abort error
      if (req.signal?.aborted) throw req.signal.reason ?? new Error('aborted');
      if (calls.size > 0) {
        const done: ToolCall[] = [...calls.entries()].sort((a, b) => a[0] - b[0]).map(([, c]) => ({ ...c, arguments: c.arguments || '{}' }));
        yield { type: 'tool_calls', calls: done };
      }
    } catch (err) {
      if (req.signal?.aborted) throw req.signal.reason ?? err;
      throw upstreamError(Sdk, err, this.name, this.#opts.baseUrl ?? 'https://api.anthropic.com');
    }
  }
}
