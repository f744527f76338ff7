import { RemoteFetchError, sendRemote } from '../../files/remote-fetch.js';
import { isObject } from '../../infra/objects.js';

/** A crawled page as Dify's website-crawl datasources give it. */
export interface CrawledPage {
  readonly source_url: string;
  readonly content: string;
  readonly title: string;
  readonly description: string;
}

export interface CrawlerSettings {
  readonly jina: { readonly apiKey?: string | undefined; readonly baseUrl?: string | undefined };
  readonly firecrawl: { readonly apiKey?: string | undefined; readonly baseUrl?: string | undefined };
  /** `SSRF_ALLOW_HOSTS`. */
  readonly allowHosts: readonly string[];
  /** `TOOL_REQUEST_TIMEOUT` (seconds): one request's longest wait. */
  readonly timeoutSeconds: number;
  /** `TOOL_RESPONSE_MAX_SIZE`: the largest answer read. */
  readonly maxResponseBytes: number;
  /** `PIPELINE_CRAWL_MAX_PAGES`. */
  readonly maxPages: number;
  /** `WORKFLOW_MAX_EXECUTION_TIME` (ms): the longest a crawl job is waited for. */
  readonly maxCrawlMs: number;
  /** Wait between two polls of a Firecrawl crawl job, ms. */
  readonly pollMs?: number;
}

/** A crawl that cannot run or failed: the message names the provider and, for a missing key, the setting. */
export class CrawlError extends Error {
  override name = 'CrawlError';
}

const str = (v: unknown): string => (typeof v === 'string' ? v : '');
const truthy = (v: unknown): boolean => v === true || v === 'true' || v === 1 || v === '1';
const base = (url: string) => url.replace(/\/+$/, '');
/** Dify's path lists: `blog/*, /about/*` → `['blog/*', '/about/*']`. */
const pathList = (v: unknown): string[] | undefined => {
  const list = Array.isArray(v) ? v.map(String) : str(v).split(',');
  const out = list.map((s) => s.trim()).filter((s) => s !== '');
  return out.length ? out : undefined;
};

/**
 * Website crawls of knowledge pipelines through Jina Reader (`POST {JINA_BASE_URL}/` with the
 * page's URL: the page as Markdown) and Firecrawl (`POST {FIRECRAWL_BASE_URL}/v1/scrape`, or
 * `/v1/crawl` and its job's `GET /v1/crawl/{id}` when sub-pages are asked for), every request
 * through the SSRF guard.
 */
export class Crawlers {
  readonly #s: CrawlerSettings;

  constructor(settings: CrawlerSettings) {
    this.#s = settings;
  }

  /** `url` and the provider's parameters (Dify's `datasource_parameters`) → pages; `progress` hears (total, completed). */
  async crawl(provider: string, params: Readonly<Record<string, unknown>>, progress: (total: number, completed: number) => void, signal: AbortSignal): Promise<CrawledPage[]> {
    const url = str(params.url).trim();
    if (!/^https?:\/\/\S+$/i.test(url)) throw new CrawlError(`url must be an http(s) URL, got ${JSON.stringify(params.url ?? null)}`);
    if (provider === 'jina') return this.#jina(url, progress, signal);
    if (provider === 'firecrawl') return this.#firecrawl(url, params, progress, signal);
    throw new CrawlError(`website crawl provider "${provider}" is not available here (jina, firecrawl)`);
  }

  async #request(what: string, method: string, url: string, key: string | undefined, body: unknown, signal: AbortSignal): Promise<unknown> {
    let res;
    try {
      res = await sendRemote(
        {
          method,
          url,
          headers: { accept: 'application/json', ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...(key ? { authorization: `Bearer ${key}` } : {}) },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        },
        {
          maxBytes: this.#s.maxResponseBytes,
          limitName: 'TOOL_RESPONSE_MAX_SIZE',
          allowHosts: this.#s.allowHosts,
          connectTimeoutMs: this.#s.timeoutSeconds * 1000,
          readTimeoutMs: this.#s.timeoutSeconds * 1000,
          totalTimeoutMs: this.#s.timeoutSeconds * 1000,
          totalTimeoutName: 'TOOL_REQUEST_TIMEOUT',
          signal,
        },
      );
    } catch (err) {
      if (signal.aborted) throw err;
      if (err instanceof RemoteFetchError) throw new CrawlError(`${what}: ${err.message}`);
      throw err;
    }
    const text = res.body.toString('utf8');
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new CrawlError(`${what}: HTTP ${res.status}, not JSON: ${text.slice(0, 200)}`);
    }
    if (res.status >= 400) {
      const msg = isObject(json) ? str(json.error) || str(json.message) || str(json.readableMessage) : '';
      throw new CrawlError(`${what}: HTTP ${res.status}${msg ? `: ${msg}` : ''}`);
    }
    return json;
  }

  async #jina(url: string, progress: (total: number, completed: number) => void, signal: AbortSignal): Promise<CrawledPage[]> {
    const s = this.#s.jina;
    progress(1, 0);
    const body = await this.#request('Jina Reader', 'POST', `${base(s.baseUrl ?? 'https://r.jina.ai')}/`, s.apiKey, { url }, signal);
    const data = isObject(body) && isObject(body.data) ? body.data : undefined;
    if (!data) throw new CrawlError('Jina Reader: the answer has no data');
    progress(1, 1);
    return [{ source_url: str(data.url) || url, content: str(data.content), title: str(data.title), description: str(data.description) }];
  }

  async #firecrawl(url: string, params: Readonly<Record<string, unknown>>, progress: (total: number, completed: number) => void, signal: AbortSignal): Promise<CrawledPage[]> {
    const s = this.#s.firecrawl;
    if (!s.apiKey) throw new CrawlError('Firecrawl is not configured: set FIRECRAWL_API_KEY (or tools.firecrawl.api_key in dovetail.yaml)');
    const api = base(s.baseUrl ?? 'https://api.firecrawl.dev');
    const onlyMain = params.only_main_content === undefined || params.only_main_content === '' ? true : truthy(params.only_main_content);
    const page = (d: unknown): CrawledPage => {
      const r = isObject(d) ? d : {};
      const meta = isObject(r.metadata) ? r.metadata : {};
      return { source_url: str(meta.sourceURL) || str(meta.url) || url, content: str(r.markdown), title: str(meta.title), description: str(meta.description) };
    };
    if (!truthy(params.crawl_subpages)) {
      progress(1, 0);
      const body = await this.#request('Firecrawl scrape', 'POST', `${api}/v1/scrape`, s.apiKey, { url, formats: ['markdown'], onlyMainContent: onlyMain }, signal);
      if (!isObject(body) || body.success !== true || !isObject(body.data)) throw new CrawlError(`Firecrawl scrape: ${isObject(body) ? str(body.error) || 'the answer has no data' : 'the answer has no data'}`);
      progress(1, 1);
      return [page(body.data)];
    }
    const asked = Number(params.limit);
    const limit = Math.min(Number.isInteger(asked) && asked > 0 ? asked : this.#s.maxPages, this.#s.maxPages);
    const depth = Number(params.max_depth);
    const started = await this.#request('Firecrawl crawl', 'POST', `${api}/v1/crawl`, s.apiKey, {
      url,
      limit,
      ...(Number.isInteger(depth) && depth >= 0 && params.max_depth !== '' && params.max_depth !== null ? { maxDepth: depth } : {}),
      ...(pathList(params.include_paths) ? { includePaths: pathList(params.include_paths) } : {}),
      ...(pathList(params.exclude_paths) ? { excludePaths: pathList(params.exclude_paths) } : {}),
      scrapeOptions: { formats: ['markdown'], onlyMainContent: onlyMain },
    }, signal);
    const id = isObject(started) ? str(started.id) : '';
    if (!id) throw new CrawlError(`Firecrawl crawl: ${isObject(started) ? str(started.error) || 'no job id in the answer' : 'no job id in the answer'}`);
    const deadline = Date.now() + this.#s.maxCrawlMs;
    for (;;) {
      if (Date.now() > deadline) throw new CrawlError(`Firecrawl crawl ${id} did not complete within ${Math.round(this.#s.maxCrawlMs / 1000)}s (WORKFLOW_MAX_EXECUTION_TIME)`);
      const job = await this.#request('Firecrawl crawl status', 'GET', `${api}/v1/crawl/${encodeURIComponent(id)}`, s.apiKey, undefined, signal);
      if (!isObject(job)) throw new CrawlError('Firecrawl crawl status: not an object');
      const total = Number(job.total) || 0;
      const completed = Number(job.completed) || 0;
      progress(total, completed);
      if (job.status === 'completed') return (Array.isArray(job.data) ? job.data : []).slice(0, limit).map(page);
      if (job.status === 'failed' || job.status === 'cancelled') throw new CrawlError(`Firecrawl crawl ${id} ${String(job.status)}${str(job.error) ? `: ${str(job.error)}` : ''}`);
      await new Promise<void>((resolve, reject) => {
        const t = setTimeout(resolve, this.#s.pollMs ?? 2000);
        signal.addEventListener('abort', () => (clearTimeout(t), reject(signal.reason as Error)), { once: true });
      });
    }
  }
}
