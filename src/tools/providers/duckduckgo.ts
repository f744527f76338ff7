import { ToolError, type ToolProvider } from '../tool.js';
import { base, isRecord, str, type ProviderDeps } from './provider-deps.js';

/**
 * DuckDuckGo (`DUCKDUCKGO_BASE_URL`, default https://duckduckgo.com), as the duckduckgo_search
 * library Dify's plugin uses talks to it: web results from the HTML page (`/html/`), news and
 * translation from the JSON endpoints, which need the page's `vqd` token first.
 */
export function duckduckgoProvider(deps: ProviderDeps): ToolProvider {
  const root = base(deps.settings.baseUrl ?? 'https://duckduckgo.com');
  const maxOf = (v: unknown, d: number) => (typeof v === 'number' && v > 0 ? Math.min(Math.floor(v), 50) : d);

  async function vqd(tool: string, q: string, signal: AbortSignal): Promise<string> {
    const res = await deps.http.send(tool, { url: `${root}/?q=${encodeURIComponent(q)}` }, signal);
    const m = /vqd=["']?([\d-]+)["']?/.exec(res.text);
    if (!m) throw new ToolError(`${tool}: DuckDuckGo gave no vqd token (the page changed or the request was rate limited)`);
    return m[1]!;
  }

  return {
    name: 'duckduckgo',
    tools: [
      {
        name: 'ddgo_search',
        description: 'Searches the web with DuckDuckGo.',
        parameters: [
          { name: 'query', type: 'string', form: 'llm', required: true, llmDescription: 'The search query' },
          { name: 'max_results', type: 'number', form: 'form', required: false, default: 5 },
        ],
        async invoke(p, ctx) {
          const q = str(p.query).trim();
          if (!q) throw new ToolError('query is required', 'ToolParameterError');
          const res = await deps.http.send('ddgo_search', { method: 'POST', url: `${root}/html/`, headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ q }).toString() }, ctx.signal);
          const $ = (await import('cheerio')).load(res.text); // loaded on first use (a large import)
          const results: { title: string; href: string; body: string }[] = [];
          $('.result').each((_, el) => {
            const a = $(el).find('.result__a').first();
            let href = a.attr('href') ?? '';
            const uddg = /[?&]uddg=([^&]+)/.exec(href);
            if (uddg) href = decodeURIComponent(uddg[1]!);
            if (a.length && href) results.push({ title: a.text().trim(), href, body: $(el).find('.result__snippet').text().trim() });
          });
          const top = results.slice(0, maxOf(p.max_results, 5));
          const text = top.map((r) => `${r.title}\n${r.href}\n${r.body}`).join('\n\n');
          return [{ type: 'text', text }, ...top.map((r) => ({ type: 'json' as const, json: r }))];
        },
      },
      {
        name: 'ddgo_news',
        description: 'Searches news with DuckDuckGo.',
        parameters: [
          { name: 'query', type: 'string', form: 'llm', required: true, llmDescription: 'The search query' },
          { name: 'max_results', type: 'number', form: 'form', required: false, default: 5 },
        ],
        async invoke(p, ctx) {
          const q = str(p.query).trim();
          if (!q) throw new ToolError('query is required', 'ToolParameterError');
          const token = await vqd('ddgo_news', q, ctx.signal);
          const res = await deps.http.json('ddgo_news', { url: `${root}/news.js?${new URLSearchParams({ q, vqd: token, l: 'wt-wt', o: 'json', noamp: '1' })}` }, ctx.signal);
          const items = (isRecord(res) && Array.isArray(res.results) ? res.results.filter(isRecord) : []).slice(0, maxOf(p.max_results, 5));
          const news = items.map((r) => ({
            date: typeof r.date === 'number' ? new Date(r.date * 1000).toISOString() : str(r.date),
            title: str(r.title),
            body: str(r.excerpt),
            url: str(r.url),
            image: str(r.image),
            source: str(r.source),
          }));
          const text = news.map((n) => `${n.title}\n${n.url}\n${n.date} ${n.source}\n${n.body}`).join('\n\n');
          return [{ type: 'text', text }, ...news.map((n) => ({ type: 'json' as const, json: n }))];
        },
      },
      {
        name: 'ddgo_translate',
        description: 'Translates text with DuckDuckGo.',
        parameters: [
          { name: 'query', type: 'string', form: 'llm', required: true, llmDescription: 'The text to translate' },
          { name: 'translate_to', type: 'string', form: 'llm', required: true, llmDescription: 'Target language code, e.g. en, de, zh-Hans' },
        ],
        async invoke(p, ctx) {
          const q = str(p.query);
          const to = str(p.translate_to).trim() || 'en';
          if (!q.trim()) throw new ToolError('query is required', 'ToolParameterError');
          const token = await vqd('ddgo_translate', 'translate', ctx.signal);
          const res = await deps.http.json('ddgo_translate', { method: 'POST', url: `${root}/translation.js?${new URLSearchParams({ vqd: token, query: 'translate', to })}`, headers: { 'content-type': 'text/plain' }, body: q }, ctx.signal);
          if (!isRecord(res) || typeof res.translated !== 'string') throw new ToolError('ddgo_translate: the answer has no translation');
          return [{ type: 'text', text: res.translated }, { type: 'json', json: res }];
        },
      },
    ],
  };
}
