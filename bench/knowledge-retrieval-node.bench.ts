import { stringify } from 'yaml';
import { benchAppKey, benchServer, fmt, median, percentile, timed } from './lib.js';
import { datasetKey, economyDataset, segmentLines, segmentQueries } from './knowledge-setup.js';

const SEGMENTS = 2_000;
const RUNS = 200;
const WARMUP = 20;


function dsl(node: Record<string, unknown> | null): string {
  const nodes: Record<string, unknown>[] = [{ id: 'start', data: { type: 'start', title: 'Start', variables: [{ variable: 'q', label: 'q', type: 'text-input', required: true }] } }];
  const edges: Record<string, unknown>[] = [];
  let prev = 'start';
  if (node) {
    nodes.push({ id: 'kr', data: { type: 'knowledge-retrieval', title: 'kr', ...node } });
    edges.push({ source: 'start', target: 'kr' });
    prev = 'kr';
  }
  nodes.push({ id: 'end', data: { type: 'end', title: 'End', outputs: [{ variable: 'out', value_selector: node ? ['kr', 'result'] : ['start', 'q'] }] } });
  edges.push({ source: prev, target: 'end' });
  return stringify({ app: { name: 'kr', mode: 'workflow' }, kind: 'app', version: '0.3.1', workflow: { graph: { nodes, edges } } });
}


/**
 * A workflow start → knowledge-retrieval (keyword, top_k 5, 2,000 segments) → end, run blocking.
 * Baselines in the same process: POST /datasets/{id}/retrieve with the same query and top_k, and
 * a start → end workflow run; what the node adds to a run should cost no more than the direct call.
 */
export async function run(): Promise<void> {
  const s = await benchServer({ QUEUE_POLL_MS: '20', UPLOAD_FILE_SIZE_LIMIT: '20' });
  const dsKey = await datasetKey(s);
  const j = { authorization: `Bearer ${dsKey}`, 'content-type': 'application/json' };
  const api = `${s.url}/v1`;
  const segs = segmentLines(SEGMENTS);
  const ds = await economyDataset(s, dsKey, 'bench-kr', segs);
  const queries = segmentQueries(segs, RUNS + WARMUP);
  const app = (node: Record<string, unknown> | null) => benchAppKey(s, dsl(node));
  const krKey = await app({ query_variable_selector: ['start', 'q'], dataset_ids: [ds], retrieval_mode: 'multiple', multiple_retrieval_config: { top_k: 5, score_threshold: null } });
  const plainKey = await app(null);
  const runWf = async (key: string, q: string, check: (out: unknown) => boolean) => {
    const r = await fetch(`${api}/workflows/run`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ inputs: { q }, response_mode: 'blocking', user: 'bench' }) });
    const b = (await r.json()) as { data: { status: string; outputs: { out: unknown } } };
    if (b.data.status !== 'succeeded' || !check(b.data.outputs.out)) throw new Error(`run failed: ${JSON.stringify(b).slice(0, 300)}`);
  };
  const node = await timed(RUNS, WARMUP, (i) => runWf(krKey, queries[i]!, (o) => Array.isArray(o) && o.length > 0));
  const direct = await timed(RUNS, WARMUP, async (i) => {
    const r = await fetch(`${api}/datasets/${ds}/retrieve`, { method: 'POST', headers: j, body: JSON.stringify({ query: queries[i], retrieval_model: { search_method: 'keyword_search', top_k: 5 } }) });
    const b = (await r.json()) as { records: unknown[] };
    if (b.records.length === 0) throw new Error('no records');
  });
  const plain = await timed(RUNS, WARMUP, (i) => runWf(plainKey, queries[i]!, (o) => o === queries[i]));
  const added = median(node) - median(plain);
  process.stdout.write(
    [
      `workflow start→knowledge-retrieval→end, ${SEGMENTS} segments, top_k 5   p50 ${fmt(median(node), 2)} ms  p95 ${fmt(percentile(node, 95), 2)} ms`,
      `  baseline: POST /datasets/{id}/retrieve (same queries)        p50 ${fmt(median(direct), 2)} ms`,
      `  baseline: workflow start→end run                             p50 ${fmt(median(plain), 2)} ms`,
      `  added by the node (run p50 − start→end p50)                  ${fmt(added, 2)} ms   (target ≤ the direct retrieve p50, which also pays HTTP + auth)`,
    ].join('\n') + '\n',
  );
  await s.close();
}
