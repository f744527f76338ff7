import { ToolError, type ToolProvider } from '../tool.js';
import { base, isRecord, str, type ProviderDeps } from './provider-deps.js';

const list = (v: unknown) => str(v).split(/[\s,]+/).filter(Boolean);

/** Tavily's search and extract APIs (`TAVILY_API_KEY`, `TAVILY_BASE_URL`, default https://api.tavily.com). */
export function tavilyProvider(deps: ProviderDeps): ToolProvider {
  const key = deps.settings.apiKey;
  const root = base(deps.settings.baseUrl ?? 'https://api.tavily.com');
  const post = (tool: string, path: string, payload: Record<string, unknown>, signal: AbortSignal) =>
    deps.http.json(tool, { method: 'POST', url: `${root}${path}`, headers: { 'content-type': 'application/json', authorization: `Bearer ${key ?? ''}` }, body: JSON.stringify(payload), secrets: [key] }, signal);
  return {
    name: 'tavily',
    requiredSetting: 'TAVILY_API_KEY',
    tools: [
      {
        name: 'tavily_search',
        description: 'A web search engine tuned for AI agents (Tavily Search): returns relevant results, optionally an answer.',
        parameters: [
          { name: 'query', type: 'string', form: 'llm', required: true, llmDescription: 'The search query' },
          { name: 'search_depth', type: 'select', form: 'form', required: false, default: 'basic', options: ['basic', 'advanced'] },
          { name: 'topic', type: 'select', form: 'form', required: false, default: 'general', options: ['general', 'news', 'finance'] },
          { name: 'days', type: 'number', form: 'form', required: false, default: 3 },
          { name: 'max_results', type: 'number', form: 'form', required: false, default: 5 },
          { name: 'include_answer', type: 'boolean', form: 'form', required: false, default: false },
          { name: 'include_images', type: 'boolean', form: 'form', required: false, default: false },
          { name: 'include_raw_content', type: 'boolean', form: 'form', required: false, default: false },
          { name: 'include_domains', type: 'string', form: 'form', required: false },
          { name: 'exclude_domains', type: 'string', form: 'form', required: false },
        ],
        async invoke(p, ctx) {
          const query = str(p.query).trim();
          if (!query) throw new ToolError('query is required', 'ToolParameterError');
          const payload: Record<string, unknown> = {
            query,
            search_depth: str(p.search_depth) || 'basic',
            topic: str(p.topic) || 'general',
            max_results: typeof p.max_results === 'number' ? p.max_results : 5,
            include_answer: p.include_answer === true,
            include_images: p.include_images === true,
            include_raw_content: p.include_raw_content === true,
          };
          if (payload.topic === 'news' && typeof p.days === 'number') payload.days = p.days;
          if (list(p.include_domains).length) payload.include_domains = list(p.include_domains);
          if (list(p.exclude_domains).length) payload.exclude_domains = list(p.exclude_domains);
          const res = await post('tavily_search', '/search', payload, ctx.signal);
          if (!isRecord(res)) throw new ToolError('tavily_search: the answer is not an object');
          const results = Array.isArray(res.results) ? res.results.filter(isRecord) : [];
          let text = '';
          if (typeof res.answer === 'string' && res.answer) text += `**Answer:** ${res.answer}\n\n`;
          text += results.map((r) => `**Title:** ${str(r.title)}\n**URL:** ${str(r.url)}\n**Content:** ${str(r.content)}`).join('\n\n');
          return [{ type: 'text', text }, { type: 'json', json: res }];
        },
      },
      {
        name: 'tavily_extract',
        description: 'Extracts the raw content of web pages by URL (Tavily Extract).',
        parameters: [
          { name: 'urls', type: 'string', form: 'llm', required: true, llmDescription: 'URLs to extract, separated by commas or spaces' },
          { name: 'include_images', type: 'boolean', form: 'form', required: false, default: false },
          { name: 'extract_depth', type: 'select', form: 'form', required: false, default: 'basic', options: ['basic', 'advanced'] },
        ],
        async invoke(p, ctx) {
          const urls = list(p.urls);
          if (urls.length === 0) throw new ToolError('urls is required', 'ToolParameterError');
          const res = await post('tavily_extract', '/extract', { urls, include_images: p.include_images === true, extract_depth: str(p.extract_depth) || 'basic' }, ctx.signal);
          if (!isRecord(res)) throw new ToolError('tavily_extract: the answer is not an object');
          const results = Array.isArray(res.results) ? res.results.filter(isRecord) : [];
          const text = results.map((r) => `URL: ${str(r.url)}\n\n${str(r.raw_content)}`).join('\n\n---\n\n');
          return [{ type: 'text', text }, { type: 'json', json: res }];
        },
      },
    ],
  };
}
