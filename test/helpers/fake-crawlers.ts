import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** A page the fake crawlers serve, by URL. */
export interface FakePage {
  readonly title: string;
  readonly description: string;
  readonly markdown: string;
}

export interface FakeCrawlers {
  readonly url: string;
  /** Requests received: method, path, authorization header and JSON body. */
  readonly requests: { method: string; path: string; auth: string | undefined; body: unknown }[];
  close(): Promise<void>;
}

/**
 * Jina Reader (`POST /` {url} → `{code, status, data: {title, description, url, content}}`) and
 * Firecrawl v1 (`POST /v1/scrape`, `POST /v1/crawl` + `GET /v1/crawl/{id}`) over real HTTP, with
 * their request and answer shapes, serving `pages`; a missing bearer key is a 401 as both answer.
 */
export async function startFakeCrawlers(pages: Readonly<Record<string, FakePage>>, key: string): Promise<FakeCrawlers> {
  const requests: FakeCrawlers['requests'] = [];
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c.toString('utf8')));
    req.on('end', () => {
      const body = raw ? (JSON.parse(raw) as Record<string, unknown>) : undefined;
      requests.push({ method: req.method ?? '', path: req.url ?? '', auth: req.headers.authorization, body });
      const send = (status: number, json: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(json));
      };
      if (req.headers.authorization !== `Bearer ${key}`) return send(401, { success: false, error: 'Unauthorized: Invalid token' });
      const page = (u: unknown) => pages[String(u)];
      if (req.method === 'POST' && req.url === '/') {
        const p = page(body?.url);
        if (!p) return send(422, { code: 422, message: 'cannot read the page' });
        return send(200, { code: 200, status: 20000, data: { title: p.title, description: p.description, url: body!.url, content: p.markdown, usage: { tokens: 10 } } });
      }
      if (req.method === 'POST' && req.url === '/v1/scrape') {
        const p = page(body?.url);
        if (!p) return send(404, { success: false, error: 'page not found' });
        return send(200, { success: true, data: { markdown: p.markdown, metadata: { title: p.title, description: p.description, sourceURL: body!.url, statusCode: 200 } } });
      }
      if (req.method === 'POST' && req.url === '/v1/crawl') return send(200, { success: true, id: 'job-1', url: 'http://fake/v1/crawl/job-1' });
      if (req.method === 'GET' && req.url === '/v1/crawl/job-1') {
        const data = Object.entries(pages).map(([u, p]) => ({ markdown: p.markdown, metadata: { title: p.title, description: p.description, sourceURL: u } }));
        return send(200, { status: 'completed', total: data.length, completed: data.length, creditsUsed: data.length, data });
      }
      send(404, { success: false, error: 'no such route' });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, requests, close: () => new Promise((r) => server.close(() => r())) };
}
