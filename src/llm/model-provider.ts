/**
 * The port every model backend implements. Implementations live beside this file as
 * `<impl>-provider.ts`; `runtime.ts` builds the registry.
 */

export type ContentPart =
  | { readonly type: 'text'; readonly text: string }
  /** `url` is http(s) or a `data:` URL. */
  | { readonly type: 'image'; readonly url: string; readonly detail?: 'low' | 'high' };

export interface ChatMessage {
  readonly role: 'system' | 'user' | 'assistant';
  readonly content: string | readonly ContentPart[];
}

export interface GenerateRequest {
  /** Model name as in the DSL (`model.name`). */
  readonly model: string;
  /** `chat` sends `messages`; `completion` sends `prompt` to a legacy completion endpoint. */
  readonly mode: 'chat' | 'completion';
  readonly messages: readonly ChatMessage[];
  /** Used in `completion` mode. */
  readonly prompt?: string;
  /** DSL `completion_params` (temperature, max_tokens, stop, …). */
  readonly params: Readonly<Record<string, unknown>>;
  /** Aborting closes the upstream connection. */
  readonly signal?: AbortSignal;
}

export interface ProviderUsage {
  readonly promptTokens?: number;
  readonly completionTokens?: number;
}

export type GenerateChunk =
  | { readonly type: 'text'; readonly text: string }
  | { readonly type: 'usage'; readonly usage: ProviderUsage };

export interface ModelProvider {
  /** Streams the answer. Throws ProviderError (see `errors.ts`) for upstream failures. */
  stream(req: GenerateRequest): AsyncIterable<GenerateChunk>;
}

/** Chooses a provider for a DSL `model.provider` name. */
export interface ModelProviders {
  /** Throws `provider_not_initialize` when the provider has no credentials configured. */
  get(provider: string): ModelProvider;
}
