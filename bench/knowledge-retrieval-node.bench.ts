import { stringify } from 'yaml';
import { benchServer, fmt, median, percentile } from './lib.js';

const SEGMENTS = 2_000;
const RUNS = 200;
const WARMUP = 20;

/** Deterministic lines of words from a 3,000-word vocabulary, one line per segment. */
function lines(n: number): string[] {
  let x = 7;
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

async function timed(n: number, f: (i: number) => Promise<void>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n + WARMUP; i++) {
    const t = performance.now();
    await f(i);
    if (i >= WARMUP) out.push(performance.now() - t);
  }
  return out;
}

/**
 * A workflow start → knowledge-retrieval (keyword, top_k 5, 2,000 segments) → end, run blocking.
 * Baselines in the same process: POST /datasets/{id}/retrieve with the same query and top_k, and
 * a start → end workflow run; what the node adds to a run should cost no more than the direct call.
 */
export async function run(): Promise<void> {
  const s = await benchServer({ QUEUE_POLL_MS: '20', UPLOAD_FILE_SIZE_LIMIT: '20' });
  const ws = await s.runtime.apps.workspaceId();
  const dsKey = (await s.runtime.keys.create('dataset', ws, null)).apiKey;
  const j = { authorization: `Bearer ${dsKey}`, 'content-type': 'application/json' };
  const api = `${s.url}/v1`;
  const ds = ((await (await fetch(`${api}/datasets`, { method: 'POST', headers: j, body: JSON.stringify({ name: 'bench-kr', indexing_technique: 'economy' }) })).json()) as { id: string }).id;
  const segs = lines(SEGMENTS);
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
    await new Promise((r) => setTimeout(r, 10));
  }
  const queries = Array.from({ length: RUNS + WARMUP }, (_, i) => segs[(i * 37) % segs.length]!.split(' ').slice(3, 6).join(' '));
  const app = async (node: Record<string, unknown> | null) => {
    const a = await s.runtime.apps.importDsl(dsl(node));
    return (await s.runtime.keys.create('app', a.workspaceId, a.id)).apiKey;
  };
  const krKey = await app({ query_variable_selector: ['start', 'q'], dataset_ids: [ds], retrieval_mode: 'multiple', multiple_retrieval_config: { top_k: 5, score_threshold: null } });
  const plainKey = await app(null);
  const runWf = async (key: string, q: string, check: (out: unknown) => boolean) => {
    const r = await fetch(`${api}/workflows/run`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ inputs: { q }, response_mode: 'blocking', user: 'bench' }) });
    const b = (await r.json()) as { data: { status: string; outputs: { out: unknown } } };
    if (b.data.status !== 'succeeded' || !check(b.data.outputs.out)) throw new Error(`run failed: ${JSON.stringify(b).slice(0, 300)}`);
  };
  const node = await timed(RUNS, (i) => runWf(krKey, queries[i]!, (o) => Array.isArray(o) && o.length > 0));
  const direct = await timed(RUNS, async (i) => {
    const r = await fetch(`${api}/datasets/${ds}/retrieve`, { method: 'POST', headers: j, body: JSON.stringify({ query: queries[i], retrieval_model: { search_method: 'keyword_search', top_k: 5 } }) });
    const b = (await r.json()) as { records: unknown[] };
    if (b.records.length === 0) throw new Error('no records');
  });
  const plain = await timed(RUNS, (i) => runWf(plainKey, queries[i]!, (o) => o === queries[i]));
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
