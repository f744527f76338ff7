import { benchServer, fmt, median, percentile } from './lib.js';

const SEGMENTS = 2_000;
const RUNS = 150;
const WARMUP = 15;

/** Deterministic lines of words from a 3,000-word vocabulary, one line per segment. */
function lines(n: number): string[] {
  let x = 11;
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

/** A chat app on the built-in mock model; with `dataset`, its knowledge and citations on. */
function chatApp(dataset: string | null): string {
  const knowledge = dataset
    ? `  retriever_resource:
    enabled: true
  dataset_configs:
    retrieval_model: multiple
    top_k: 4
    datasets:
      strategy: router
      datasets:
        - dataset:
            enabled: true
            id: ${dataset}
`
    : '';
  return `app:
  mode: chat
  name: bench ${dataset ? 'rag' : 'plain'}
kind: app
version: 0.3.1
model_config:
  model:
    provider: mock
    name: mock
    mode: chat
    completion_params: {}
  pre_prompt: 'Answer briefly.'
${knowledge}`;
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
 * A chat app answering with its dataset (keyword search over 2,000 segments, top_k 4, the context
 * in the prompt, citations stored and returned), blocking, against the same chat app without a
 * dataset in the same process: what knowledge and citations add to an answer.
 */
export async function run(): Promise<void> {
  const s = await benchServer({ UPLOAD_FILE_SIZE_LIMIT: '20' });
  const ws = await s.runtime.apps.workspaceId();
  const dsKey = (await s.runtime.keys.create('dataset', ws, null)).apiKey;
  const j = { authorization: `Bearer ${dsKey}`, 'content-type': 'application/json' };
  const api = `${s.url}/v1`;
  const ds = ((await (await fetch(`${api}/datasets`, { method: 'POST', headers: j, body: JSON.stringify({ name: 'bench-citations', indexing_technique: 'economy' }) })).json()) as { id: string }).id;
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
  const key = async (dataset: string | null) => {
    const a = await s.runtime.apps.importDsl(chatApp(dataset));
    return (await s.runtime.keys.create('app', a.workspaceId, a.id)).apiKey;
  };
  const ragKey = await key(ds);
  const plainKey = await key(null);
  const ask = async (k: string, q: string, cited: boolean) => {
    const r = await fetch(`${api}/chat-messages`, { method: 'POST', headers: { authorization: `Bearer ${k}`, 'content-type': 'application/json' }, body: JSON.stringify({ inputs: {}, query: q, response_mode: 'blocking', user: 'bench' }) });
    const b = (await r.json()) as { answer?: string; metadata?: { retriever_resources: unknown[] } };
    if (!b.answer || (b.metadata?.retriever_resources.length ?? 0) > 0 !== cited) throw new Error(`answer failed: ${JSON.stringify(b).slice(0, 300)}`);
  };
  const rag = await timed(RUNS, (i) => ask(ragKey, queries[i]!, true));
  const plain = await timed(RUNS, (i) => ask(plainKey, queries[i]!, false));
  process.stdout.write(
    [
      `chat answer with a dataset (${SEGMENTS} segments, top_k 4) and citations   p50 ${fmt(median(rag), 2)} ms  p99 ${fmt(percentile(rag, 99), 2)} ms`,
      `  baseline: the same chat app without a dataset              p50 ${fmt(median(plain), 2)} ms  p99 ${fmt(percentile(plain, 99), 2)} ms`,
      `  added by retrieval + citations (p50 difference)            ${fmt(median(rag) - median(plain), 2)} ms`,
    ].join('\n') + '\n',
  );
  await s.close();
}
