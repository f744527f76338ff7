import { ToolError, type ToolProvider } from '../tool.js';
import { base, isRecord, str, type ProviderDeps } from './provider-deps.js';

/** A SearXNG instance's JSON search (`SEARXNG_BASE_URL`; the instance must enable the json format). */
export function searxngProvider(deps: ProviderDeps): ToolProvider {
  return {
    name: 'searxng',
    requiredSetting: 'SEARXNG_BASE_URL',
    tools: [
      {
        name: 'searxng_search',
        description: 'Searches the web through a SearXNG metasearch instance.',
        parameters: [
          { name: 'query', type: 'string', form: 'llm', required: true, llmDescription: 'The search query' },
          { name: 'search_type', type: 'select', form: 'form', required: false, default: 'general', options: ['general', 'images', 'videos', 'news', 'music', 'it', 'science', 'files', 'social media'] },
          { name: 'language', type: 'string', form: 'form', required: false },
          { name: 'max_results', type: 'number', form: 'form', required: false, default: 10 },
        ],
        async invoke(p, ctx) {
          const query = str(p.query).trim();
          if (!query) throw new ToolError('query is required', 'ToolParameterError');
          const url = new URL(`${base(deps.settings.baseUrl ?? '')}/search`);
          url.searchParams.set('q', query);
          url.searchParams.set('format', 'json');
          url.searchParams.set('categories', str(p.search_type) || 'general');
          if (str(p.language)) url.searchParams.set('language', str(p.language));
          const res = await deps.http.json('searxng_search', { url: url.href, headers: { accept: 'application/json' } }, ctx.signal);
          const max = typeof p.max_results === 'number' && p.max_results > 0 ? p.max_results : 10;
          const results = (isRecord(res) && Array.isArray(res.results) ? res.results.filter(isRecord) : []).slice(0, max);
          const text = results.map((r) => `${str(r.title)}\n${str(r.url)}\n${str(r.content)}`).join('\n\n');
          return [{ type: 'text', text }, ...results.map((r) => ({ type: 'json' as const, json: r }))];
        },
      },
    ],
  };
}
