import type { ProviderReadiness } from './provider-readiness.js';
import type { CancelSource } from '../lib/cancellation.js';

/**
 * The port every model backend implements. Implementations live beside this file as
 * `<impl>-provider.ts`; `runtime.ts` builds the registry (`provider-registry.ts`).
 */

export type ContentPart =
  | { readonly type: 'text'; readonly text: string }
  /** `url` is http(s) or a `data:` URL. */
  | { readonly type: 'image'; readonly url: string; readonly detail?: 'low' | 'high' };

export interface ChatMessage {
  /** `tool` answers an assistant's tool call (`toolCallId`). */
  readonly role: 'system' | 'user' | 'assistant' | 'tool';
  readonly content: string | readonly ContentPart[];
  /** `assistant` messages: the tool calls the model made in that turn. */
  readonly toolCalls?: readonly ToolCall[];
  /** `tool` messages: the id of the call this answers. */
  readonly toolCallId?: string;
}

/** A function the model may call: its name, what it does, and a JSON schema of its arguments. */
export interface ToolDefinition {
  readonly name: string;
  readonly description: string;
  /** JSON schema of the arguments (`{"type": "object", "properties": …, "required": […]}`). */
  readonly parameters: Readonly<Record<string, unknown>>;
}

/** A call the model made: `arguments` is the JSON text it wrote (not parsed, maybe not valid). */
export interface ToolCall {
  readonly id: string;
  readonly name: string;
  readonly arguments: string;
}

export interface GenerateRequest {
  /** Model name as in the DSL (`model.name`). */
  readonly model: string;
  /** `chat` sends `messages`; `completion` sends `prompt` to a legacy completion endpoint. */
  readonly mode: 'chat' | 'completion';
  readonly messages: readonly ChatMessage[];
  /** Used in `completion` mode; when absent the text of `messages` is joined. */
  readonly prompt?: string;
  /** DSL `completion_params` (temperature, max_tokens, stop, …). */
  readonly params: Readonly<Record<string, unknown>>;
  /** Aborting closes the upstream connection; the stream then throws (check `signal.aborted`). */
  readonly signal?: AbortSignal;
  /**
   * The same cancellation without an `AbortSignal` (see `Cancellation`), for providers that can use
   * it; when given, `signal` follows it and need not be read.
   */
  readonly cancel?: CancelSource;
  /**
   * Called once, right after the request has been handed to the network: the caller's own work
   * (storing the message) then runs while the upstream is busy. Providers without an upstream
   * request never call it.
   */
  readonly onSent?: () => void;
  /** Functions the model may call; its calls arrive as one `tool_calls` chunk at the end. */
  readonly tools?: readonly ToolDefinition[];
  /** Whether it must call one (`required`), a named one, or may answer in text (`auto`, the default). */
  readonly toolChoice?: 'auto' | 'required' | { readonly name: string };
}

export interface ProviderUsage {
  readonly promptTokens?: number;
  readonly completionTokens?: number;
}

export type GenerateChunk =
  | { readonly type: 'text'; readonly text: string }
  | { readonly type: 'usage'; readonly usage: ProviderUsage }
  /** Only when the request had `tools`: every call of the answer, once it is complete. */
  | { readonly type: 'tool_calls'; readonly calls: readonly ToolCall[] };

/** Audio to transcribe (already read: the upstream needs its length). */
export interface TranscribeRequest {
  readonly model: string;
  /** File name sent upstream; its extension tells the upstream the format. */
  readonly filename: string;
  readonly mimeType: string;
  readonly bytes: Buffer;
  readonly signal?: AbortSignal;
}

export interface SpeakRequest {
  readonly model: string;
  readonly text: string;
  readonly voice: string;
  /** Aborting closes the upstream connection, also while the audio streams. */
  readonly signal?: AbortSignal;
}

/** Synthesised speech as the upstream streams it. */
export interface SpeechAudio {
  /** The upstream's `Content-Type` (`audio/mpeg` when it sends none). */
  readonly contentType: string;
  readonly body: ReadableStream<Uint8Array>;
}

export interface ModelProvider {
  /** Provider name as resolved (`openai`, `anthropic`, `mock`, …); informational. */
  readonly name?: string;
  /** True when `stream` honours `tools` (function calling); otherwise callers prompt for JSON instead. */
  readonly toolCalling?: boolean;
  /**
   * Whether `model` of this provider calls functions, when that differs by model (an
   * OpenAI-compatible server's `NAME_FUNCTION_CALLING`); absent: `toolCalling` says for every model.
   */
  callsFunctions?(model: string): boolean;
  /**
   * Streams the answer. Upstream failures throw `completion_request_error` (`ProviderError`, see
   * `errors.ts`); an aborted signal ends the iteration with the abort error.
   */
  stream(req: GenerateRequest): AsyncIterable<GenerateChunk>;
  /** Speech to text; absent when the provider cannot do it. Failures as for `stream`. */
  transcribe?(req: TranscribeRequest): Promise<string>;
  /**
   * Text to speech; absent when the provider cannot do it. Resolves once the upstream has answered
   * with audio (a refusal throws `completion_request_error` before any byte); the body then streams.
   */
  speak?(req: SpeakRequest): Promise<SpeechAudio>;
  /**
   * Content moderation (OpenAI's `POST /moderations`): true when the upstream flags any of
   * `req.texts`; absent when the provider cannot do it. Failures as for `stream`.
   */
  moderate?(req: ModerateRequest): Promise<boolean>;
}

export interface ModerateRequest {
  readonly model: string;
  /** Sent in one request as `input`. */
  readonly texts: readonly string[];
  readonly signal?: AbortSignal;
}

/** Chooses a provider for a DSL `model.provider` name. */
export interface ModelProviders {
  /** Throws `provider_not_initialize` when the provider is unknown or has no credentials configured. */
  get(provider: string): ModelProvider;
  /**
   * Whether `provider` (a DSL name, alias or plugin id) is usable, and if not which settings are
   * missing, without building it (`providerReadiness`); absent on test doubles that serve anything.
   */
  readiness?(provider: string): ProviderReadiness;
}

/** The text of a message list, for legacy completion prompts and token counting. */
export function messagesText(messages: readonly ChatMessage[]): string {
  return messages
    .map((m) => (typeof m.content === 'string' ? m.content : m.content.map((p) => (p.type === 'text' ? p.text : '')).join('')))
    .join('\n\n');
}

/**
 * A `provider/model` setting (`KNOWLEDGE_QA_MODEL`, `SUGGESTED_QUESTIONS_MODEL`, the audio models)
 * split at its first `/`; undefined when either side is empty.
 */
export function splitModelRef(ref: string): { provider: string; model: string } | undefined {
  const i = ref.indexOf('/');
  if (i <= 0 || i === ref.length - 1) return undefined;
  return { provider: ref.slice(0, i), model: ref.slice(i + 1) };
}

/**
 * Whether `model` calls functions: Dify's model features `tool-call` / `multi-tool-call`, which
 * choose its function-call router (or the ReAct one) for a basic app's `single` datasets.
 */
export function modelCallsFunctions(provider: ModelProvider, model: string): boolean {
  return provider.toolCalling === true && (provider.callsFunctions?.(model) ?? true);
}

/**
 * Reads a `NAME_FUNCTION_CALLING` value: `true` (or unset) every model, `false` none, otherwise
 * the comma-separated names of the models that call functions.
 */
export function functionCallingModels(setting: string | undefined): (model: string) => boolean {
  const v = (setting ?? '').trim();
  if (v === '' || v.toLowerCase() === 'true') return () => true;
  if (v.toLowerCase() === 'false') return () => false;
  const names = new Set(v.split(',').map((n) => n.trim()).filter((n) => n !== ''));
  return (model) => names.has(model);
}
