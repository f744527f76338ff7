import type OpenAI from 'openai';
import { completionRequestError, providerConnectionError } from './errors.js';
import { createUpstreamHttp, toResponse, type RawResponse, type SdkFetchInit, type UpstreamHttp } from './sdk-fetch.js';
import { readOpenAIStream } from './openai-stream.js';
import type { ResponseBody } from './upstream-body.js';
import { deferredIterable } from '../lib/deferred-iterable.js';
import { cancelSourceOf, type CancelSource } from '../lib/cancellation.js';
import {
  functionCallingModels,
  messagesText,
  type ChatMessage,
  type GenerateChunk,
  type GenerateRequest,
  type ModelProvider,
  type SpeakRequest,
  type SpeechAudio,
  type ModerateRequest,
  type TranscribeRequest,
} from './model-provider.js';

type OpenAISdk = typeof import('openai');
let sdkLoading: Promise<OpenAISdk> | undefined;
/** The SDK once loaded: its error classes are only ever met after it is. */
let sdkLoaded: OpenAISdk | undefined;

/**
 * The OpenAI SDK (~150 modules), loaded with the first request to a provider on it rather than at
 * start: a server that never calls such a provider never loads it (docs/speed.md, "Start-up").
 */
function loadOpenAI(): Promise<OpenAISdk> {
  sdkLoading ??= import('openai').then((sdk) => (sdkLoaded = sdk));
  return sdkLoading;
}

export interface OpenAIProviderOptions {
  readonly name: string;
  readonly apiKey: string;
  /** Base URL including `/v1`; default OpenAI's. For Azure: the resource endpoint (`https://NAME.openai.azure.com`). */
  readonly baseUrl?: string;
  /** OpenAI's own API (and Azure's) refuse parameters they do not know: send only OpenAI's. */
  readonly strictParams?: boolean;
  /**
   * Azure OpenAI: calls go to `{endpoint}/openai/deployments/{deployment}/…?api-version=…` with an
   * `api-key` header. The deployment is `deployment`, else the DSL's model name (as Dify's
   * `azure_openai`, where the model name is the deployment name).
   */
  readonly azure?: { readonly apiVersion: string; readonly deployment?: string };
  /** Idle time of a kept-alive connection (`createUpstreamHttp`). */
  readonly keepAliveMs?: number;
  /** `NAME_FUNCTION_CALLING` (`functionCallingModels`): which models call functions; unset = all. */
  readonly functionCalling?: string;
}

/** `completion_params` keys OpenAI's chat API knows; others (Dify UI settings) are dropped. */
const OPENAI_PARAMS = ['temperature', 'top_p', 'max_tokens', 'max_completion_tokens', 'presence_penalty', 'frequency_penalty', 'stop', 'seed', 'reasoning_effort'] as const;
/** More that OpenAI-compatible servers (vLLM, DashScope, SiliconFlow, …) take, sent to every provider but OpenAI and Azure. */
const COMPATIBLE_PARAMS = ['top_k', 'repetition_penalty', 'min_p', 'enable_thinking', 'thinking_budget', 'thinking'] as const;
/** Models that take `max_completion_tokens` instead of `max_tokens` (as Dify's OpenAI plugin). */
const COMPLETION_TOKENS_MODELS = /^(o1|o3|o4|gpt-5)/i;

/**
 * The DSL's `completion_params` the upstream knows, in OpenAI's wire form: `response_format` as
 * Dify's UI stores it (`text`, `json_object`, or `json_schema` with the schema in `json_schema`,
 * a JSON string) becomes OpenAI's object; an empty `stop` is left out.
 */
export function openAIParams(params: Readonly<Record<string, unknown>>, model: string, strict: boolean): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of OPENAI_PARAMS) if (params[k] !== undefined && params[k] !== null && params[k] !== '') out[k] = params[k];
  if (!strict) for (const k of COMPATIBLE_PARAMS) if (params[k] !== undefined && params[k] !== null && params[k] !== '') out[k] = params[k];
  if (Array.isArray(out.stop) && out.stop.length === 0) delete out.stop;
  if (out.max_tokens !== undefined && out.max_completion_tokens === undefined && COMPLETION_TOKENS_MODELS.test(model)) {
    out.max_completion_tokens = out.max_tokens;
    delete out.max_tokens;
  }
  const format = responseFormat(params.response_format, params.json_schema);
  if (format) out.response_format = format;
  return out;
}

function responseFormat(raw: unknown, schema: unknown): Record<string, unknown> | undefined {
  if (typeof raw === 'object' && raw !== null && !Array.isArray(raw)) return raw as Record<string, unknown>;
  if (typeof raw !== 'string' || raw === '') return undefined;
  const type = raw.toLowerCase();
  if (type === 'json_schema') {
    let parsed: unknown = schema;
    if (typeof schema === 'string') {
      try {
        parsed = JSON.parse(schema);
      } catch {
        throw completionRequestError('completion_params.json_schema must be a JSON object (response_format is json_schema)');
      }
    }
    if (typeof parsed !== 'object' || parsed === null) throw completionRequestError('completion_params.json_schema is required when response_format is json_schema');
    const p = parsed as Record<string, unknown>;
    // Dify accepts the bare schema too; OpenAI wants `{name, schema}`.
    const wrapped = 'schema' in p ? p : { name: 'response', schema: p };
    return { type: 'json_schema', json_schema: wrapped };
  }
  if (type === 'json' || type === 'json_object') return { type: 'json_object' };
  if (type === 'text') return { type: 'text' };
  return undefined;
}

type OpenAIContent = string | ({ type: 'text'; text: string } | { type: 'image_url'; image_url: { url: string; detail?: 'low' | 'high' } })[];

interface OpenAIMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: OpenAIContent;
  tool_calls?: { id: string; type: 'function'; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
}

function toOpenAIMessages(messages: readonly ChatMessage[]): OpenAIMessage[] {
  return messages.map((m) => {
    const out: OpenAIMessage = {
      role: m.role,
      content:
        typeof m.content === 'string'
          ? m.content
          : m.content.map((p) => (p.type === 'text' ? { type: 'text' as const, text: p.text } : { type: 'image_url' as const, image_url: { url: p.url, ...(p.detail ? { detail: p.detail } : {}) } })),
    };
    if (m.toolCalls?.length) out.tool_calls = m.toolCalls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } }));
    if (m.role === 'tool' && m.toolCallId !== undefined) out.tool_call_id = m.toolCallId;
    return out;
  });
}

/** `tools` / `tool_choice` of a chat request, when the caller offers functions. */
function toolFields(req: GenerateRequest): Record<string, unknown> {
  if (!req.tools?.length) return {};
  const tools = req.tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } }));
  const choice = req.toolChoice;
  if (choice === undefined) return { tools };
  return { tools, tool_choice: typeof choice === 'string' ? choice : { type: 'function', function: { name: choice.name } } };
}

/** Turns an SDK failure into `completion_request_error` with the upstream's own message (a connection failure names `provider` and its host). */
function upstreamError(err: unknown, provider?: { readonly name: string; readonly url: string | undefined }): Error {
  const OpenAI = sdkLoaded?.default;
  if (!OpenAI) return completionRequestError(err instanceof Error ? err.message : String(err));
  if (err instanceof OpenAI.APIUserAbortError) return err;
  if (err instanceof OpenAI.APIConnectionError && provider) return providerConnectionError(provider.name, provider.url, err);
  if (err instanceof OpenAI.APIError) {
    const body = err.error as { message?: unknown } | undefined;
    const detail = typeof body?.message === 'string' ? body.message : err.message;
    return completionRequestError(err.status ? `[${err.status}] ${detail}` : detail);
  }
  return completionRequestError(err instanceof Error ? err.message : String(err));
}

type Endpoint = '/chat/completions' | '/completions';

/** Prepared requests kept per provider (Azure: one per endpoint and deployment). */
const MAX_PREPARED = 64;

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
  readonly toolCalling = true;
  readonly callsFunctions: (model: string) => boolean;
  readonly #options: OpenAIProviderOptions;
  #client: Promise<OpenAI> | undefined;
  readonly #http: UpstreamHttp;
  readonly #prepared = new Map<string, Promise<PreparedRequest>>();
  readonly #strict: boolean;
  readonly #azure: OpenAIProviderOptions['azure'];
  /** Who a connection failure names: this provider and its base URL. */
  readonly #where: { readonly name: string; readonly url: string | undefined };

  constructor(opts: OpenAIProviderOptions) {
    this.name = opts.name;
    this.#strict = opts.strictParams === true;
    this.callsFunctions = functionCallingModels(opts.functionCalling);
    this.#azure = opts.azure;
    this.#where = { name: opts.name, url: opts.baseUrl ?? (opts.azure ? undefined : 'https://api.openai.com/v1') };
    this.#options = opts;
    this.#http = createUpstreamHttp({ keepAliveMs: opts.keepAliveMs });
  }

  /** The SDK's client, made on first use (`loadOpenAI`). */
  #sdkClient(): Promise<OpenAI> {
    const opts = this.#options;
    this.#client ??= loadOpenAI().then(({ default: OpenAI, AzureOpenAI }) =>
      opts.azure
        ? // The base URL is given whole: the SDK would otherwise read OPENAI_BASE_URL / AZURE_OPENAI_* from the environment.
          new AzureOpenAI({
            apiKey: opts.apiKey,
            baseURL: `${(opts.baseUrl ?? '').replace(/\/+$/, '').replace(/\/openai$/, '')}/openai`,
            apiVersion: opts.azure.apiVersion,
            maxRetries: 0,
            fetch: this.#http.fetch,
          })
        : new OpenAI({ apiKey: opts.apiKey, baseURL: opts.baseUrl, maxRetries: 0, fetch: this.#http.fetch }),
    );
    this.#client.catch(() => {
      this.#client = undefined;
    });
    return this.#client;
  }

  /** The SDK's request for `path` (Azure: and the model's deployment), built on first use. */
  #request(path: Endpoint, model: string): Promise<PreparedRequest> {
    const deployment = this.#azure ? (this.#azure.deployment ?? model) : undefined;
    const key = deployment === undefined ? path : `${path}\0${deployment}`;
    let p = this.#prepared.get(key);
    if (!p) {
      if (this.#prepared.size >= MAX_PREPARED) this.#prepared.clear();
      p = this.#sdkClient().then((client) => client.buildRequest({ method: 'post', path, body: deployment === undefined ? {} : { model: deployment } })).then(({ url, req }) => {
        const headers: Record<string, string> = {};
        new Headers(req.headers as HeadersInit).forEach((v, k) => (headers[k] = v));
        return { url, headers };
      });
      p.catch(() => this.#prepared.delete(key));
      this.#prepared.set(key, p);
    }
    return p;
  }

  /** Sends `body` to `path` as a streaming request; non-2xx answers become the SDK's errors. */
  async #post(path: Endpoint, body: Record<string, unknown>, req: GenerateRequest, cancel: CancelSource | undefined): Promise<RawResponse> {
    const { url, headers } = await this.#request(path, String(body.model));
    const OpenAI = sdkLoaded!.default; // loaded by the request just prepared
    let raw: RawResponse;
    try {
      const init: SdkFetchInit = { method: 'POST', headers, body: JSON.stringify(body), cancel, onRequestSent: req.onSent };
      raw = await this.#http.request(url, init);
    } catch (err) {
      if (cancel?.aborted) throw new OpenAI.APIUserAbortError();
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

  stream(req: GenerateRequest): AsyncIterable<GenerateChunk> {
    // The body is read by `readOpenAIStream`, several times faster than the SDK's per-event iterator.
    let body: ResponseBody | null = null;
    return deferredIterable(async () => {
      const params = openAIParams(req.params, req.model, this.#strict);
      // the request's own cancellation (no `AbortSignal` made for it), for the request and the reader
      const cancel = cancelSourceOf(req);
      try {
        const response =
          req.mode === 'completion'
            ? await this.#post('/completions', { model: req.model, prompt: req.prompt ?? messagesText(req.messages), stream: true, stream_options: { include_usage: true }, ...params }, req, cancel)
            : await this.#post('/chat/completions', { model: req.model, messages: toOpenAIMessages(req.messages), stream: true, stream_options: { include_usage: true }, ...params, ...toolFields(req) }, req, cancel);
        body = response.body;
      } catch (err) {
        throw upstreamError(err, this.#where);
      }
      if (!body) throw completionRequestError('the upstream answered without a body');
      return readOpenAIStream(body, cancel);
    }, () => void body?.cancel().catch(() => undefined)); // a stop before the first read; once read, `readOpenAIStream` closes it
  }

  /** `POST /audio/transcriptions` (multipart `file` + `model`) through the SDK; answers its `text`. */
  async transcribe(req: TranscribeRequest): Promise<string> {
    try {
      const { toFile } = await loadOpenAI();
      const file = await toFile(req.bytes, req.filename, { type: req.mimeType });
      const r = await (await this.#sdkClient()).audio.transcriptions.create({ file, model: req.model }, { signal: req.signal ?? null });
      return typeof r.text === 'string' ? r.text : '';
    } catch (err) {
      throw upstreamError(err, this.#where);
    }
  }

  /** `POST /moderations` through the SDK: flagged when any result is. */
  async moderate(req: ModerateRequest): Promise<boolean> {
    try {
      const r = await (await this.#sdkClient()).moderations.create({ model: req.model, input: [...req.texts] }, { signal: req.signal ?? null });
      return r.results.some((x) => x.flagged === true);
    } catch (err) {
      throw upstreamError(err);
    }
  }

  /** `POST /audio/speech` through the SDK; the audio body is handed on unread. */
  async speak(req: SpeakRequest): Promise<SpeechAudio> {
    let response: Response;
    try {
      response = await (await this.#sdkClient()).audio.speech.create({ model: req.model, input: req.text, voice: req.voice }, { signal: req.signal ?? null });
    } catch (err) {
      throw upstreamError(err, this.#where);
    }
    if (!response.body) throw completionRequestError('the upstream answered without a body');
    return { contentType: response.headers.get('content-type') || 'audio/mpeg', body: response.body };
  }
}
