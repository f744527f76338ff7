import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { DiskBlobs } from '../src/files/blobs/disk-blobs.js';
import { S3Blobs } from '../src/files/blobs/s3-blobs.js';
import { readStorageConfig, type S3StorageConfig } from '../src/files/blobs/storage-config.js';
import type { Blobs } from '../src/files/blobs/blobs.js';
import { dropSchema, openStore } from '../src/store/db.js';
import { ExactVectorIndex } from '../src/knowledge/index/vector-index.js';
import { PgVectorIndex, pgvectorSchema } from '../src/store/postgres/pgvector-index.js';
import { startS3 } from '../test/helpers/s3-server.js';
import { fmt, median } from './lib.js';

/**
 * File storage and vector search on the scale-out engines, each beside its baseline in this run:
 * S3 uploads and reads (to s3rver on loopback) beside local disk; pgvector HNSW search beside the
 * exact in-process scan over the same vectors (needs TEST_DATABASE_URL with pgvector).
 */

const MB = 1024 * 1024;

async function drain(r: Readable | undefined): Promise<number> {
  let n = 0;
  for await (const c of r!) n += (c as Buffer).length;
  return n;
}

async function throughput(blobs: Blobs, bytes: number, rounds: number): Promise<{ put: number; get: number }> {
  const chunk = Buffer.alloc(256 * 1024, 7);
  const puts: number[] = [];
  const gets: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const key = `bench/${i}.bin`;
    const body = Readable.from((function* () {
      for (let at = 0; at < bytes; at += chunk.length) yield chunk;
    })());
    let t = performance.now();
    await blobs.put(key, body);
    puts.push(bytes / MB / ((performance.now() - t) / 1000));
    t = performance.now();
    await drain(await blobs.get(key));
    gets.push(bytes / MB / ((performance.now() - t) / 1000));
    await blobs.delete(key);
  }
  return { put: median(puts), get: median(gets) };
}

async function blobsBench(): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'dovetail-bench-blobs-'));
  const s3 = await startS3();
  try {
    const env: Record<string, string> = s3.env();
    const s3Blobs = new S3Blobs(readStorageConfig((k) => env[k]) as S3StorageConfig);
    const size = 24 * MB;
    const disk = await throughput(new DiskBlobs(dir), size, 5);
    const remote = await throughput(s3Blobs, size, 5);
    s3Blobs.close();
    process.stdout.write(`blobs, 24 MB file, median of 5 (MB/s)\n`);
    process.stdout.write(`  baseline local disk:        put ${fmt(disk.put, 0)}  get ${fmt(disk.get, 0)}\n`);
    process.stdout.write(`  S3 (s3rver on loopback):    put ${fmt(remote.put, 0)}  get ${fmt(remote.get, 0)}  (multipart, 8 MB parts, 4 at once)\n`);
  } finally {
    await s3.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function vectorBench(): Promise<void> {
  const url = process.env.TEST_DATABASE_URL;
  if (!url) {
    process.stdout.write('vector search: NOTICE: TEST_DATABASE_URL is not set; pgvector beside the exact scan is skipped\n');
    return;
  }
  const schema = `bench_${Math.random().toString(36).slice(2, 10)}`;
  const store = await openStore({ databaseUrl: url, databaseSchema: schema, dataDir: '.' });
  try {
    const probe = await pgvectorSchema(store.db);
    if (!('schema' in probe)) {
      process.stdout.write(`vector search: NOTICE: pgvector is not available (${probe.reason}); skipped\n`);
      return;
    }
    const N = 10_000;
    const DIMS = 128;
    let x = 7;
    const rnd = () => ((x = (x * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff) - 0.5;
    const vec = () => {
      const v = Float32Array.from({ length: DIMS }, rnd);
      const n = Math.hypot(...v);
      return v.map((a) => a / n);
    };
    const now = Date.now();
    await store.db.insertInto('datasets').values({ id: 'ds', workspace_id: 'w', name: 'ds', description: '', permission: 'only_me', indexing_technique: 'high_quality', embedding_model: 'm', embedding_model_provider: 'p', retrieval_model: '{}', index_version: 1, built_in_field_enabled: 0, created_by: 'u', created_at: now, updated_at: now }).execute();
    await store.db.insertInto('documents').values({ id: 'doc', dataset_id: 'ds', position: 1, data_source_type: 'upload_file', upload_file_id: '', name: 'doc', created_from: 'api', created_by: 'u', process_rule_id: '', process_rule: '{}', doc_form: 'text_model', doc_language: 'English', batch: 'b', tokens: 0, word_count: 0, indexing_status: 'completed', error: null, enabled: 1, disabled_at: null, disabled_by: null, archived: 0, hit_count: 0, active_generation: 1, latest_generation: 1, created_at: now, updated_at: now }).execute();
    const pgv = new PgVectorIndex(store.db, probe.schema);
    await pgv.init();
    for (let i = 0; i < N; i += 500) {
      const ids = Array.from({ length: Math.min(500, N - i) }, (_, j) => `seg${String(i + j).padStart(6, '0')}`);
      await store.db.insertInto('segments').values(ids.map((id, j) => ({ id, dataset_id: 'ds', document_id: 'doc', generation: 1, position: i + j, content: 'c', word_count: 1, tokens: 1, hash: 'h', status: 'completed', hit_count: 0, created_at: now, completed_at: now, parent_id: null, answer: null, enabled: 1, disabled_at: null, disabled_by: null, keywords: null, created_by: null, updated_at: null, updated_by: null, chunk_type: null }))).execute();
      await pgv.add(store.db, 'm', ids.map((id) => ({ segmentId: id, datasetId: 'ds', documentId: 'doc', vector: vec() })));
    }
    const exact = new ExactVectorIndex(store.db);
    const queries = Array.from({ length: 50 }, vec);
    await exact.search(['ds'], queries[0]!, 10); // loads the dataset's vectors into the cache
    const time = async (index: { search: ExactVectorIndex['search'] }) => {
      const ms: number[] = [];
      const results: string[][] = [];
      for (const q of queries) {
        const t = performance.now();
        results.push((await index.search(['ds'], q, 10)).map((h) => h.segmentId));
        ms.push(performance.now() - t);
      }
      return { ms: median(ms), results };
    };
    const base = await time(exact);
    const hnsw = await time(pgv);
    let found = 0;
    hnsw.results.forEach((r, i) => (found += r.filter((id) => base.results[i]!.includes(id)).length));
    process.stdout.write(`vector search, ${N} vectors of ${DIMS} dims, top 10, median of ${queries.length} queries (ms)\n`);
    process.stdout.write(`  baseline exact in-process scan (cached): ${fmt(base.ms)}\n`);
    process.stdout.write(`  pgvector HNSW:                           ${fmt(hnsw.ms)}  recall@10 ${fmt(found / (queries.length * 10), 3)}\n`);
  } finally {
    await store.destroy();
    await dropSchema(url, schema);
  }
}

export async function run(): Promise<void> {
  await blobsBench();
  await vectorBench();
}
