import type { BedrockRuntimeClient, ContentBlock, ConverseStreamCommandInput, Message, SystemContentBlock } from '@aws-sdk/client-bedrock-runtime';
import { completionRequestError, providerConnectionError } from './errors.js';
import type { ChatMessage, GenerateChunk, GenerateRequest, ModelProvider } from './model-provider.js';
import { ThinkWrap } from './think-wrap.js';

export interface BedrockProviderOptions {
  readonly region: string;
  /** Endpoint URL (`BEDROCK_BASE_URL`); unset = AWS's for the region. */
  readonly endpoint?: string;
  readonly credentials: { readonly accessKeyId: string; readonly secretAccessKey: string; readonly sessionToken?: string };
}

const IMAGE_FORMATS: Readonly<Record<string, 'png' | 'jpeg' | 'gif' | 'webp'>> = { 'image/png': 'png', 'image/jpeg': 'jpeg', 'image/jpg': 'jpeg', 'image/gif': 'gif', 'image/webp': 'webp' };

/** Converse content: text as is; a `data:` image as bytes; an http(s) image (Converse takes only bytes or S3) as its URL in text. */
function toContent(content: ChatMessage['content']): ContentBlock[] {
  if (typeof content === 'string') return [{ text: content }];
  return content.map((p): ContentBlock => {
    if (p.type === 'text') return { text: p.text };
    const m = /^data:([^;,]+);base64,(.*)$/s.exec(p.url);
    const format = m ? IMAGE_FORMATS[m[1]!.toLowerCase()] : undefined;
    return m && format ? { image: { format, source: { bytes: Buffer.from(m[2]!, 'base64') } } } : { text: `[image: ${p.url}]` };
  });
}

/** `completion_params` Converse knows: its `inferenceConfig`, and `top_k` / Claude's thinking as model fields. */
function converseParams(p: Readonly<Record<string, unknown>>): Pick<ConverseStreamCommandInput, 'inferenceConfig' | 'additionalModelRequestFields'> {
  const num = (k: string) => (typeof p[k] === 'number' ? (p[k] as number) : undefined);
  const thinking = p.thinking === true || p.reasoning_type === 'enabled';
  const inference = {
    ...(num('max_tokens') !== undefined ? { maxTokens: num('max_tokens') } : {}),
    ...(num('temperature') !== undefined && !thinking ? { temperature: num('temperature') } : {}),
    ...(num('top_p') !== undefined && !thinking ? { topP: num('top_p') } : {}),
    ...(Array.isArray(p.stop) && p.stop.length > 0 ? { stopSequences: p.stop.map(String) } : {}),
  };
  const extra: Record<string, unknown> = {};
  if (num('top_k') !== undefined && !thinking) extra.top_k = num('top_k');
  if (thinking) extra.thinking = { type: 'enabled', budget_tokens: num('thinking_budget') ?? num('budget_tokens') ?? 1024 };
  return {
    ...(Object.keys(inference).length > 0 ? { inferenceConfig: inference } : {}),
    ...(Object.keys(extra).length > 0 ? { additionalModelRequestFields: extra as ConverseStreamCommandInput['additionalModelRequestFields'] } : {}),
  };
}

/**
 * AWS Bedrock through the AWS SDK's Converse API (`ConverseStream`): one request shape for every
 * Bedrock chat model. The model name is the Bedrock model (or inference profile) id. Reasoning
 * deltas are wrapped in `<think>` as Dify's plugins do. No retries, so a stop or failure is seen at once.
 */
export class BedrockProvider implements ModelProvider {
  readonly name = 'bedrock';
  readonly #opts: BedrockProviderOptions;
  #client: Promise<{ client: BedrockRuntimeClient; Command: typeof import('@aws-sdk/client-bedrock-runtime').ConverseStreamCommand }> | undefined;

  constructor(opts: BedrockProviderOptions) {
    this.#opts = opts;
  }

  /** The SDK client, loaded on first use (the AWS SDK takes a few hundred ms to load; most servers never call Bedrock). */
  #sdk() {
    this.#client ??= Promise.all([import('@aws-sdk/client-bedrock-runtime'), import('@smithy/node-http-handler')]).then(([sdk, http]) => ({
      client: new sdk.BedrockRuntimeClient({
        region: this.#opts.region,
        ...(this.#opts.endpoint ? { endpoint: this.#opts.endpoint } : {}),
        credentials: { ...this.#opts.credentials },
        maxAttempts: 1,
        // HTTP/1.1: ConverseStream streams only the answer, and the SDK's default (HTTP/2, for
        // bidirectional streams) cannot talk to HTTP/1.1 endpoints such as proxies and local fakes.
        requestHandler: new http.NodeHttpHandler(),
      }),
      Command: sdk.ConverseStreamCommand,
    }));
    return this.#client;
  }

  async *stream(req: GenerateRequest): AsyncIterable<GenerateChunk> {
    const system: SystemContentBlock[] = req.messages.filter((m) => m.role === 'system').map((m) => ({ text: typeof m.content === 'string' ? m.content : m.content.map((p) => (p.type === 'text' ? p.text : '')).join('') }));
    const messages: Message[] =
      req.mode === 'completion' && req.prompt !== undefined
        ? [{ role: 'user', content: [{ text: req.prompt }] }]
        : req.messages.filter((m) => m.role !== 'system').map((m) => ({ role: m.role as 'user' | 'assistant', content: toContent(m.content) }));
    const input: ConverseStreamCommandInput = { modelId: req.model, messages, ...(system.length > 0 ? { system } : {}), ...converseParams(req.params) };
    const think = new ThinkWrap();
    try {
      const { client, Command } = await this.#sdk();
      const sent = client.send(new Command(input), { abortSignal: req.signal });
      req.onSent?.();
      const response = await sent;
      for await (const ev of response.stream ?? []) {
        if (ev.contentBlockDelta?.delta) {
          const d = ev.contentBlockDelta.delta;
          const text = think.next(d.reasoningContent?.text, d.text);
          if (text) yield { type: 'text', text };
        } else if (ev.metadata?.usage) {
          const close = think.end();
          if (close) yield { type: 'text', text: close };
          yield { type: 'usage', usage: { promptTokens: ev.metadata.usage.inputTokens, completionTokens: ev.metadata.usage.outputTokens } };
        } else {
          const failure = ev.internalServerException ?? ev.modelStreamErrorException ?? ev.validationException ?? ev.throttlingException ?? ev.serviceUnavailableException;
          if (failure) throw completionRequestError(failure.message ?? 'Bedrock reported an error in the stream');
        }
      }
      const close = think.end();
      if (close) yield { type: 'text', text: close };
    } catch (err) {
      if (req.signal?.aborted) throw req.signal.reason ?? err;
      throw upstreamError(err, this.name, this.#opts.endpoint ?? `https://bedrock-runtime.${this.#opts.region}.amazonaws.com`);
    }
  }
}

/** Node's codes of a connection that never got an answer. */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'TimeoutError']);

function upstreamError(err: unknown, provider: string, url: string): Error {
  if (err instanceof Error && err.name === 'ProviderError') return err;
  const e = err as { message?: string; $metadata?: { httpStatusCode?: number }; name?: string; code?: string };
  const status = e.$metadata?.httpStatusCode;
  if (!status && (NETWORK_CODES.has(e.code ?? '') || NETWORK_CODES.has(e.name ?? ''))) return providerConnectionError(provider, url, err);
  const message = e.message || e.name || String(err);
  return completionRequestError(status ? `[${status}] ${message}` : message);
}
