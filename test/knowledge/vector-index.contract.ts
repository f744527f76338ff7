import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../../src/store/db.js';
import type { VectorIndex } from '../../src/knowledge/index/vector-index.js';

const DIMS = 8;

/** A unit vector pointing mostly along axis `axis`, tilted by `tilt` towards the next axis. */
export function unit(axis: number, tilt = 0, dims = DIMS): Float32Array {
  const v = new Float32Array(dims);
  v[axis % dims] = 1;
  v[(axis + 1) % dims] = tilt;
  const n = Math.hypot(...v);
  return v.map((x) => x / n);
}

const cosine = (a: Float32Array, b: Float32Array) => a.reduce((s, x, i) => s + x * b[i]!, 0);

export interface VectorContractSubject {
  readonly store: Store;
  readonly index: VectorIndex;
  close(): Promise<void>;
}

/**
 * The contract every VectorIndex meets over a real store: nearest by cosine, best first, among the
 * searchable segments (enabled, of the active generation of enabled, unarchived documents) of the
 * datasets asked, whatever the index keeps besides.
 */
export function describeVectorIndexContract(name: string, open: () => Promise<VectorContractSubject>): void {
  describe(`VectorIndex contract: ${name}`, () => {
    let subject: VectorContractSubject;
    let n = 0;
    const id = (p: string) => `${p}-${name}-${++n}`;
    const now = Date.now();

    beforeAll(async () => {
      subject = await open();
    });
    afterAll(async () => subject?.close());

    async function dataset(): Promise<string> {
      const ds = id('ds');
      await subject.store.db
        .insertInto('datasets')
        .values({ id: ds, workspace_id: 'w', name: ds, description: '', permission: 'only_me', indexing_technique: 'high_quality', embedding_model: 'm', embedding_model_provider: 'p', retrieval_model: '{}', index_version: 1, built_in_field_enabled: 0, created_by: 'u', created_at: now, updated_at: now })
        .execute();
      return ds;
    }

    async function bump(ds: string): Promise<void> {
      const row = await subject.store.db.selectFrom('datasets').select('index_version').where('id', '=', ds).executeTakeFirstOrThrow();
      await subject.store.db.updateTable('datasets').set({ index_version: row.index_version + 1 }).where('id', '=', ds).execute();
    }

    /** A document whose `vectors` are segments of `generation` (active unless told), indexed through the index under test. */
    async function document(ds: string, vectors: Float32Array[], opts: { generation?: number; active?: number; enabledSegments?: boolean } = {}): Promise<{ doc: string; segs: string[] }> {
      const doc = id('doc');
      const generation = opts.generation ?? 1;
      await subject.store.db
        .insertInto('documents')
        .values({ id: doc, dataset_id: ds, position: n, data_source_type: 'upload_file', upload_file_id: '', name: doc, created_from: 'api', created_by: 'u', process_rule_id: '', process_rule: '{}', doc_form: 'text_model', doc_language: 'English', batch: 'b', tokens: 0, word_count: 0, indexing_status: 'completed', error: null, enabled: 1, disabled_at: null, disabled_by: null, archived: 0, hit_count: 0, active_generation: opts.active ?? generation, latest_generation: generation, created_at: now, updated_at: now })
        .execute();
      const segs = await segments(ds, doc, generation, vectors, opts.enabledSegments ?? true);
      return { doc, segs };
    }

    async function segments(ds: string, doc: string, generation: number, vectors: Float32Array[], enabled = true): Promise<string[]> {
      const segs = vectors.map(() => id('seg'));
      if (segs.length === 0) return segs;
      await subject.store.db
        .insertInto('segments')
        .values(segs.map((s, i) => ({ id: s, dataset_id: ds, document_id: doc, generation, position: i + 1, content: s, word_count: 1, tokens: 1, hash: s, status: 'completed', hit_count: 0, created_at: now, completed_at: now, parent_id: null, answer: null, enabled: enabled ? 1 : 0, disabled_at: null, disabled_by: null, keywords: null, created_by: null, updated_at: null, updated_by: null, chunk_type: null })))
        .execute();
      await subject.index.add(subject.store.db, 'm', segs.map((s, i) => ({ segmentId: s, datasetId: ds, documentId: doc, vector: vectors[i]! })));
      await bump(ds);
      return segs;
    }

    it('answers the k nearest by cosine, best first, with the cosine as score, only from the datasets asked', async () => {
      const ds = await dataset();
      const other = await dataset();
      const vectors = [unit(0), unit(0, 0.3), unit(0, 1), unit(3), unit(5, 0.2)];
      const { segs } = await document(ds, vectors);
      await document(other, [unit(0), unit(0, 0.1)]);
      const hits = await subject.index.search([ds], unit(0), 3);
      expect(hits.map((h) => h.segmentId)).toEqual([segs[0], segs[1], segs[2]]);
      hits.forEach((h, i) => expect(h.score).toBeCloseTo(cosine(vectors[i]!, unit(0)), 4));
      expect(await subject.index.search([ds], unit(0), 0)).toEqual([]);
      expect(await subject.index.search([ds], unit(0, 0, 12), 3)).toEqual([]);
      const both = await subject.index.search([ds, other], unit(0), 4);
      expect(both).toHaveLength(4);
      expect(both[0]!.score).toBeCloseTo(1, 4);
      expect(both[1]!.score).toBeCloseTo(1, 4);
    });

    it('serves only enabled segments of the active generation of enabled, unarchived documents', async () => {
      const ds = await dataset();
      const served = await document(ds, [unit(1), unit(1, 0.5)]);
      // A re-index in progress: generation 2 is written beside the served generation 1.
      const next = await segments(ds, served.doc, 2, [unit(1, 0.05)]);
      expect((await subject.index.search([ds], unit(1), 5)).map((h) => h.segmentId)).toEqual(served.segs);
      // The swap: generation 2 becomes active, the old one is dropped.
      await subject.store.db.updateTable('documents').set({ active_generation: 2 }).where('id', '=', served.doc).execute();
      await subject.index.removeOtherGenerations(subject.store.db, served.doc, 2);
      await bump(ds);
      expect((await subject.index.search([ds], unit(1), 5)).map((h) => h.segmentId)).toEqual(next);
      // Disabled segments, disabled and archived documents are skipped.
      const off = await document(ds, [unit(1)], { enabledSegments: false });
      const disabled = await document(ds, [unit(1)]);
      const archived = await document(ds, [unit(1)]);
      await subject.store.db.updateTable('documents').set({ enabled: 0 }).where('id', '=', disabled.doc).execute();
      await subject.store.db.updateTable('documents').set({ archived: 1 }).where('id', '=', archived.doc).execute();
      await bump(ds);
      const ids = (await subject.index.search([ds], unit(1), 10)).map((h) => h.segmentId);
      expect(ids).toEqual(next);
      expect(ids).not.toContain(off.segs[0]);
    });

    it('finds k searchable hits behind many nearer unsearchable ones', async () => {
      const ds = await dataset();
      // 150 disabled segments closer to the query than any enabled one.
      await document(ds, Array.from({ length: 150 }, (_, i) => unit(2, i / 1000)), { enabledSegments: false });
      const far = await document(ds, [unit(2, 0.8), unit(2, 0.9), unit(2, 1), unit(6)]);
      const hits = await subject.index.search([ds], unit(2), 3);
      expect(hits.map((h) => h.segmentId)).toEqual(far.segs.slice(0, 3));
    });

    it('drops the vectors of removed segments and documents', async () => {
      const ds = await dataset();
      const a = await document(ds, [unit(4), unit(4, 0.2)]);
      const b = await document(ds, [unit(4, 0.4)]);
      await subject.index.removeSegments(subject.store.db, [a.segs[0]!]);
      await bump(ds);
      expect((await subject.index.search([ds], unit(4), 5)).map((h) => h.segmentId)).toEqual([a.segs[1], b.segs[0]]);
      await subject.index.removeDocument(subject.store.db, a.doc);
      await bump(ds);
      expect((await subject.index.search([ds], unit(4), 5)).map((h) => h.segmentId)).toEqual([b.segs[0]]);
      const left = await subject.store.db.selectFrom('segment_embeddings').select('segment_id').where('document_id', '=', a.doc).execute();
      expect(left).toEqual([]);
    });
  });
}
