import OpenAI, { toFile } from 'openai';
import { completionRequestError } from './errors.js';
import { createUpstreamHttp, toResponse, type RawResponse, type SdkFetchInit, type UpstreamHttp } from './sdk-fetch.js';
import { readOpenAIStream } from './openai-stream.js';
import {
  messagesText,
  type ChatMessage,
  type GenerateChunk,
  type GenerateRequest,
  type ModelProvider,
  type SpeakRequest,
  type SpeechAudio,
  type TranscribeRequest,
} from './model-provider.js';

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

function toOpenAIMessages(messages: readonly ChatMessage[]): Record<string, unknown>[] {
  return messages.map((m) => {
    const content =
      typeof m.content === 'string'
        ? m.content
        : m.content.map((p) => (p.type === 'text' ? { type: 'text' as const, text: p.text } : { type: 'image_url' as const, image_url: { url: p.url, ...(p.detail ? { detail: p.detail } : {}) } }));
    if (m.role === 'tool') return { role: 'tool', tool_call_id: m.toolCallId ?? '', content };
    if (m.role === 'assistant' && m.toolCalls && m.toolCalls.length > 0) {
      return { role: 'assistant', content: content === '' ? null : content, tool_calls: m.toolCalls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } })) };
    }
    return { role: m.role, content };
  });
}

/** OpenAI's `tools` and `tool_choice` for a request that offers functions (none otherwise). */
function toolFields(req: GenerateRequest): Record<string, unknown> {
  if (!req.tools || req.tools.length === 0) return {};
  const choice = req.toolChoice ?? 'auto';
  return {
    tools: req.tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } })),
    tool_choice: typeof choice === 'string' ? choice : { type: 'function', function: { name: choice.name } },
  };
}

function upstreamError(err: unknown): Error {
  if (err instanceof OpenAI.APIUserAbortError) return err;
  if (err instanceof OpenAI.APIError) {
    const body = err.error as { message?: unknown } | undefined;
    const detail = typeof body?.message === 'string' ? body.message : err.message;
    return completionRequestError(err.status ? `[${err.status}] ${detail}` : detail);
  }
  return completionRequestError(err instanceof Error ? err.message : String(err));
}

type Endpoint = '/chat/completions' | '/completions';

/** A request the SDK built: its URL and headers (auth, user agent, platform, content type). */
interface PreparedRequest {
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
}

/**
 * OpenAI and every OpenAI-compatible server (vLLM, Ollama, llama.cpp server, LM Studio) through the
 * official SDK: chat mode streams `/chat/completions`, completion mode streams the legacy
 * `/completions`.
 *
 * The SDK builds each endpoint's request once (`buildRequest`: URL, auth, headers) and its error
 * classes map failures (`APIError.generate`, `APIConnectionError`, `APIUserAbortError`); each call
 * then sends the prepared request with its JSON body on the keep-alive `fetch`. Running the SDK's
 * whole request pipeline per call (header merging through `Headers`, request logging, its own
 * abort controller and timeout) cost 1.5–2 ms of time to first token on the benchmark machine,
 * more than all of Dovetail's own work on that path. No retries, so a stop or failure is seen at once.
 */
export class OpenAIProvider implements ModelProvider {
  readonly name: string;
  readonly #client: OpenAI;
  readonly #http: UpstreamHttp;
  readonly #prepared = new Map<Endpoint, Promise<PreparedRequest>>();

  constructor(opts: OpenAIProviderOptions) {
    this.name = opts.name;
    this.#http = createUpstreamHttp();
    this.#client = new OpenAI({ apiKey: opts.apiKey, baseURL: opts.baseUrl, maxRetries: 0, fetch: this.#http.fetch });
  }

  /** The SDK's request for `path`, built on first use. */
  #request(path: Endpoint): Promise<PreparedRequest> {
    let p = this.#prepared.get(path);
    if (!p) {
      p = this.#client.buildRequest({ method: 'post', path, body: {} }).then(({ url, req }) => {
        const headers: Record<string, string> = {};
        new Headers(req.headers as HeadersInit).forEach((v, k) => (headers[k] = v));
        return { url, headers };
      });
      p.catch(() => this.#prepared.delete(path));
      this.#prepared.set(path, p);
    }
    return p;
  }

  /** Sends `body` to `path` as a streaming request; non-2xx answers become the SDK's errors. */
  async #post(path: Endpoint, body: Record<string, unknown>, req: GenerateRequest): Promise<RawResponse> {
    const { url, headers } = await this.#request(path);
    let raw: RawResponse;
    try {
      const init: SdkFetchInit = { method: 'POST', headers, body: JSON.stringify(body), signal: req.signal ?? null, onRequestSent: req.onSent };
      raw = await this.#http.request(url, init);
    } catch (err) {
      if (req.signal?.aborted) throw new OpenAI.APIUserAbortError();
      throw new OpenAI.APIConnectionError({ cause: err instanceof Error ? err : undefined });
    }
    if (raw.status >= 200 && raw.status < 300) return raw;
    const response = toResponse(raw);
    // As the SDK reads an error answer: JSON when it parses, the text otherwise.
    const text = await response.text().catch((e: unknown) => (e instanceof Error ? e.message : String(e)));
    let json: Record<string, unknown> | undefined;
    try {
      json = JSON.parse(text) as Record<string, unknown>;
    } catch {
      json = undefined;
    }
    throw OpenAI.APIError.generate(response.status, json, json ? undefined : text, response.headers);
  }

  async *stream(req: GenerateRequest): AsyncIterable<GenerateChunk> {
    const params = pickParams(req.params);
    // The body is read by `readOpenAIStream`, several times faster than the SDK's per-event iterator.
    let body: ReadableStream<Uint8Array> | null;
    try {
      const response =
        req.mode === 'completion'
          ? await this.#post('/completions', { model: req.model, prompt: req.prompt ?? messagesText(req.messages), stream: true, stream_options: { include_usage: true }, ...params }, req)
          : await this.#post('/chat/completions', { model: req.model, messages: toOpenAIMessages(req.messages), stream: true, stream_options: { include_usage: true }, ...params, ...toolFields(req) }, req);
      body = response.body;
    } catch (err) {
      throw upstreamError(err);
    }
    if (!body) throw completionRequestError('the upstream answered without a body');
    yield* readOpenAIStream(body, req.signal);
  }

  /** `POST /audio/transcriptions` (multipart `file` + `model`) through the SDK; answers its `text`. */
  async transcribe(req: TranscribeRequest): Promise<string> {
    try {
      const file = await toFile(req.bytes, req.filename, { type: req.mimeType });
      const r = await this.#client.audio.transcriptions.create({ file, model: req.model }, { signal: req.signal ?? null });
      return typeof r.text === 'string' ? r.text : '';
    } catch (err) {
      throw upstreamError(err);
    }
  }

  /** `POST /audio/speech` through the SDK; the audio body is handed on unread. */
  async speak(req: SpeakRequest): Promise<SpeechAudio> {
    let response: Response;
    try {
      response = await this.#client.audio.speech.create({ model: req.model, input: req.text, voice: req.voice }, { signal: req.signal ?? null });
    } catch (err) {
      throw upstreamError(err);
    }
    if (!response.body) throw completionRequestError('the upstream answered without a body');
    return { contentType: response.headers.get('content-type') || 'audio/mpeg', body: response.body };
  }
}
