import OpenAI from 'openai';
import { completionRequestError } from './errors.js';
import { createSdkFetch, reportSent } from './sdk-fetch.js';
import { readOpenAIStream } from './openai-stream.js';
import { messagesText, type ChatMessage, type GenerateChunk, type GenerateRequest, type ModelProvider } from './model-provider.js';

export interface OpenAIProviderOptions {
  readonly name: string;
  readonly apiKey: string;
  /** Base URL including `/v1`; default OpenAI's. */
  readonly baseUrl?: string;
}

/** `completion_params` keys forwarded to the upstream; others (Dify UI settings) are dropped. */
const PASSED_PARAMS = ['temperature', 'top_p', 'max_tokens', 'presence_penalty', 'frequency_penalty', 'stop', 'seed'] as const;

function pickParams(params: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of PASSED_PARAMS) if (params[k] !== undefined && params[k] !== null) out[k] = params[k];
  if (Array.isArray(out.stop) && out.stop.length === 0) delete out.stop;
  return out;
}

type OpenAIContent = string | ({ type: 'text'; text: string } | { type: 'image_url'; image_url: { url: string; detail?: 'low' | 'high' } })[];

function toOpenAIMessages(messages: readonly ChatMessage[]): { role: 'system' | 'user' | 'assistant'; content: OpenAIContent }[] {
  return messages.map((m) => ({
    role: m.role,
    content:
      typeof m.content === 'string'
        ? m.content
        : m.content.map((p) => (p.type === 'text' ? { type: 'text' as const, text: p.text } : { type: 'image_url' as const, image_url: { url: p.url, ...(p.detail ? { detail: p.detail } : {}) } })),
  })) as { role: 'system' | 'user' | 'assistant'; content: OpenAIContent }[];
}

/** Turns an SDK failure into `completion_request_error` with the upstream's own message. */
function upstreamError(err: unknown): Error {
  if (err instanceof OpenAI.APIUserAbortError) return err;
  if (err instanceof OpenAI.APIError) {
    const body = err.error as { message?: unknown } | undefined;
    const detail = typeof body?.message === 'string' ? body.message : err.message;
    return completionRequestError(err.status ? `[${err.status}] ${detail}` : detail);
  }
  return completionRequestError(err instanceof Error ? err.message : String(err));
}

/**
 * OpenAI and every OpenAI-compatible server (vLLM, Ollama, llama.cpp server, LM Studio) through the
 * official SDK: chat mode streams `/chat/completions`, completion mode streams the legacy
 * `/completions`. The SDK does not retry, so a stop or failure is seen at once.
 */
export class OpenAIProvider implements ModelProvider {
  readonly name: string;
  readonly #client: OpenAI;

  constructor(opts: OpenAIProviderOptions) {
    this.name = opts.name;
    this.#client = new OpenAI({ apiKey: opts.apiKey, baseURL: opts.baseUrl, maxRetries: 0, fetch: createSdkFetch() });
  }

  async *stream(req: GenerateRequest): AsyncIterable<GenerateChunk> {
    const params = pickParams(req.params);
    // The SDK builds, authenticates and sends the request and maps HTTP errors; the body is read
    // by `readOpenAIStream`, which is several times faster than the SDK's per-event iterator.
    let body: ReadableStream<Uint8Array> | null;
    try {
      const response =
        req.mode === 'completion'
          ? await this.#client.completions
              .create({ model: req.model, prompt: req.prompt ?? messagesText(req.messages), stream: true, stream_options: { include_usage: true }, ...params }, { signal: req.signal, ...reportSent(req.onSent) })
              .asResponse()
          : await this.#client.chat.completions
              .create(
                {
                  model: req.model,
                  messages: toOpenAIMessages(req.messages) as OpenAI.Chat.ChatCompletionMessageParam[],
                  stream: true,
                  stream_options: { include_usage: true },
                  ...params,
                },
                { signal: req.signal, ...reportSent(req.onSent) },
              )
              .asResponse();
      body = response.body;
    } catch (err) {
      throw upstreamError(err);
    }
    if (!body) throw completionRequestError('the upstream answered without a body');
    yield* readOpenAIStream(body, req.signal);
  }
}
