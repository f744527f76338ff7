import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { stringify } from 'yaml';
import { benchServer, fmt, median, percentile } from './lib.js';

const SEGMENTS = 10_000;
const RUNS = 100;
const WARMUP = 10;
const TOP_K = 5;

/** Deterministic lines of words from a 3,000-word vocabulary, one line per segment. */
function lines(n: number, seed: number): string[] {
  let x = seed;
  const rnd = () => ((x = (x * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
  const syll = ['ka', 'lo', 'mi', 'ne', 'ru', 'ta', 'vo', 'se', 'di', 'pa', 'ge', 'zu', 'ho', 'bi', 'fe', 'wa'];
  const vocab = Array.from({ length: 3000 }, (_, i) => {
    let w = '';
    for (let m = i + 1; m > 0; m = Math.floor(m / 16)) w += syll[m % 16];
    return w;
  });
  const word = () => vocab[Math.floor(Math.pow(rnd(), 2.5) * vocab.length)]!;
  return Array.from({ length: n }, () => Array.from({ length: 15 + Math.floor(rnd() * 30) }, word).join(' ') + '.');
}

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
  const ws = await s.runtime.apps.workspaceId();
  const dsKey = (await s.runtime.keys.create('dataset', ws, null)).apiKey;
  const j = { authorization: `Bearer ${dsKey}`, 'content-type': 'application/json' };
  const api = `${s.url}/v1`;
  const ids: string[] = [];
  const all: string[] = [];
  for (const [i, seed] of [7, 11].entries()) {
    const ds = ((await (await fetch(`${api}/datasets`, { method: 'POST', headers: j, body: JSON.stringify({ name: `bench-rerank-${i}`, indexing_technique: 'economy' }) })).json()) as { id: string }).id;
    const segs = lines(SEGMENTS / 2, seed);
    all.push(...segs);
    const created = (await (
      await fetch(`${api}/datasets/${ds}/document/create-by-text`, {
        method: 'POST',
        headers: j,
        body: JSON.stringify({ name: 'bench', text: segs.join('\n'), process_rule: { mode: 'custom', rules: { segmentation: { separator: '\n', max_tokens: 500 } } } }),
      })
    ).json()) as { batch: string };
    for (;;) {
      const st = (await (await fetch(`${api}/datasets/${ds}/documents/${created.batch}/indexing-status`, { headers: j })).json()) as { data: { indexing_status: string }[] };
      if (st.data[0]!.indexing_status === 'completed') break;
      if (st.data[0]!.indexing_status === 'error') throw new Error('indexing failed');
      await new Promise((r) => setTimeout(r, 20));
    }
    ids.push(ds);
  }
  const queries = Array.from({ length: RUNS + WARMUP }, (_, i) => all[(i * 37) % all.length]!.split(' ').slice(3, 6).join(' '));
  const key = async (config: Record<string, unknown>) => {
    const a = await s.runtime.apps.importDsl(dsl(ids, config));
    return (await s.runtime.keys.create('app', a.workspaceId, a.id)).apiKey;
  };
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
