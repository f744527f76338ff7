import { ToolError, type ToolProvider } from '../tool.js';
import { isRecord, str, type ProviderDeps } from './provider-deps.js';

/** Largest summary kept per page, in characters (as the wrapper Dify uses: 4000 in all). */
const MAX_CHARS = 4000;

/**
 * Wikipedia search through the MediaWiki API (`WIKIPEDIA_BASE_URL`, default
 * `https://{language}.wikipedia.org`): the top 3 pages' introductions as "Page: …\nSummary: …".
 */
export function wikipediaProvider(deps: ProviderDeps): ToolProvider {
  const template = deps.settings.baseUrl ?? 'https://{language}.wikipedia.org';
  return {
    name: 'wikipedia',
    tools: [
      {
        name: 'wikipedia_search',
        description: 'Searches Wikipedia and returns the summaries of the best matching pages.',
        parameters: [
          { name: 'query', type: 'string', form: 'llm', required: true, llmDescription: 'Key words for searching' },
          { name: 'language', type: 'string', form: 'form', required: false, default: 'en' },
        ],
        async invoke(p, ctx) {
          const q = str(p.query).trim();
          if (!q) throw new ToolError('Please input query', 'ToolParameterError');
          const lang = /^[a-z-]{2,12}$/.test(str(p.language)) ? str(p.language) : 'en';
          const api = `${template.replace('{language}', lang).replace(/\/+$/, '')}/w/api.php`;
          const search = await deps.http.json('wikipedia_search', { url: `${api}?${new URLSearchParams({ action: 'query', list: 'search', srsearch: q, srlimit: '3', format: 'json' })}` }, ctx.signal);
          const hits = isRecord(search) && isRecord(search.query) && Array.isArray(search.query.search) ? search.query.search.filter(isRecord).map((h) => str(h.title)) : [];
          if (hits.length === 0) return [{ type: 'text', text: 'No good Wikipedia Search Result was found' }];
          const pages = await deps.http.json('wikipedia_search', { url: `${api}?${new URLSearchParams({ action: 'query', prop: 'extracts', exintro: '1', explaintext: '1', redirects: '1', titles: hits.join('|'), format: 'json' })}` }, ctx.signal);
          const byTitle = new Map<string, string>();
          if (isRecord(pages) && isRecord(pages.query) && isRecord(pages.query.pages)) {
            for (const pg of Object.values(pages.query.pages)) if (isRecord(pg)) byTitle.set(str(pg.title), str(pg.extract));
          }
          const text = hits.filter((t) => byTitle.has(t)).map((t) => `Page: ${t}\nSummary: ${byTitle.get(t)}`).join('\n\n').slice(0, MAX_CHARS);
          return [{ type: 'text', text: text || 'No good Wikipedia Search Result was found' }];
        },
      },
    ],
  };
}
