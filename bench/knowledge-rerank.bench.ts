import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { stringify } from 'yaml';
import { benchAppKey, benchServer, fmt, median, percentile } from './lib.js';
import { datasetKey, economyDataset, segmentLines, segmentQueries } from './knowledge-setup.js';

const SEGMENTS = 10_000;
const RUNS = 100;
const WARMUP = 10;
const TOP_K = 5;


/** A local Cohere/Jina-style rerank server (`POST /rerank`): shorter documents rank higher. */
async function rerankServer(): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((rq, rs) => {
    const chunks: Buffer[] = [];
    rq.on('data', (c: Buffer) => chunks.push(c));
    rq.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString()) as { documents: string[]; top_n: number };
      const results = body.documents.map((d, index) => ({ index, relevance_score: 1 - Math.min(d.length, 999) / 1000 })).sort((a, b) => b.relevance_score - a.relevance_score).slice(0, body.top_n);
      rs.writeHead(200, { 'content-type': 'application/json' });
      rs.end(JSON.stringify({ results }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => new Promise<void>((r) => server.close(() => r())) };
}

function dsl(datasetIds: string[], config: Record<string, unknown>): string {
  return stringify({
    app: { name: 'rerank', mode: 'workflow' },
    kind: 'app',
    version: '0.3.1',
    workflow: {
      graph: {
        nodes: [
          { id: 'start', data: { type: 'start', title: 'Start', variables: [{ variable: 'q', label: 'q', type: 'text-input', required: true }] } },
          { id: 'kr', data: { type: 'knowledge-retrieval', title: 'kr', query_variable_selector: ['start', 'q'], dataset_ids: datasetIds, retrieval_mode: 'multiple', multiple_retrieval_config: { top_k: TOP_K, score_threshold: null, ...config } } },
          { id: 'end', data: { type: 'end', title: 'End', outputs: [{ variable: 'out', value_selector: ['kr', 'result'] }] } },
        ],
        edges: [
          { source: 'start', target: 'kr' },
          { source: 'kr', target: 'end' },
        ],
      },
    },
  });
}

/**
 * Knowledge retrieval with reranking over 10,000 segments (two economy datasets of 5,000, keyword
 * search, top_k 5): a knowledge-retrieval node run blocking with a rerank model (a local rerank
 * server: what the round trip adds) and with weighted scores, next to the same node with reranking
 * off, all in this run.
 */
export async function run(): Promise<void> {
  const rr = await rerankServer();
  const s = await benchServer({ QUEUE_POLL_MS: '20', UPLOAD_FILE_SIZE_LIMIT: '20', JINA_API_KEY: 'bench', JINA_BASE_URL: rr.url });
  const dsKey = await datasetKey(s);
  const ids: string[] = [];
  const all: string[] = [];
  for (const [i, seed] of [7, 11].entries()) {
    const segs = segmentLines(SEGMENTS / 2, seed);
    all.push(...segs);
    ids.push(await economyDataset(s, dsKey, `bench-rerank-${i}`, segs, 20));
  }
  const api = `${s.url}/v1`;
  const queries = segmentQueries(all, RUNS + WARMUP);
  const key = (config: Record<string, unknown>) => benchAppKey(s, dsl(ids, config));
  const offKey = await key({ reranking_enable: false });
  const modelKey = await key({ reranking_enable: true, reranking_mode: 'reranking_model', reranking_model: { provider: 'jina', model: 'jina-reranker-v2-base-multilingual' } });
  const weightedKey = await key({ reranking_enable: true, reranking_mode: 'weighted_score', weights: { vector_setting: { vector_weight: 0.7 }, keyword_setting: { keyword_weight: 0.3 } } });
  const runWf = async (k: string, q: string) => {
    const r = await fetch(`${api}/workflows/run`, { method: 'POST', headers: { authorization: `Bearer ${k}`, 'content-type': 'application/json' }, body: JSON.stringify({ inputs: { q }, response_mode: 'blocking', user: 'bench' }) });
    const b = (await r.json()) as { data: { status: string; outputs: { out: unknown[] } } };
    if (b.data.status !== 'succeeded' || b.data.outputs.out.length === 0) throw new Error(`run failed: ${JSON.stringify(b).slice(0, 300)}`);
  };
  // Interleaved so that load on the machine falls on all three alike.
  const times: Record<'off' | 'model' | 'weighted', number[]> = { off: [], model: [], weighted: [] };
  for (let i = 0; i < RUNS + WARMUP; i++) {
    for (const [name, k] of [['off', offKey], ['model', modelKey], ['weighted', weightedKey]] as const) {
      const t = performance.now();
      await runWf(k, queries[i]!);
      if (i >= WARMUP) times[name].push(performance.now() - t);
    }
  }
  const line = (label: string, xs: number[]) => `${label} p50 ${fmt(median(xs), 2)} ms  p99 ${fmt(percentile(xs, 99), 2)} ms`;
  process.stdout.write(
    [
      `knowledge-retrieval node, 2 datasets × ${SEGMENTS / 2} segments (keyword), top_k ${TOP_K}, ${RUNS} blocking runs each`,
      line('  reranking_model (local POST /rerank)          ', times.model),
      line('  weighted_score                                ', times.weighted),
      line('  baseline: reranking off                       ', times.off),
      `  added by the rerank round trip (p50)          ${fmt(median(times.model) - median(times.off), 2)} ms; by weighted scoring ${fmt(median(times.weighted) - median(times.off), 2)} ms`,
    ].join('\n') + '\n',
  );
  await s.close();
  await rr.close();
}
