import { ToolError, type ToolProvider } from '../tool.js';
import { str, type ProviderDeps } from './provider-deps.js';

const DEFAULT_UA = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36';

/**
 * Dify's built-in `webscraper`: fetches a page (through the SSRF guard) and answers with Dify's
 * layout — TITLE, AUTHORS, PUBLISH DATE, TOP_IMAGE_URL, then TEXT (the readable text).
 */
export function webscraperProvider(deps: ProviderDeps): ToolProvider {
  return {
    name: 'webscraper',
    tools: [
      {
        name: 'webscraper',
        description: 'A tool for scraping webpages.',
        parameters: [
          { name: 'url', type: 'string', form: 'llm', required: true, llmDescription: 'url for scraping' },
          { name: 'user_agent', type: 'string', form: 'form', required: false, default: DEFAULT_UA },
          { name: 'generate_summary', type: 'boolean', form: 'form', required: false, default: false },
        ],
        async invoke(p, ctx) {
          const url = str(p.url).trim();
          if (!url) throw new ToolError('Please input url', 'ToolParameterError');
          const res = await deps.http.send('webscraper', { url, headers: { 'user-agent': str(p.user_agent) || DEFAULT_UA, accept: 'text/html,application/xhtml+xml,*/*' } }, ctx.signal);
          const type = (res.headers['content-type'] ?? '').toLowerCase();
          if (!type.includes('html')) return [{ type: 'text', text: res.text }];
          const $ = (await import('cheerio')).load(res.text); // loaded on first use (a large import)
          const meta = (...names: string[]) => names.map((n) => $(`meta[name="${n}"],meta[property="${n}"]`).attr('content')).find(Boolean) ?? '';
          const title = ($('title').first().text() || meta('og:title')).trim();
          const author = meta('author', 'article:author');
          const date = meta('article:published_time', 'date', 'pubdate');
          const image = meta('og:image');
          const body = $('article').first().html() ?? $('main').first().html() ?? $('body').html() ?? res.text;
          const text = (await import('../../knowledge/ingest/parse/html.js')).parseHtml(Buffer.from(body, 'utf8'));
          return [{ type: 'text', text: `TITLE: ${title}\nAUTHORS: ${author}\nPUBLISH DATE: ${date}\nTOP_IMAGE_URL: ${image}\nTEXT:\n\n${text}` }];
        },
      },
    ],
  };
}
