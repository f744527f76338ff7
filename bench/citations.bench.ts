import { benchAppKey, benchServer, fmt, median, percentile, timed } from './lib.js';
import { datasetKey, economyDataset, segmentLines, segmentQueries } from './knowledge-setup.js';

const SEGMENTS = 2_000;
const RUNS = 150;
const WARMUP = 15;


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


/**
 * A chat app answering with its dataset (keyword search over 2,000 segments, top_k 4, the context
 * in the prompt, citations stored and returned), blocking, against the same chat app without a
 * dataset in the same process: what knowledge and citations add to an answer.
 */
export async function run(): Promise<void> {
  const s = await benchServer({ UPLOAD_FILE_SIZE_LIMIT: '20' });
  const api = `${s.url}/v1`;
  const segs = segmentLines(SEGMENTS);
  const ds = await economyDataset(s, await datasetKey(s), 'bench-citations', segs);
  const queries = segmentQueries(segs, RUNS + WARMUP);
  const ragKey = await benchAppKey(s, chatApp(ds));
  const plainKey = await benchAppKey(s, chatApp(null));
  const ask = async (k: string, q: string, cited: boolean) => {
    const r = await fetch(`${api}/chat-messages`, { method: 'POST', headers: { authorization: `Bearer ${k}`, 'content-type': 'application/json' }, body: JSON.stringify({ inputs: {}, query: q, response_mode: 'blocking', user: 'bench' }) });
    const b = (await r.json()) as { answer?: string; metadata?: { retriever_resources: unknown[] } };
    if (!b.answer || (b.metadata?.retriever_resources.length ?? 0) > 0 !== cited) throw new Error(`answer failed: ${JSON.stringify(b).slice(0, 300)}`);
  };
  const rag = await timed(RUNS, WARMUP, (i) => ask(ragKey, queries[i]!, true));
  const plain = await timed(RUNS, WARMUP, (i) => ask(plainKey, queries[i]!, false));
  process.stdout.write(
    [
      `chat answer with a dataset (${SEGMENTS} segments, top_k 4) and citations   p50 ${fmt(median(rag), 2)} ms  p99 ${fmt(percentile(rag, 99), 2)} ms`,
      `  baseline: the same chat app without a dataset              p50 ${fmt(median(plain), 2)} ms  p99 ${fmt(percentile(plain, 99), 2)} ms`,
      `  added by retrieval + citations (p50 difference)            ${fmt(median(rag) - median(plain), 2)} ms`,
    ].join('\n') + '\n',
  );
  await s.close();
}
