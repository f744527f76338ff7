import { ToolError, type ToolProvider } from '../tool.js';
import { base, isRecord, str, type ProviderDeps } from './provider-deps.js';

/** Jina's reader (`JINA_BASE_URL`, default https://r.jina.ai) and search (`JINA_SEARCH_BASE_URL`, default https://s.jina.ai). */
export function jinaProvider(deps: ProviderDeps & { readonly searchBaseUrl?: string | undefined }): ToolProvider {
  const key = deps.settings.apiKey;
  const headers = (extra: Record<string, string> = {}) => ({ accept: 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}), ...extra });
  const readerBase = base(deps.settings.baseUrl ?? 'https://r.jina.ai');
  const searchBase = base(deps.searchBaseUrl ?? 'https://s.jina.ai');
  return {
    name: 'jina',
    tools: [
      {
        name: 'jina_reader',
        description: 'Fetches a web page by URL and returns its content as LLM-friendly markdown (Jina Reader).',
        parameters: [
          { name: 'url', type: 'string', form: 'llm', required: true, llmDescription: 'The URL of the page to read' },
          { name: 'target_selector', type: 'string', form: 'form', required: false },
          { name: 'wait_for_selector', type: 'string', form: 'form', required: false },
          { name: 'image_caption', type: 'boolean', form: 'form', required: false, default: false },
          { name: 'gather_all_links_at_the_end', type: 'boolean', form: 'form', required: false, default: false },
          { name: 'gather_all_images_at_the_end', type: 'boolean', form: 'form', required: false, default: false },
          { name: 'no_cache', type: 'boolean', form: 'form', required: false, default: false },
        ],
        async invoke(p, ctx) {
          const url = str(p.url).trim();
          if (!url) throw new ToolError('url is required', 'ToolParameterError');
          const h: Record<string, string> = {};
          if (str(p.target_selector)) h['x-target-selector'] = str(p.target_selector);
          if (str(p.wait_for_selector)) h['x-wait-for-selector'] = str(p.wait_for_selector);
          if (p.image_caption === true) h['x-with-generated-alt'] = 'true';
          if (p.gather_all_links_at_the_end === true) h['x-with-links-summary'] = 'true';
          if (p.gather_all_images_at_the_end === true) h['x-with-images-summary'] = 'true';
          if (p.no_cache === true) h['x-no-cache'] = 'true';
          const body = await deps.http.json('jina_reader', { method: 'POST', url: `${readerBase}/`, headers: headers({ 'content-type': 'application/json', ...h }), body: JSON.stringify({ url }), secrets: [key] }, ctx.signal);
          const data = isRecord(body) && isRecord(body.data) ? body.data : undefined;
          if (!data) throw new ToolError('jina_reader: the answer has no data');
          return [{ type: 'text', text: str(data.content) }, { type: 'json', json: data }];
        },
      },
      {
        name: 'jina_search',
        description: 'Searches the web and returns the top results with their content (Jina Search).',
        parameters: [
          { name: 'query', type: 'string', form: 'llm', required: true, llmDescription: 'The search query' },
          { name: 'max_retries', type: 'number', form: 'form', required: false, default: 3 },
        ],
        async invoke(p, ctx) {
          const q = str(p.query).trim();
          if (!q) throw new ToolError('query is required', 'ToolParameterError');
          const body = await deps.http.json('jina_search', { url: `${searchBase}/${encodeURIComponent(q)}`, headers: headers(), secrets: [key] }, ctx.signal);
          const results = isRecord(body) && Array.isArray(body.data) ? body.data.filter(isRecord) : [];
          const text = results.map((r) => `[${str(r.title)}](${str(r.url)})\n${str(r.description || r.content)}`).join('\n\n');
          return [{ type: 'text', text }, { type: 'json', json: { data: results } }];
        },
      },
    ],
  };
}
