import { providerReadiness, resolveProvider } from '../../llm/provider-readiness.js';
import type { ProvidersConfig } from '../../llm/provider-settings.js';
import type { RerankDialect } from '../../llm/provider-table.js';
import { ProviderError, completionRequestError, providerNotInitialize } from '../../llm/errors.js';

/** One ranked document: its index in the request and the model's relevance score. */
export interface RerankResult {
  readonly index: number;
  readonly score: number;
}

/**
 * Dify's invoke error classes, as a failed rerank model reports them: the knowledge-retrieval
 * node's `error_type`; the Service API answers `completion_request_error` with the message.
 */
export type RerankErrorType = 'InvokeConnectionError' | 'InvokeServerUnavailableError' | 'InvokeRateLimitError' | 'InvokeAuthorizationError' | 'InvokeBadRequestError';

/** A rerank model that could not be invoked (`completion_request_error`, 400). */
export class RerankInvokeError extends ProviderError {
  override name = 'RerankInvokeError';
  constructor(
    readonly errorType: RerankErrorType,
    message: string,
  ) {
    const e = completionRequestError(message);
    super(e.code, e.status, e.message);
  }
}

/** Why a rerank provider cannot be called here (`provider_not_initialize` text), or null when it can. */
export function rerankProblem(providers: ProvidersConfig, provider: string): string | null {
  const r = resolveProvider(providers, provider);
  const readiness = providerReadiness(providers, provider);
  if (!readiness.ready) return readiness.message;
  if (!r || dialectOf(r.builtin?.rerank, r.protocol) === undefined) {
    return `Model provider "${r?.name ?? provider}" has no rerank models here: rerank providers are those of the provider table with a rerank protocol (jina, cohere, voyage, huggingface_tei, siliconflow, xinference, localai, …) or one added under providers: with protocol openai.`;
  }
  return null;
}

function dialectOf(own: RerankDialect | undefined, protocol: string): RerankDialect | undefined {
  return own ?? (protocol === 'openai-compatible' ? 'cohere' : undefined);
}

function statusError(provider: string, status: number, detail: string): RerankInvokeError {
  const type: RerankErrorType =
    status === 401 || status === 403 ? 'InvokeAuthorizationError' : status === 429 ? 'InvokeRateLimitError' : status >= 500 ? 'InvokeServerUnavailableError' : 'InvokeBadRequestError';
  return new RerankInvokeError(type, `[${provider}] rerank model failed: the server answered ${status}${detail ? `: ${detail}` : ''}`);
}

/** The error text of a failed answer: `error.message`, `message`, `detail`, or the start of the body. */
function detailOf(body: string): string {
  try {
    const j = JSON.parse(body) as Record<string, unknown>;
    const e = j.error;
    const m = (typeof e === 'object' && e !== null ? (e as Record<string, unknown>).message : e) ?? j.message ?? j.detail;
    if (typeof m === 'string') return m.slice(0, 500);
  } catch {
    // not JSON: the text itself
  }
  return body.slice(0, 500);
}

/** Reads the ranked documents of an answer in `dialect`; throws when it does not have them. */
function resultsOf(dialect: RerankDialect, body: unknown, count: number): RerankResult[] {
  const list = dialect === 'tei' ? body : dialect === 'voyage' ? (body as { data?: unknown })?.data : (body as { results?: unknown })?.results;
  if (!Array.isArray(list)) throw new Error(dialect === 'tei' ? 'the answer is not a list' : `the answer has no ${dialect === 'voyage' ? 'data' : 'results'} list`);
  return list.map((r: unknown, i) => {
    const o = (typeof r === 'object' && r !== null ? r : {}) as Record<string, unknown>;
    const score = dialect === 'tei' ? o.score : o.relevance_score;
    if (typeof o.index !== 'number' || !Number.isInteger(o.index) || o.index < 0 || o.index >= count || typeof score !== 'number' || !Number.isFinite(score)) {
      throw new Error(`result ${i} has no valid index and ${dialect === 'tei' ? 'score' : 'relevance_score'}`);
    }
    return { index: o.index, score };
  });
}

/**
 * Calls rerank models through the providers' rerank endpoints (`POST {base}/rerank`), with the
 * provider's `NAME_API_KEY` / `NAME_BASE_URL` (or `providers:` of dovetail.yaml), as the chat
 * models are configured. Each call is bounded by `RERANK_TIMEOUT_SECONDS`.
 */
export class RerankClient {
  readonly #providers: ProvidersConfig;
  readonly #timeoutMs: number;

  constructor(providers: ProvidersConfig, timeoutSeconds: number) {
    this.#providers = providers;
    this.#timeoutMs = timeoutSeconds * 1000;
  }

  /** Null when `provider` can rerank here, else why not (naming the setting). */
  problem(provider: string): string | null {
    return rerankProblem(this.#providers, provider);
  }

  /** The documents' scores, best first (at most `topN`). */
  async rerank(provider: string, model: string, query: string, documents: readonly string[], topN: number, signal?: AbortSignal): Promise<RerankResult[]> {
    const problem = this.problem(provider);
    if (problem) throw providerNotInitialize(problem);
    if (documents.length === 0) return [];
    const r = resolveProvider(this.#providers, provider)!;
    const dialect = dialectOf(r.builtin?.rerank, r.protocol)!;
    const body =
      dialect === 'tei'
        ? { query, texts: documents, raw_scores: false, return_text: false }
        : dialect === 'voyage'
          ? { model, query, documents, top_k: topN }
          : { model, query, documents, top_n: topN, return_documents: false };
    const url = `${r.settings.baseUrl!.replace(/\/+$/, '')}/rerank`;
    const timeout = AbortSignal.timeout(this.#timeoutMs);
    let res: Response;
    let text: string;
    try {
      res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json', ...(r.settings.apiKey ? { authorization: `Bearer ${r.settings.apiKey}` } : {}) },
        body: JSON.stringify(body),
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      });
      text = await res.text();
    } catch (err) {
      if (signal?.aborted) throw err;
      if (timeout.aborted) throw new RerankInvokeError('InvokeConnectionError', `[${r.name}] rerank model failed: ${url} did not answer within ${this.#timeoutMs / 1000}s (RERANK_TIMEOUT_SECONDS)`);
      const cause = err instanceof Error && err.cause instanceof Error ? err.cause.message : String(err);
      throw new RerankInvokeError('InvokeConnectionError', `[${r.name}] rerank model failed: cannot connect to ${new URL(url).host}: ${cause}`);
    }
    if (!res.ok) throw statusError(r.name, res.status, detailOf(text));
    let results: RerankResult[];
    try {
      results = resultsOf(dialect, JSON.parse(text), documents.length);
    } catch (err) {
      throw new RerankInvokeError('InvokeBadRequestError', `[${r.name}] rerank model failed: malformed answer (${(err as Error).message})`);
    }
    return results.sort((a, b) => b.score - a.score).slice(0, topN);
  }
}
