import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** One record of the fake external knowledge base. */
export interface ExternalDoc {
  readonly content: string;
  readonly title: string;
  readonly score: number;
  readonly metadata?: Record<string, unknown>;
}

export interface FakeExternalKnowledge {
  /** `http://127.0.0.1:PORT/api` (the endpoint; retrieval is `{endpoint}/retrieval`). */
  readonly endpoint: string;
  readonly requests: { authorization: string | undefined; body: Record<string, unknown> }[];
  close(): Promise<void>;
}

/**
 * A local server speaking Dify's External Knowledge API: `POST /api/retrieval` with
 * `Authorization: Bearer KEY` and `{knowledge_id, query, retrieval_setting: {top_k, score_threshold}}`
 * answers `{records}` (the knowledge's records with a score at least the threshold, best first, at
 * most top_k), or the API's errors: 403 `1001` for a header that is not `Bearer …`, 403 `1002` for
 * a wrong key, 404 `2001` for an unknown knowledge id; a request without `knowledge_id` (Dify's
 * body-less endpoint check) a 422 validation error, as a FastAPI-style server answers it.
 */
export async function startFakeExternalKnowledge(opts: { apiKey: string; knowledge: Record<string, readonly ExternalDoc[]> }): Promise<FakeExternalKnowledge> {
  const requests: FakeExternalKnowledge['requests'] = [];
  const server = http.createServer((rq, rs) => {
    const chunks: Buffer[] = [];
    rq.on('data', (c: Buffer) => chunks.push(c));
    rq.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString() || '{}') as Record<string, unknown>;
      requests.push({ authorization: rq.headers.authorization, body });
      const json = (status: number, value: unknown) => {
        rs.writeHead(status, { 'content-type': 'application/json' });
        rs.end(JSON.stringify(value));
      };
      if (rq.method !== 'POST' || rq.url !== '/api/retrieval') return json(404, { detail: 'Not Found' });
      const auth = rq.headers.authorization ?? '';
      if (!auth.startsWith('Bearer ')) return json(403, { error_code: 1001, error_msg: "Invalid Authorization header format. Expected 'Bearer <api-key>' format." });
      if (auth.slice(7) !== opts.apiKey) return json(403, { error_code: 1002, error_msg: 'Authorization failed' });
      if (typeof body.knowledge_id !== 'string') return json(422, { detail: [{ loc: ['body', 'knowledge_id'], msg: 'field required' }] });
      const docs = opts.knowledge[String(body.knowledge_id)];
      if (!docs) return json(404, { error_code: 2001, error_msg: 'The knowledge does not exist' });
      const setting = body.retrieval_setting as { top_k: number; score_threshold: number };
      const records = [...docs].filter((d) => d.score >= setting.score_threshold).sort((a, b) => b.score - a.score).slice(0, setting.top_k);
      return json(200, { records: records.map((d) => ({ content: d.content, title: d.title, score: d.score, metadata: d.metadata ?? {} })) });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}/api`,
    requests,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
