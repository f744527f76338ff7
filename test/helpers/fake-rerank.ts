import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request a fake rerank server received. */
export interface RerankRequest {
  readonly path: string;
  readonly authorization: string | undefined;
  readonly body: Record<string, unknown>;
}

export interface FakeRerankServer {
  /** `http://127.0.0.1:PORT` (no path): the provider's base URL. */
  readonly url: string;
  readonly requests: RerankRequest[];
  close(): Promise<void>;
}

/**
 * The fake model's relevance: shorter texts rank higher (`1 - length / 1000`, 4 decimals), an order
 * no keyword or vector search produces by itself, so a test can tell the reranker's order apart.
 */
export function fakeRelevance(text: string): number {
  return Math.round((1 - Math.min(text.length, 999) / 1000) * 1e4) / 1e4;
}

/**
 * A local rerank server on `POST /rerank`. `dialect` picks the wire: `cohere` (Jina, Cohere,
 * SiliconFlow, Xinference, LocalAI: `{model, query, documents, top_n}` → `{results: [{index,
 * relevance_score}]}`), `voyage` (`top_k` → `{data: […]}`) or `tei` (`{query, texts}` → `[{index,
 * score}]`). `failWith` answers every request with that status and an error body.
 */
export async function startFakeRerank(opts: { dialect: 'cohere' | 'voyage' | 'tei'; failWith?: number }): Promise<FakeRerankServer> {
  const requests: RerankRequest[] = [];
  const server = http.createServer((rq, rs) => {
    const chunks: Buffer[] = [];
    rq.on('data', (c: Buffer) => chunks.push(c));
    rq.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString() || '{}') as Record<string, unknown>;
      requests.push({ path: rq.url ?? '', authorization: rq.headers.authorization, body });
      const json = (status: number, value: unknown) => {
        rs.writeHead(status, { 'content-type': 'application/json' });
        rs.end(JSON.stringify(value));
      };
      if (rq.method !== 'POST' || rq.url !== '/rerank') return json(404, { error: { message: `no route ${rq.url}` } });
      if (opts.failWith) return json(opts.failWith, { error: { message: 'reranker overloaded' } });
      const docs = (opts.dialect === 'tei' ? body.texts : body.documents) as string[];
      const limit = (opts.dialect === 'voyage' ? body.top_k : opts.dialect === 'tei' ? undefined : body.top_n) as number | undefined;
      const ranked = docs.map((d, index) => ({ index, score: fakeRelevance(d) })).sort((a, b) => b.score - a.score || a.index - b.index);
      const kept = limit === undefined ? ranked : ranked.slice(0, limit);
      if (opts.dialect === 'tei') return json(200, kept);
      const list = kept.map((r) => ({ index: r.index, relevance_score: r.score }));
      return json(200, opts.dialect === 'voyage' ? { object: 'list', data: list, model: body.model } : { id: 'rr-1', results: list, model: body.model });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
