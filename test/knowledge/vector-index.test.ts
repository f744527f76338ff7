import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { dropSchema, openStore, type Store } from '../../src/store/db.js';
import { ExactVectorIndex, type VectorIndex } from '../../src/knowledge/index/vector-index.js';
import { PgVectorIndex, pgvectorSchema } from '../../src/store/postgres/pgvector-index.js';
import { createLogger } from '../../src/infra/logger.js';
import { describeVectorIndexContract, unit, type VectorContractSubject } from './vector-index.contract.js';

/** The vector index contract on sqlite-vec, the exact scan (SQLite, and PostgreSQL), and pgvector (TEST_PGVECTOR=1). */

async function sqlite(make: (s: Store) => Promise<VectorIndex>): Promise<VectorContractSubject> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'dovetail-vec-'));
  const store = await openStore({ databaseUrl: undefined, databaseSchema: undefined, dataDir: dir });
  const index = await make(store);
  await index.init();
  return {
    store,
    index,
    async close() {
      await store.destroy();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const pgUrl = process.env.TEST_DATABASE_URL;
async function postgres(make: (s: Store) => Promise<VectorIndex>): Promise<VectorContractSubject> {
  const schema = `t_${Math.random().toString(36).slice(2, 12)}`;
  const store = await openStore({ databaseUrl: pgUrl, databaseSchema: schema, dataDir: '.' });
  const index = await make(store);
  await index.init();
  return {
    store,
    index,
    async close() {
      await store.destroy();
      await dropSchema(pgUrl!, schema);
    },
  };
}

describeVectorIndexContract('sqlite-vec', () => sqlite((s) => sqliteVec(s)));
describeVectorIndexContract('exact (SQLite)', () => sqlite(async (s) => new ExactVectorIndex(s.db)));

/** The SQLite dialect's own vector index, which must be sqlite-vec (its probe at open loads it). */
async function sqliteVec(s: Store): Promise<VectorIndex> {
  const index = await s.dialect.vectorIndex(createLogger('silent'));
  if (index.kind !== 'sqlite-vec') throw new Error(`the SQLite dialect chose ${index.kind}, not sqlite-vec`);
  return index;
}

if (pgUrl) describeVectorIndexContract('exact (PostgreSQL)', () => postgres(async (s) => new ExactVectorIndex(s.db)));
else process.stdout.write('[vector-index] NOTICE: TEST_DATABASE_URL is not set; the exact scan on PostgreSQL and pgvector are skipped.\n');

const pgvector = pgUrl && process.env.TEST_PGVECTOR === '1';
if (pgUrl && !pgvector) process.stdout.write('[vector-index] NOTICE: TEST_PGVECTOR is not 1; the pgvector contract is skipped (set it where PostgreSQL has the vector extension).\n');

async function pgvectorIndex(s: Store): Promise<PgVectorIndex> {
  const probe = await pgvectorSchema(s.db);
  if (!('schema' in probe)) throw new Error(`TEST_PGVECTOR=1 but pgvector is not available: ${probe.reason}`);
  return new PgVectorIndex(s.db, probe.schema);
}

if (pgvector) {
  describeVectorIndexContract('pgvector', () => postgres(pgvectorIndex));

  describe('pgvector', () => {
    it('is chosen by the start-up probe, keeps an HNSW index, and backfills vectors written without it', async () => {
      const subject = await postgres(async (s) => new ExactVectorIndex(s.db));
      try {
        const { store } = subject;
        const now = Date.now();
        await store.db.insertInto('datasets').values({ id: 'ds', workspace_id: 'w', name: 'ds', description: '', permission: 'only_me', indexing_technique: 'high_quality', embedding_model: 'm', embedding_model_provider: 'p', retrieval_model: '{}', index_version: 1, built_in_field_enabled: 0, created_by: 'u', created_at: now, updated_at: now }).execute();
        await store.db.insertInto('documents').values({ id: 'doc', dataset_id: 'ds', position: 1, data_source_type: 'upload_file', upload_file_id: '', name: 'doc', created_from: 'api', created_by: 'u', process_rule_id: '', process_rule: '{}', doc_form: 'text_model', doc_language: 'English', batch: 'b', tokens: 0, word_count: 0, indexing_status: 'completed', error: null, enabled: 1, disabled_at: null, disabled_by: null, archived: 0, hit_count: 0, active_generation: 1, latest_generation: 1, created_at: now, updated_at: now }).execute();
        // More than one backfill page (200) of vectors.
        const ids = Array.from({ length: 450 }, (_, i) => i);
        await store.db.insertInto('segments').values(ids.map((i) => ({ id: `seg${i}`, dataset_id: 'ds', document_id: 'doc', generation: 1, position: i, content: 'c', word_count: 1, tokens: 1, hash: 'h', status: 'completed', hit_count: 0, created_at: now, completed_at: now, parent_id: null, answer: null, enabled: 1, disabled_at: null, disabled_by: null, keywords: null, created_by: null, updated_at: null, updated_by: null, chunk_type: null }))).execute();
        // Written by the exact scan (a server that ran before pgvector was installed).
        await subject.index.add(store.db, 'm', ids.map((i) => ({ segmentId: `seg${i}`, datasetId: 'ds', documentId: 'doc', vector: i === 1 ? unit(1) : unit(0, i / 1000) })));
        const chosen = await store.dialect.vectorIndex(createLogger('silent'));
        expect(chosen.kind).toBe('pgvector');
        await chosen.init();
        expect((await chosen.search(['ds'], unit(1), 1)).map((h) => h.segmentId)).toEqual(['seg1']);
        const copied = await sql<{ n: number }>`SELECT count(*)::int AS n FROM segment_vec_8`.execute(store.db);
        expect(copied.rows[0]!.n).toBe(450);
        const indexes = await sql<{ indexdef: string }>`SELECT indexdef FROM pg_indexes WHERE schemaname = current_schema() AND tablename = 'segment_vec_8'`.execute(store.db);
        expect(indexes.rows.map((r) => r.indexdef).join('\n')).toMatch(/USING hnsw \(embedding \S*vector_cosine_ops\)/);
      } finally {
        await subject.close();
      }
    });
  });
}
