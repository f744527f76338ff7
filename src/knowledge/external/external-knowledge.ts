import { RemoteFetchError, sendRemote } from '../../files/remote-fetch.js';
import { invalidParam } from '../../infra/errors.js';
import type { DatasetTable } from '../../store/schema.js';

/** What an external dataset stores (`datasets.external_knowledge`, JSON). */
export interface ExternalKnowledge {
  /** Dify's `external_knowledge_api_id` / `_name`: the API this dataset is bound to (one per dataset here). */
  readonly apiId: string;
  readonly apiName: string;
  /** Base URL: retrieval is `POST {endpoint}/retrieval`. */
  readonly endpoint: string;
  /** The bearer key, sealed (SecretBox) at rest. */
  readonly apiKey: string;
  /** `external_knowledge_id`: the knowledge base id on the external side. */
  readonly knowledgeId: string;
  /** `external_retrieval_model`. */
  readonly topK: number;
  readonly scoreThresholdEnabled: boolean;
  readonly scoreThreshold: number;
}

/** One record the external API returned (Dify's `records[]`). */
export interface ExternalRecord {
  readonly content: string;
  readonly title: string;
  readonly score: number;
  readonly metadata: Readonly<Record<string, unknown>> | null;
}

/** The external knowledge of a dataset row, or null for Dovetail's own knowledge bases. */
export function externalOf(ds: Pick<DatasetTable, 'external_knowledge'>): ExternalKnowledge | null {
  return ds.external_knowledge ? (JSON.parse(ds.external_knowledge) as ExternalKnowledge) : null;
}

/**
 * Dify's refusal of document writes on an external dataset (its `create-by-file` and
 * `update-by-file`: 400 `invalid_param`); Dovetail gives it to every document write.
 */
export function refuseExternal(ds: Pick<DatasetTable, 'external_knowledge'>): void {
  if (ds.external_knowledge) throw invalidParam('External datasets are not supported.');
}

/** Checks a new external dataset's settings; throws `invalid_param` naming the field. */
export function checkExternal(input: { endpoint: unknown; apiKey: unknown; knowledgeId: unknown; topK?: unknown; scoreThreshold?: unknown }, topKMax: number) {
  let url: URL;
  try {
    url = new URL(String(input.endpoint));
  } catch {
    throw invalidParam('endpoint must be an http(s) URL.');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw invalidParam('endpoint must be an http(s) URL.');
  if (typeof input.apiKey !== 'string' || input.apiKey === '') throw invalidParam('api_key is required.');
  if (typeof input.knowledgeId !== 'string' || input.knowledgeId === '') throw invalidParam('external_knowledge_id is required.');
  const topK = input.topK ?? 2;
  if (typeof topK !== 'number' || !Number.isInteger(topK) || topK < 1 || topK > topKMax) throw invalidParam(`top_k must be an integer between 1 and ${topKMax}.`);
  const t = input.scoreThreshold ?? null;
  if (t !== null && (typeof t !== 'number' || t < 0 || t > 1)) throw invalidParam('score_threshold must be a number between 0 and 1.');
  return { endpoint: String(input.endpoint).replace(/\/+$/, ''), apiKey: input.apiKey, knowledgeId: input.knowledgeId, topK, scoreThresholdEnabled: t !== null, scoreThreshold: t ?? 0 };
}

/** Dify's `external_knowledge_info` and `external_retrieval_model` of a dataset object. */
export function externalToWire(e: ExternalKnowledge | null): { external_knowledge_info: unknown; external_retrieval_model: unknown } {
  if (!e) return { external_knowledge_info: null, external_retrieval_model: null };
  return {
    external_knowledge_info: { external_knowledge_id: e.knowledgeId, external_knowledge_api_id: e.apiId, external_knowledge_api_name: e.apiName, external_knowledge_api_endpoint: e.endpoint },
    external_retrieval_model: { top_k: e.topK, score_threshold: e.scoreThreshold, score_threshold_enabled: e.scoreThresholdEnabled },
  };
}

/**
 * The External Knowledge API's error codes, with the messages its specification gives them
 * (Dify's documentation of the API).
 */
const ERROR_CODES: Readonly<Record<number, string>> = {
  1001: "Invalid Authorization header format. Expected 'Bearer <api-key>' format.",
  1002: 'Authorization failed',
  2001: 'The knowledge does not exist',
};

/**
 * Dify's `MetadataCondition` as the retrieval request's `metadata_condition` (`model_dump()` of
 * `{logical_operator, conditions: [{name, comparison_operator, value}]}`), sent only when the
 * retrieval filters by metadata.
 */
export interface ExternalMetadataCondition {
  readonly logical_operator: 'and' | 'or';
  readonly conditions: readonly { readonly name: string; readonly comparison_operator: unknown; readonly value: unknown }[];
}

/** A retrieval the external API did not answer with records: why, for the node's process_data and the log. */
export class ExternalRetrievalFailure extends Error {
  override name = 'ExternalRetrievalFailure';
}

export interface ExternalClientConfig {
  /** `SSRF_ALLOW_HOSTS`. */
  readonly allowHosts: readonly string[];
  /** `EXTERNAL_KNOWLEDGE_TIMEOUT_SECONDS`. */
  readonly timeoutSeconds: number;
  /** `EXTERNAL_KNOWLEDGE_MAX_RESPONSE_BYTES`. */
  readonly maxResponseBytes: number;
}

/**
 * Dify's External Knowledge API client: `POST {endpoint}/retrieval` with `knowledge_id`, `query` and
 * `retrieval_setting {top_k, score_threshold}`, `Authorization: Bearer key`, through the SSRF guard
 * (src/files/remote-fetch.ts). A 200 gives its `records`; anything else throws
 * `ExternalRetrievalFailure` naming the API's error code and message (1001, 1002, 2001, …) or the
 * network failure — callers do as Dify does with it (no records).
 */
export class ExternalKnowledgeClient {
  constructor(
    private readonly config: ExternalClientConfig,
    private readonly openKey: (sealed: string) => Promise<string>,
  ) {}

  /** The SSRF-guarded request options of every call to an external knowledge API. */
  #options(signal?: AbortSignal) {
    const ms = this.config.timeoutSeconds * 1000;
    return {
      maxBytes: this.config.maxResponseBytes,
      limitName: 'EXTERNAL_KNOWLEDGE_MAX_RESPONSE_BYTES',
      allowHosts: this.config.allowHosts,
      connectTimeoutMs: ms,
      readTimeoutMs: ms,
      totalTimeoutMs: ms,
      totalTimeoutName: 'EXTERNAL_KNOWLEDGE_TIMEOUT_SECONDS',
      credentialHeaders: ['authorization'],
      ...(signal ? { signal } : {}),
    };
  }

  /**
   * Dify's `ExternalDatasetService.check_endpoint_and_api_key`, run when an external knowledge API
   * is made: `POST {endpoint}/retrieval` with the bearer key and no body. Unreachable, 502, 404 or
   * 403 is refused with Dify's message (400 `invalid_param`; the key is not echoed); any other
   * answer is accepted, as Dify (a body-less call need not succeed).
   */
  async check(endpoint: string, apiKey: string): Promise<void> {
    const url = `${endpoint}/retrieval`;
    let status: number;
    try {
      status = (await sendRemote({ method: 'POST', url, headers: { authorization: `Bearer ${apiKey}` } }, this.#options())).status;
    } catch (err) {
      throw invalidParam(`failed to connect to the endpoint: ${url} (${err instanceof Error ? err.message : String(err)})`);
    }
    if (status === 502) throw invalidParam(`Bad Gateway: failed to connect to the endpoint: ${url}`);
    if (status === 404) throw invalidParam(`Not Found: failed to connect to the endpoint: ${url}`);
    if (status === 403) throw invalidParam('Forbidden: Authorization failed with api_key: ********');
  }

  async retrieve(
    e: ExternalKnowledge,
    query: string,
    settings: { topK: number; scoreThreshold: number; metadataCondition?: ExternalMetadataCondition },
    signal?: AbortSignal,
  ): Promise<ExternalRecord[]> {
    const key = await this.openKey(e.apiKey);
    const mc = settings.metadataCondition;
    const body = JSON.stringify({
      knowledge_id: e.knowledgeId,
      query,
      retrieval_setting: { top_k: settings.topK, score_threshold: settings.scoreThreshold },
      ...(mc
        ? { metadata_condition: { logical_operator: mc.logical_operator, conditions: mc.conditions.map((c) => ({ name: c.name, comparison_operator: c.comparison_operator, value: c.value ?? null })) } }
        : {}),
    });
    let res;
    try {
      res = await sendRemote({ method: 'POST', url: `${e.endpoint}/retrieval`, headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body }, this.#options(signal));
    } catch (err) {
      if (signal?.aborted) throw err;
      throw new ExternalRetrievalFailure(`the external knowledge API could not be reached: ${err instanceof RemoteFetchError || err instanceof Error ? err.message : String(err)}`);
    }
    const text = res.body.toString('utf8');
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = null;
    }
    if (res.status !== 200) {
      const o = (typeof json === 'object' && json !== null ? json : {}) as Record<string, unknown>;
      const code = typeof o.error_code === 'number' ? o.error_code : undefined;
      const msg = typeof o.error_msg === 'string' ? o.error_msg : code !== undefined ? ERROR_CODES[code] : undefined;
      throw new ExternalRetrievalFailure(`the external knowledge API answered ${res.status}${code !== undefined ? ` (error_code ${code}: ${msg ?? 'unknown error code'})` : msg ? `: ${msg}` : ''}`);
    }
    const records = (json as { records?: unknown } | null)?.records;
    if (!Array.isArray(records)) throw new ExternalRetrievalFailure('the external knowledge API answered 200 without a records list');
    const out: ExternalRecord[] = [];
    for (const r of records.slice(0, settings.topK)) {
      if (typeof r !== 'object' || r === null) continue;
      const o = r as Record<string, unknown>;
      if (typeof o.content !== 'string') continue;
      const score = typeof o.score === 'number' && Number.isFinite(o.score) ? o.score : 0;
      if (score < settings.scoreThreshold) continue;
      const metadata = typeof o.metadata === 'object' && o.metadata !== null && !Array.isArray(o.metadata) ? (o.metadata as Record<string, unknown>) : null;
      out.push({ content: o.content, title: typeof o.title === 'string' ? o.title : '', score, metadata });
    }
    return out;
  }
}
