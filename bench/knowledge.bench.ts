import { benchServer, fmt, median, percentile } from './lib.js';
import { startEmbeddings } from '../test/helpers/knowledge.js';
import { cleanText, splitText } from '../src/knowledge/ingest/chunk.js';
import { AUTOMATIC_RULE } from '../src/knowledge/ingest/process-rule.js';
import { countTokens } from '../src/text/tokenizer.js';

/**
 * Deterministic pseudo-random markdown: headings and paragraphs of words drawn Zipf-style from a
 * 5,000-word vocabulary (natural text has a long tail; a tiny vocabulary would make every query
 * match every segment).
 */
function markdown(bytes: number, seed = 1): string {
  let x = seed;
  // 32-bit integer arithmetic (see segmentLines in knowledge-setup.ts: doubles cycle early).
  const rnd = () => ((x = (Math.imul(x, 1103515245) + 12345) & 0x7fffffff) / 0x7fffffff);
  const syll = ['ka', 'lo', 'mi', 'ne', 'ru', 'ta', 'vo', 'se', 'di', 'pa', 'ge', 'zu', 'ho', 'bi', 'fe', 'wa'];
  const vocab = Array.from({ length: 5000 }, (_, i) => {
    let w = '';
    let n = i + 1;
    while (n > 0) {
      w += syll[n % 16];
      n = Math.floor(n / 16);
    }
    return w;
  });
  const word = () => vocab[Math.min(vocab.length - 1, Math.floor(Math.pow(rnd(), 2.5) * vocab.length))]!;
  const out: string[] = [];
  let size = 0;
  let n = 0;
  while (size < bytes) {
    const para = n % 8 === 0 ? `## Section ${n}\n` : `${Array.from({ length: 20 + Math.floor(rnd() * 60) }, word).join(' ')}.\n`;
    out.push(para);
    size += para.length;
    n++;
  }
  return out.join('');
}

type Kb = { api: string; h: Record<string, string>; j: Record<string, string> };

async function upload(kb: Kb, method: string, path: string, name: string, text: string): Promise<{ batch: string; id: string }> {
  const fd = new FormData();
  fd.append('file', new Blob([text], { type: 'text/markdown' }), name);
  fd.append('data', JSON.stringify({ process_rule: { mode: 'automatic' } }));
  const r = await fetch(`${kb.api}${path}`, { method, headers: kb.h, body: fd });
  const b = (await r.json()) as { batch: string; document: { id: string } };
  if (r.status !== 200) throw new Error(`${path}: ${r.status} ${JSON.stringify(b)}`);
  return { batch: b.batch, id: b.document.id };
}

async function settle(kb: Kb, ds: string, batch: string): Promise<void> {
  for (;;) {
    const r = (await (await fetch(`${kb.api}/datasets/${ds}/documents/${batch}/indexing-status`, { headers: kb.h })).json()) as { data: { indexing_status: string; error: string | null }[] };
    const st = r.data[0]!.indexing_status;
    if (st === 'completed') return;
    if (st === 'error') throw new Error(r.data[0]!.error ?? 'error');
    await new Promise((res) => setTimeout(res, 5));
  }
}

async function dataset(kb: Kb, name: string, technique: string): Promise<string> {
  const r = await fetch(`${kb.api}/datasets`, { method: 'POST', headers: kb.j, body: JSON.stringify({ name, indexing_technique: technique }) });
  return ((await r.json()) as { id: string }).id;
}

async function latency(kb: Kb, ds: string, queries: string[], method: string): Promise<{ p50: number; p95: number; times: number[] }> {
  const times: number[] = [];
  for (const q of queries) {
    const t = performance.now();
    const r = await fetch(`${kb.api}/datasets/${ds}/retrieve`, { method: 'POST', headers: kb.j, body: JSON.stringify({ query: q, retrieval_model: { search_method: method, top_k: 5 } }) });
    await r.json();
    times.push(performance.now() - t);
  }
  return { p50: median(times), p95: percentile(times, 95), times };
}

/**
 * Indexing throughput (economy, high_quality with the offline model), PATCH-to-completed for 1 MB,
 * and retrieval latency at 10,000 segments. Baselines measured in the same process: the bare
 * parse/clean/split/token-count pipeline, and an authenticated GET of the dataset.
 */
export async function run(): Promise<void> {
  const MB = 1024 * 1024;
  const lines: string[] = [];

  // Economy throughput and the CPU-only baseline.
  const s = await benchServer({ QUEUE_POLL_MS: '20', UPLOAD_FILE_SIZE_LIMIT: '20' });
  const key = (await s.runtime.keys.create('dataset', await s.runtime.apps.workspaceId(), null)).apiKey;
  const kb: Kb = { api: `${s.url}/v1`, h: { authorization: `Bearer ${key}` }, j: { authorization: `Bearer ${key}`, 'content-type': 'application/json' } };
  const md = markdown(2 * MB);
  const mdMb = Buffer.byteLength(md) / MB;
  countTokens('warm up the tokenizer');
  let t = performance.now();
  for (const c of splitText(cleanText(md, AUTOMATIC_RULE), AUTOMATIC_RULE)) countTokens(c);
  const cpuMbs = mdMb / ((performance.now() - t) / 1000);
  const eco = await dataset(kb, 'bench-economy', 'economy');
  await settle(kb, eco, (await upload(kb, 'POST', `/datasets/${eco}/document/create-by-file`, 'warm.md', markdown(64 * 1024, 7))).batch);
  t = performance.now();
  const created = await upload(kb, 'POST', `/datasets/${eco}/document/create-by-file`, 'big.md', md);
  await settle(kb, eco, created.batch);
  const ecoMbs = mdMb / ((performance.now() - t) / 1000);
  lines.push(`economy indexing (${fmt(mdMb, 1)} MB markdown, upload → completed)  ${fmt(ecoMbs, 2)} MB/s   (target ≥ 5 MB/s)`);
  lines.push(`  baseline: parse+clean+split+count tokens in process        ${fmt(cpuMbs, 2)} MB/s   ratio ${fmt((100 * ecoMbs) / cpuMbs, 0)}%`);

  // PATCH to completed, 1 MB economy.
  const oneMb = markdown(MB, 3);
  const patchTimes: number[] = [];
  for (let i = 0; i < 3; i++) {
    t = performance.now();
    const u = await upload(kb, 'PATCH', `/datasets/${eco}/documents/${created.id}`, `v${i}.md`, i % 2 ? oneMb : markdown(MB, 10 + i));
    await settle(kb, eco, u.batch);
    patchTimes.push(performance.now() - t);
  }
  lines.push(`PATCH → completed, 1 MB markdown, economy (median of 3)    ${fmt(median(patchTimes), 0)} ms      (target ≤ 1000 ms)`);

  // Keyword retrieval at 10,000 segments.
  const kw = await dataset(kb, 'bench-keyword', 'economy');
  const seg = markdown(3_000_000, 5).split('\n').filter((l) => l && !l.startsWith('#')).slice(0, 10_000);
  await settle(kb, kw, (await upload(kb, 'POST', `/datasets/${kw}/document/create-by-file`, 'segments.md', seg.join('\n'))).batch);
  const count = await s.runtime.store.db.selectFrom('segments').select((eb) => eb.fn.countAll<number>().as('n')).where('dataset_id', '=', kw).executeTakeFirstOrThrow();
  const queries = Array.from({ length: 200 }, (_, i) => seg[(i * 37) % seg.length]!.split(' ').slice(3, 6).join(' '));
  const base: number[] = [];
  for (let i = 0; i < 200; i++) {
    const t0 = performance.now();
    await (await fetch(`${kb.api}/datasets/${kw}`, { headers: kb.h })).json();
    base.push(performance.now() - t0);
  }
  await latency(kb, kw, queries.slice(0, 20), 'keyword_search');
  const k = await latency(kb, kw, queries, 'keyword_search');
  lines.push(`keyword retrieval, ${Number(count.n)} segments                    p50 ${fmt(k.p50, 2)} ms  p95 ${fmt(k.p95, 2)} ms  (target p50 ≤ 20 ms)`);
  lines.push(`  baseline: authenticated GET /datasets/{id}               p50 ${fmt(median(base), 2)} ms`);
  await s.close();

  // The cost of hit counting: two fresh servers holding only this dataset, one with
  // RETRIEVE_COUNTS_HITS=false; rounds alternate between them so drift hits both alike.
  const pair: { kb: Kb; ds: string; close: () => Promise<void> }[] = [];
  for (const counts of ['true', 'false']) {
    const b = await benchServer({ QUEUE_POLL_MS: '20', UPLOAD_FILE_SIZE_LIMIT: '20', RETRIEVE_COUNTS_HITS: counts });
    const key = (await b.runtime.keys.create('dataset', await b.runtime.apps.workspaceId(), null)).apiKey;
    const c: Kb = { api: `${b.url}/v1`, h: { authorization: `Bearer ${key}` }, j: { authorization: `Bearer ${key}`, 'content-type': 'application/json' } };
    const ds = await dataset(c, 'bench-hits', 'economy');
    await settle(c, ds, (await upload(c, 'POST', `/datasets/${ds}/document/create-by-file`, 'segments.md', seg.join('\n'))).batch);
    await latency(c, ds, queries.slice(0, 20), 'keyword_search');
    pair.push({ kb: c, ds, close: () => b.close() });
  }
  const on: number[] = [];
  const off: number[] = [];
  for (let round = 0; round < 4; round++) {
    const part = queries.slice(round * 50, round * 50 + 50);
    on.push(...(await latency(pair[0]!.kb, pair[0]!.ds, part, 'keyword_search')).times);
    off.push(...(await latency(pair[1]!.kb, pair[1]!.ds, part, 'keyword_search')).times);
  }
  lines.push(`keyword retrieval counting hits (${seg.length} segments)             p50 ${fmt(median(on), 2)} ms  p95 ${fmt(percentile(on, 95), 2)} ms`);
  lines.push(`  baseline: same data, RETRIEVE_COUNTS_HITS=false          p50 ${fmt(median(off), 2)} ms  p95 ${fmt(percentile(off, 95), 2)} ms`);
  for (const p of pair) await p.close();

  // Semantic retrieval at 10,000 segments: vectors from an OpenAI-compatible endpoint (512-d word hashing).
  const emb = await startEmbeddings(512);
  const s2 = await benchServer({ QUEUE_POLL_MS: '20', EMBEDDINGS_BASE_URL: emb.baseUrl, EMBEDDINGS_BATCH_SIZE: '256', UPLOAD_FILE_SIZE_LIMIT: '20' });
  const key2 = (await s2.runtime.keys.create('dataset', await s2.runtime.apps.workspaceId(), null)).apiKey;
  const kb2: Kb = { api: `${s2.url}/v1`, h: { authorization: `Bearer ${key2}` }, j: { authorization: `Bearer ${key2}`, 'content-type': 'application/json' } };
  const sem = await dataset(kb2, 'bench-semantic', 'high_quality');
  await settle(kb2, sem, (await upload(kb2, 'POST', `/datasets/${sem}/document/create-by-file`, 'segments.md', seg.join('\n'))).batch);
  await latency(kb2, sem, queries.slice(0, 20), 'semantic_search');
  const v = await latency(kb2, sem, queries, 'semantic_search');
  lines.push(`semantic retrieval, ${seg.length} × 512-d (${s2.runtime.store.dialect.name === 'sqlite' ? 'sqlite-vec' : 'exact'}) p50 ${fmt(v.p50, 2)} ms  p95 ${fmt(v.p95, 2)} ms  (target p50 ≤ 20 ms; includes the query-embedding HTTP call)`);
  await s2.close();
  await emb.close();

  // High-quality throughput with the built-in offline model (small file: the model is CPU-bound).
  const s3 = await benchServer({ QUEUE_POLL_MS: '20' });
  const key3 = (await s3.runtime.keys.create('dataset', await s3.runtime.apps.workspaceId(), null)).apiKey;
  const kb3: Kb = { api: `${s3.url}/v1`, h: { authorization: `Bearer ${key3}` }, j: { authorization: `Bearer ${key3}`, 'content-type': 'application/json' } };
  const hq = await dataset(kb3, 'bench-hq', 'high_quality');
  await settle(kb3, hq, (await upload(kb3, 'POST', `/datasets/${hq}/document/create-by-file`, 'warm.md', 'warm up the model')).batch);
  const small = markdown(32 * 1024, 9);
  t = performance.now();
  await settle(kb3, hq, (await upload(kb3, 'POST', `/datasets/${hq}/document/create-by-file`, 'hq.md', small)).batch);
  const hqKbs = Buffer.byteLength(small) / 1024 / ((performance.now() - t) / 1000);
  lines.push(`high_quality indexing, offline USE-lite model (32 KB)       ${fmt(hqKbs, 1)} KB/s   (no target; CPU-bound TensorFlow.js)`);
  await s3.close();

  process.stdout.write(lines.join('\n') + '\n');
}
