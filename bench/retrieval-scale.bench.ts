import { sql } from 'kysely';
import { benchServer, fmt, median, percentile, timed, type BenchServer } from './lib.js';
import { datasetKey, segmentLines, segmentQueries } from './knowledge-setup.js';
import { startEmbeddings } from '../test/helpers/knowledge.js';
import { dropSchema } from '../src/store/db.js';
import { createLogger } from '../src/infra/logger.js';
import { segmentRow } from '../src/knowledge/ingest/chunk-rows.js';
import { ExactVectorIndex } from '../src/knowledge/index/vector-index.js';
import { DatasetStore } from '../src/knowledge/dataset-store.js';
import { parseRetrievalModel, type SearchMethod } from '../src/knowledge/retrieval/retrieval-model.js';

/**
 * Retrieval at scale (issue #46): keyword, semantic and hybrid retrieval p50/p99 over 10,000 (and,
 * with RETRIEVAL_SCALE_SIZES=10000,100000, 100,000) segments, on SQLite (sqlite-vec) and on
 * PostgreSQL: BENCH_DATABASE_URL / TEST_DATABASE_URL (pgvector when that database has the extension,
 * else the exact scan; labelled), and BENCH_PGVECTOR_URL, a second database that has it. Each
 * PostgreSQL run uses a schema of its own, dropped after. RETRIEVAL_SCALE_SQLITE=0 skips SQLite.
 *
 * Segments: generated lines of a Zipf-like 3,000-word vocabulary (bench/knowledge-setup.ts), bulk
 * inserted through the store's own segment writer, keyword index and vector index (the indexer's
 * write path, without 100,000 HTTP calls), spread over 20 documents of one high_quality dataset.
 * Embeddings: 384-d (the size of all-MiniLM-L6-v2 / bge-small), deterministic and dense: each word
 * has a fixed pseudo-random unit vector and a text is the normalised sum of its words' vectors; the
 * server embeds queries the same way through an OpenAI-compatible endpoint.
 *
 * Timed in process through the retrieval service (what the Service API's `/retrieve` and the
 * knowledge-retrieval node call), top_k 10. Baselines from the same run: a bare indexed SQL select,
 * the query-embedding call alone, and the exact scan (also the reference for recall@10).
 */
const DIMS = 384;
const DOCUMENTS = 20;
const QUERIES = 200;
const WARMUP = 20;
const BATCH = 1000;

const wordVectors = new Map<string, Float32Array>();

/** A word's fixed dense unit vector (seeded by the word). */
function wordVector(word: string, dims: number): Float32Array {
  const key = `${dims}:${word}`;
  let v = wordVectors.get(key);
  if (v) return v;
  let x = 2166136261;
  for (const ch of word) x = Math.imul(x ^ ch.charCodeAt(0), 16777619) >>> 0;
  v = new Float32Array(dims);
  let norm = 0;
  for (let i = 0; i < dims; i++) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    v[i] = x / 0xffffffff - 0.5;
    norm += v[i]! * v[i]!;
  }
  norm = Math.sqrt(norm);
  for (let i = 0; i < dims; i++) v[i]! /= norm;
  wordVectors.set(key, v);
  return v;
}

/** The bench's embedding of a text: the normalised sum of its words' vectors. */
export function embed(text: string, dims: number): Float32Array {
  const out = new Float32Array(dims);
  for (const w of text.toLowerCase().match(/[a-z]+/g) ?? []) {
    const v = wordVector(w, dims);
    for (let i = 0; i < dims; i++) out[i]! += v[i]!;
  }
  let norm = 0;
  for (let i = 0; i < dims; i++) norm += out[i]! * out[i]!;
  norm = Math.sqrt(norm) || 1;
  for (let i = 0; i < dims; i++) out[i]! /= norm;
  return out;
}

type Row = { label: string; p50: number; p99: number; note?: string };

const line = (r: Row) => `  ${r.label.padEnd(46)} p50 ${fmt(r.p50, 2).padStart(7)} ms  p99 ${fmt(r.p99, 2).padStart(7)} ms${r.note ? `  ${r.note}` : ''}`;

/** A high_quality dataset with `DOCUMENTS` documents made through the API, then `n` segments bulk-loaded into them. */
export async function build(s: BenchServer, n: number, seed: number): Promise<{ ds: string; lines: string[]; seconds: number }> {
  const key = await datasetKey(s);
  const api = `${s.url}/v1`;
  const j = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  const ds = ((await (await fetch(`${api}/datasets`, { method: 'POST', headers: j, body: JSON.stringify({ name: `scale-${n}`, indexing_technique: 'high_quality' }) })).json()) as { id: string }).id;
  const batches: string[] = [];
  for (let i = 0; i < DOCUMENTS; i++) {
    const r = await fetch(`${api}/datasets/${ds}/document/create-by-text`, { method: 'POST', headers: j, body: JSON.stringify({ name: `doc-${i}`, text: `seed ${i}`, process_rule: { mode: 'automatic' } }) });
    batches.push(((await r.json()) as { batch: string }).batch);
  }
  for (const b of batches) {
    for (;;) {
      const st = (await (await fetch(`${api}/datasets/${ds}/documents/${b}/indexing-status`, { headers: j })).json()) as { data: { indexing_status: string }[] };
      if (st.data[0]!.indexing_status === 'completed') break;
      if (st.data[0]!.indexing_status === 'error') throw new Error('seed document failed to index');
      await new Promise((r) => setTimeout(r, 10));
    }
  }
  const { db, dialect } = s.runtime.store;
  const docs = await db.selectFrom('documents').select(['id', 'active_generation']).where('dataset_id', '=', ds).orderBy('id').execute();
  const writer = dialect.segmentWriter();
  const keyword = dialect.keywordIndex();
  const vectors = await dialect.vectorIndex(createLogger('silent'));
  await vectors.init();
  const lines = segmentLines(n, seed);
  const t = performance.now();
  for (let i = 0; i < n; i += BATCH) {
    const now = Date.now();
    const rows = lines.slice(i, i + BATCH).map((content, j) => {
      const doc = docs[(i + j) % docs.length]!;
      return segmentRow({ datasetId: ds, documentId: doc.id, generation: doc.active_generation, position: 2 + Math.floor((i + j) / docs.length), now }, content, null, null, { tokens: content.split(' ').length });
    });
    await db.transaction().execute(async (trx) => {
      const rowids = await writer.insert(trx, rows);
      await keyword.add(trx, rows.map((r, k) => ({ rowid: rowids[k]!, id: r.id, datasetId: ds, content: r.content })));
      await vectors.add(trx, s.runtime.embedder.model, rows.map((r) => ({ segmentId: r.id, datasetId: ds, documentId: r.document_id, vector: embed(r.content, DIMS) })));
    });
  }
  await new DatasetStore(db).bumpIndexVersion(ds);
  // Statistics as a database in service has them (autovacuum would gather them soon after).
  if (dialect.name === 'postgres') await sql`ANALYZE`.execute(db);
  // The load held the event loop (SQLite writes synchronously): let the embeddings endpoint's
  // keep-alive sockets that timed out meanwhile close before a query reuses one.
  await new Promise((r) => setTimeout(r, 200));
  return { ds, lines, seconds: (performance.now() - t) / 1000 };
}

async function measure(s: BenchServer, label: string, n: number): Promise<string[]> {
  const out: string[] = [];
  const { ds, lines, seconds } = await build(s, n, 11 + n);
  const { db, dialect } = s.runtime.store;
  const vectors = await dialect.vectorIndex(createLogger('silent'));
  await vectors.init();
  const kind = vectors.kind;
  out.push(`${label}, ${n.toLocaleString('en')} segments × ${DIMS}-d, vector index: ${kind}  (bulk load ${fmt(seconds, 1)} s)`);
  const queries = segmentQueries(lines, QUERIES + WARMUP);
  const retrieval = s.runtime.retrieval;
  const model = (method: SearchMethod) => parseRetrievalModel({ search_method: method, top_k: 10 }, 100, method);
  const results = new Map<SearchMethod, string[][]>();
  for (const method of ['keyword_search', 'semantic_search', 'hybrid_search'] as const) {
    const m = model(method);
    const got: string[][] = [];
    const times = await timed(QUERIES, WARMUP, async (i) => {
      const hits = await retrieval.retrieve([ds], queries[i]!, m);
      if (i >= WARMUP) got.push(hits.map((h) => h.segmentId));
    });
    results.set(method, got);
    const empty = got.filter((g) => g.length === 0).length;
    out.push(line({ label: method, p50: median(times), p99: percentile(times, 99), ...(empty ? { note: `(${empty} queries found nothing)` } : {}) }));
  }
  // While the embeddings endpoint's connection is warm (kept alive).
  const embedTimes = await timed(QUERIES, WARMUP, async (i) => {
    await s.runtime.embedder.embed([queries[i]!]);
  });
  // Baselines and recall, over the query vectors the server computes (through its embedder).
  const qv: Float32Array[] = [];
  for (let i = 0; i < queries.length; i += 64) qv.push(...(await s.runtime.embedder.embed(queries.slice(i, i + 64))));
  const exact = new ExactVectorIndex(db);
  const reference: string[][] = [];
  const exactTimes = await timed(QUERIES, WARMUP, async (i) => {
    const hits = await exact.search([ds], qv[i]!, 10);
    if (i >= WARMUP) reference.push(hits.map((h) => h.segmentId));
  });
  const got: string[][] = [];
  const indexTimes = await timed(QUERIES, WARMUP, async (i) => {
    const hits = await vectors.search([ds], qv[i]!, 10);
    if (i >= WARMUP) got.push(hits.map((h) => h.segmentId));
  });
  const recall = (a: string[][]) => a.reduce((sum, ids, i) => sum + ids.filter((id) => reference[i]!.includes(id)).length / Math.max(1, reference[i]!.length), 0) / a.length;
  out.push(line({ label: `  ${kind} search alone (query vector given)`, p50: median(indexTimes), p99: percentile(indexTimes, 99), note: `recall@10 ${fmt(recall(got), 3)}` }));
  out.push(`  semantic_search recall@10 vs the exact scan: ${fmt(recall(results.get('semantic_search')!), 3)}`);
  out.push(line({ label: '  baseline: exact scan in process (cached)', p50: median(exactTimes), p99: percentile(exactTimes, 99) }));
  out.push(line({ label: '  baseline: query embedding call alone', p50: median(embedTimes), p99: percentile(embedTimes, 99) }));
  const ids = (await db.selectFrom('segments').select('id').where('dataset_id', '=', ds).limit(QUERIES + WARMUP).execute()).map((r) => r.id);
  const selectTimes = await timed(QUERIES, WARMUP, async (i) => {
    await db.selectFrom('segments').select(['id', 'content']).where('id', '=', ids[i % ids.length]!).executeTakeFirst();
  });
  out.push(line({ label: '  baseline: bare indexed SELECT by id', p50: median(selectTimes), p99: percentile(selectTimes, 99) }));
  return out;
}

export async function run(): Promise<void> {
  const sizes = (process.env.RETRIEVAL_SCALE_SIZES ?? '10000').split(',').map((x) => Number(x.trim()));
  if (sizes.some((n) => !Number.isInteger(n) || n < 100)) throw new Error('RETRIEVAL_SCALE_SIZES: comma-separated segment counts, each ≥ 100');
  const emb = await startEmbeddings(DIMS, embed);
  const env: Record<string, string> = { QUEUE_POLL_MS: '20', EMBEDDINGS_BASE_URL: emb.baseUrl, EMBEDDINGS_BATCH_SIZE: '256' };
  for (const key of ['PGVECTOR_HNSW_M', 'PGVECTOR_HNSW_EF_CONSTRUCTION', 'PGVECTOR_EF_SEARCH']) if (process.env[key]) env[key] = process.env[key];
  const targets: { label: string; env: Record<string, string>; url?: string }[] = process.env.RETRIEVAL_SCALE_SQLITE === '0' ? [] : [{ label: 'SQLite', env: {} }];
  const pg = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL;
  if (pg) targets.push({ label: 'PostgreSQL', env: { DATABASE_URL: pg }, url: pg });
  if (process.env.BENCH_PGVECTOR_URL) targets.push({ label: 'PostgreSQL (BENCH_PGVECTOR_URL)', env: { DATABASE_URL: process.env.BENCH_PGVECTOR_URL }, url: process.env.BENCH_PGVECTOR_URL });
  if (!pg) process.stdout.write('PostgreSQL skipped: set BENCH_DATABASE_URL or TEST_DATABASE_URL (and BENCH_PGVECTOR_URL for a database with pgvector)\n');
  try {
    for (const t of targets) {
      for (const n of sizes) {
        const schema = `bench_rs_${process.pid}_${n}`;
        const s = await benchServer({ ...env, ...t.env, ...(t.url ? { DATABASE_SCHEMA: schema } : {}) });
        try {
          process.stdout.write((await measure(s, t.label, n)).join('\n') + '\n');
        } finally {
          await s.close();
          if (t.url) await dropSchema(t.url, schema);
        }
      }
    }
  } finally {
    await emb.close();
  }
}
