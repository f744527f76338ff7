import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startServer, type TestServer } from '../helpers/server.js';
import { endNode, startNode, workflowDsl } from '../helpers/workflow-dsl.js';

/**
 * Every built-in tool through a one-node workflow over real HTTP, each HTTP-backed provider against
 * a local fake of its upstream speaking the documented wire format.
 */
const KEY = 'tvly-secret-key-123';
let s: TestServer;
let upstream: Server;
let base = '';
const seen: { method: string; url: string; headers: IncomingMessage['headers']; body: string }[] = [];

const json = (res: import('node:http').ServerResponse, status: number, v: unknown): void => void res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(v));

function route(req: IncomingMessage, body: string, res: import('node:http').ServerResponse): void {
  const url = new URL(req.url!, 'http://x');
  const p = url.pathname;
  // Jina Reader: POST / {url} with Accept: application/json
  if (p === '/jina-reader/' && req.method === 'POST') return json(res, 200, { code: 200, status: 20000, data: { title: 'Page', url: JSON.parse(body).url, content: '# Page\n\nreader text' } });
  // Jina Search: GET /{query}
  if (p.startsWith('/jina-search/')) return json(res, 200, { code: 200, data: [{ title: 'Dify', url: 'https://dify.ai', description: 'LLM app platform', content: 'long' }] });
  // Tavily: POST /search, /extract with Authorization: Bearer
  if (p === '/tavily/search') {
    if (req.headers.authorization !== `Bearer ${KEY}`) return json(res, 401, { detail: { error: `Unauthorized: invalid API key ${String(req.headers.authorization)}` } });
    const q = JSON.parse(body);
    if (q.query === 'echo-key') return json(res, 400, { detail: { error: `bad request for key ${KEY}` } });
    return json(res, 200, { query: q.query, answer: q.include_answer ? 'forty-two' : null, images: [], results: [{ title: 'T1', url: 'https://a.example', content: 'c1', score: 0.9, raw_content: null }], response_time: 0.1 });
  }
  if (p === '/tavily/extract') return json(res, 200, { results: JSON.parse(body).urls.map((u: string) => ({ url: u, raw_content: `raw of ${u}`, images: [] })), failed_results: [], response_time: 0.1 });
  // SearXNG: GET /search?q&format=json&categories
  if (p === '/searx/search') {
    if (url.searchParams.get('format') !== 'json') return void res.writeHead(403).end('json format disabled');
    return json(res, 200, { query: url.searchParams.get('q'), results: [1, 2, 3].map((i) => ({ title: `R${i}`, url: `https://r${i}.example`, content: `c${i}`, engine: url.searchParams.get('categories') })) });
  }
  // DuckDuckGo: html search, vqd page, news.js, translation.js
  if (p === '/ddg/html/') {
    const q = new URLSearchParams(body).get('q');
    return void res.writeHead(200, { 'content-type': 'text/html' }).end(
      `<div class="result"><a class="result__a" href="//duckduckgo.com/l/?uddg=${encodeURIComponent('https://one.example/a')}&rut=x">One ${q}</a><a class="result__snippet">first snippet</a></div>` +
        `<div class="result"><a class="result__a" href="https://two.example/">Two</a><div class="result__snippet">second</div></div>`,
    );
  }
  if (p === '/ddg/') return void res.writeHead(200, { 'content-type': 'text/html' }).end(`<script>vqd="4-12345"</script>`);
  if (p === '/ddg/news.js') {
    if (url.searchParams.get('vqd') !== '4-12345') return void res.writeHead(403).end();
    return json(res, 200, { results: [{ date: 1700000000, title: 'News', excerpt: 'ex', url: 'https://n.example', image: '', source: 'Wire' }] });
  }
  if (p === '/ddg/translation.js') return json(res, 200, { detected_language: 'de', translated: `EN(${body})` });
  // MediaWiki API
  if (p === '/wiki-en/w/api.php') {
    if (url.searchParams.get('list') === 'search') return json(res, 200, { query: { search: [{ title: 'Dify' }, { title: 'Other' }] } });
    return json(res, 200, { query: { pages: { '1': { title: 'Dify', extract: 'Dify is an LLM app platform.' }, '2': { title: 'Other', extract: 'Other page.' } } } });
  }
  // a page for the webscraper
  if (p === '/page.html') {
    return void res
      .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
      .end('<html><head><title>A Page</title><meta name="author" content="Ada"><meta property="og:image" content="https://img.example/x.png"></head><body><nav>menu</nav><article><h1>Hello</h1><p>Body text.</p><script>x()</script></article></body></html>');
  }
  res.writeHead(404).end('no route');
}

beforeAll(async () => {
  upstream = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url!, headers: req.headers, body });
      route(req, body, res);
    });
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  s = await startServer({
    env: {
      SSRF_ALLOW_HOSTS: '127.0.0.1',
      JINA_BASE_URL: `${base}/jina-reader`,
      JINA_SEARCH_BASE_URL: `${base}/jina-search`,
      JINA_API_KEY: 'jina-key',
      TAVILY_API_KEY: KEY,
      TAVILY_BASE_URL: `${base}/tavily`,
      SEARXNG_BASE_URL: `${base}/searx`,
      DUCKDUCKGO_BASE_URL: `${base}/ddg`,
      WIKIPEDIA_BASE_URL: `${base}/wiki-{language}`,
    },
  });
});
afterAll(async () => {
  await s?.close();
  upstream?.closeAllConnections();
  await new Promise((resolve) => upstream?.close(resolve));
});

const keys = new Map<string, string>();
/** Runs one tool in a workflow: start → tool → end(text, json, files); returns the run's data. */
async function runTool(provider: string, tool: string, params: Record<string, unknown>, config: Record<string, unknown> = {}, server = s): Promise<Record<string, any>> {
  const dsl = workflowDsl(
    [
      startNode(),
      {
        id: 'tool',
        type: 'tool',
        title: `T ${tool}`,
        provider_id: provider,
        provider_type: 'builtin',
        tool_name: tool,
        tool_configurations: Object.fromEntries(Object.entries(config).map(([k, v]) => [k, { type: 'constant', value: v }])),
        tool_parameters: Object.fromEntries(Object.entries(params).map(([k, v]) => [k, { type: 'mixed', value: v }])),
      },
      endNode({ text: ['tool', 'text'], json: ['tool', 'json'], files: ['tool', 'files'] }),
    ],
    [['start', 'tool'], ['tool', 'end']],
  );
  const cacheKey = `${server.url} ${dsl}`;
  let key = keys.get(cacheKey);
  if (!key) keys.set(cacheKey, (key = (await server.importApp(dsl)).apiKey));
  const r = await fetch(`${server.api}/workflows/run`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ inputs: {}, user: 'u' }) });
  expect(r.status).toBe(200);
  return (await r.json()).data;
}

describe('time', () => {
  it('current_time formats the clock in a zone with strftime; an unknown zone is a text answer, as Dify', async () => {
    const d = await runTool('time', 'current_time', {}, { format: '%Y|%m|%d %H:%M:%S %Z %a', timezone: 'Asia/Tokyo' });
    expect(d.status).toBe('succeeded');
    expect(d.outputs.text).toMatch(/^\d{4}\|\d{2}\|\d{2} \d{2}:\d{2}:\d{2} GMT\+9 (Mon|Tue|Wed|Thu|Fri|Sat|Sun)$/);
    expect((await runTool('time', 'current_time', {}, { timezone: 'Mars/Base' })).outputs.text).toBe('Invalid timezone: Mars/Base');
    // the plugin id form of the provider resolves to the same tool
    expect((await runTool('langgenius/time/time', 'current_time', {}, { format: '%Y', timezone: 'UTC' })).outputs.text).toMatch(/^\d{4}$/);
  });

  it('weekday, timezone_conversion, localtime_to_timestamp, timestamp_to_localtime', async () => {
    expect((await runTool('time', 'weekday', { year: '2024', month: '2', day: '29' })).outputs.text).toBe('February 29, 2024 is Thursday.');
    expect((await runTool('time', 'weekday', { year: '2023', month: '2', day: '29' })).outputs.text).toBe('Invalid date: Year 2023, Month 2, Day 29.');
    expect((await runTool('time', 'timezone_conversion', { current_time: '2024-07-01 12:00:00', current_timezone: 'Asia/Shanghai', target_timezone: 'America/New_York' })).outputs.text).toBe('2024-07-01 00:00:00');
    expect((await runTool('time', 'localtime_to_timestamp', { localtime: '2024-01-01 08:00:00', timezone: 'Asia/Shanghai' })).outputs.text).toBe('1704067200');
    expect((await runTool('time', 'timestamp_to_localtime', { timestamp: '1704067200', timezone: 'Europe/Berlin' })).outputs.text).toBe('2024-01-01 01:00:00');
    const bad = await runTool('time', 'timezone_conversion', { current_time: 'noon', current_timezone: 'UTC', target_timezone: 'UTC' });
    expect(bad).toMatchObject({ status: 'failed', error: "time data 'noon' does not match format '%Y-%m-%d %H:%M:%S'" });
  });
});

describe('json_process, builtin json_parse and math', () => {
  it('parse with a JSON path, insert, replace, delete', async () => {
    const content = '{"a": {"b": [1, 2, 3]}, "name": "Zoë"}';
    expect((await runTool('json_process', 'parse', { content, json_filter: '$.a.b[1]' })).outputs.text).toBe('2');
    expect((await runTool('json_process', 'parse', { content, json_filter: 'a.b' })).outputs.text).toBe('[1, 2, 3]');
    expect((await runTool('json_process', 'parse', { content, json_filter: '$.name' }, { ensure_ascii: false })).outputs.text).toBe('Zoë');
    expect((await runTool('json_process', 'insert', { content, query: '$.a.b', new_value: '9' }, { value_decode: true })).outputs.text).toBe('{"a": {"b": [1, 2, 3, 9]}, "name": "Zo\\u00eb"}');
    expect((await runTool('json_process', 'replace', { content, query: '$.name', replace_value: 'Al' }, { replace_model: 'value', ensure_ascii: false })).outputs.text).toBe('{"a": {"b": [1, 2, 3]}, "name": "Al"}');
    expect((await runTool('json_process', 'delete', { content, query: '$.a.b[*]' })).outputs.text).toBe('{"a": {"b": []}, "name": "Zo\\u00eb"}');
    const bad = await runTool('json_process', 'parse', { content: '{nope' });
    expect(bad.status).toBe('failed');
    expect(bad.error).toMatch(/^Failed to parse JSON content/);
  });

  it('math evaluates with a parser, never code', async () => {
    expect((await runTool('math', 'eval_expression', { expression: '2 * (3 + 4) ^ 2' })).outputs.text).toBe('98');
    expect((await runTool('math', 'eval_expression', { expression: 'sqrt(16) + 0.1 + 0.2' })).outputs.text).toBe('4.3');
    for (const expression of ['process.exit(1)', 'import({}, {})', 'ones(1000000000)', 'constructor']) {
      const d = await runTool('math', 'eval_expression', { expression });
      expect(d.status, expression).toBe('failed');
      expect(d.error).toMatch(/^Invalid expression/);
    }
  });
});

describe('HTTP-backed providers against local fakes', () => {
  it('jina_reader and jina_search send the key as a bearer token and answer text + json', async () => {
    const r = await runTool('jina', 'jina_reader', { url: 'https://dify.ai' });
    expect(r.outputs).toMatchObject({ text: '# Page\n\nreader text', json: [{ title: 'Page', url: 'https://dify.ai' }] });
    expect(seen.at(-1)).toMatchObject({ method: 'POST', headers: { authorization: 'Bearer jina-key', accept: 'application/json' } });
    const q = await runTool('jina', 'jina_search', { query: 'dify ai' });
    expect(q.outputs.text).toBe('[Dify](https://dify.ai)\nLLM app platform');
    expect(seen.at(-1)!.url).toBe('/jina-search/dify%20ai');
  });

  it('tavily_search and tavily_extract', async () => {
    const r = await runTool('tavily', 'tavily_search', { query: 'meaning' }, { include_answer: true, max_results: 3 });
    expect(r.outputs.text).toBe('**Answer:** forty-two\n\n**Title:** T1\n**URL:** https://a.example\n**Content:** c1');
    expect(JSON.parse(seen.at(-1)!.body)).toMatchObject({ query: 'meaning', max_results: 3, include_answer: true, search_depth: 'basic' });
    const x = await runTool('tavily', 'tavily_extract', { urls: 'https://a.example, https://b.example' });
    expect(x.outputs.text).toBe('URL: https://a.example\n\nraw of https://a.example\n\n---\n\nURL: https://b.example\n\nraw of https://b.example');
  });

  it('an upstream error fails the node without the API key in the error or the events', async () => {
    const d = await runTool('tavily', 'tavily_search', { query: 'echo-key' });
    expect(d.status).toBe('failed');
    expect(d.error).toMatch(/^tavily_search: the upstream answered HTTP 400/);
    expect(JSON.stringify(d)).not.toContain(KEY);
  });

  it('a provider without its setting fails naming the setting', async () => {
    const bare = await startServer();
    try {
      const d = await runTool('tavily', 'tavily_search', { query: 'x' }, {}, bare);
      expect(d).toMatchObject({ status: 'failed', error: 'tool node "T tavily_search" (tool): tool "tavily_search" of provider "tavily" is not configured: set TAVILY_API_KEY (or tools.tavily.api_key in dovetail.yaml)' });
      const sx = await runTool('searxng', 'searxng_search', { query: 'x' }, {}, bare);
      expect(sx.error).toMatch(/set SEARXNG_BASE_URL/);
    } finally {
      await bare.close();
    }
  });

  it('searxng_search asks for JSON in the chosen category and keeps max_results', async () => {
    const d = await runTool('searxng', 'searxng_search', { query: 'dify' }, { search_type: 'news', max_results: 2 });
    expect(d.outputs.text).toBe('R1\nhttps://r1.example\nc1\n\nR2\nhttps://r2.example\nc2');
    expect(d.outputs.json).toHaveLength(2);
    expect(seen.at(-1)!.url).toBe('/searx/search?q=dify&format=json&categories=news');
  });

  it('duckduckgo search, news and translate', async () => {
    const d = await runTool('duckduckgo', 'ddgo_search', { query: 'dify' });
    expect(d.outputs.json).toEqual([
      { title: 'One dify', href: 'https://one.example/a', body: 'first snippet' },
      { title: 'Two', href: 'https://two.example/', body: 'second' },
    ]);
    const n = await runTool('duckduckgo', 'ddgo_news', { query: 'dify' });
    expect(n.outputs.json).toEqual([{ date: '2023-11-14T22:13:20.000Z', title: 'News', body: 'ex', url: 'https://n.example', image: '', source: 'Wire' }]);
    const t = await runTool('duckduckgo', 'ddgo_translate', { query: 'Hallo', translate_to: 'en' });
    expect(t.outputs.text).toBe('EN(Hallo)');
  });

  it('wikipedia_search gives the summaries of the top pages', async () => {
    const d = await runTool('wikipedia', 'wikipedia_search', { query: 'dify' });
    expect(d.outputs.text).toBe('Page: Dify\nSummary: Dify is an LLM app platform.\n\nPage: Other\nSummary: Other page.');
  });

  it('webscraper answers with Dify\'s TITLE / AUTHORS / TEXT layout; the SSRF guard still applies', async () => {
    const d = await runTool('webscraper', 'webscraper', { url: `${base}/page.html` });
    expect(d.outputs.text).toBe('TITLE: A Page\nAUTHORS: Ada\nPUBLISH DATE: \nTOP_IMAGE_URL: https://img.example/x.png\nTEXT:\n\n# Hello\nBody text.');
    const blocked = await runTool('webscraper', 'webscraper', { url: 'http://10.0.0.1/secret' });
    expect(blocked).toMatchObject({ status: 'failed', error: 'webscraper: host 10.0.0.1 resolves to a private, loopback or reserved address, which is not allowed (SSRF_ALLOW_HOSTS)' });
  });
});
