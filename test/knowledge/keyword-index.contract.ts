import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Kysely } from 'kysely';
import type { Store } from '../../src/store/db.js';
import type { Database } from '../../src/store/schema.js';
import type { KeywordIndex } from '../../src/knowledge/index/keyword-index.js';

export interface KeywordContractSubject {
  readonly store: Store;
  readonly index: KeywordIndex;
  /**
   * Each segment's rowid for `KeywordIndex.add`, in the order asked, as the indexer's bulk insert
   * returns them (SQLite's rowid; 0 where the storage has none), read through `db` (the open transaction).
   */
  rowids(db: Kysely<Database>, segmentIds: readonly string[]): Promise<(number | bigint)[]>;
  close(): Promise<void>;
}

/**
 * The contract every KeywordIndex meets over a real store: stemmed, stop-word-free term matches,
 * best first with scores in (0, 1], among the searchable segments (enabled, of the active
 * generation of enabled, unarchived documents, of `documentIds` when given) of the datasets asked;
 * adds and removals (bulk, by id, a whole document, other generations) inside the caller's
 * transaction; any query text is safe.
 */
export function describeKeywordIndexContract(name: string, open: () => Promise<KeywordContractSubject>): void {
  describe(`KeywordIndex contract: ${name}`, () => {
    let subject: KeywordContractSubject;
    let n = 0;
    const id = (p: string) => `${p}-${++n}`;
    const now = 1_700_000_000_000;

    beforeAll(async () => {
      subject = await open();
    });
    afterAll(async () => subject?.close());

    async function dataset(): Promise<string> {
      const ds = id('ds');
      await subject.store.db
        .insertInto('datasets')
        .values({ id: ds, workspace_id: 'w', name: ds, description: '', permission: 'only_me', indexing_technique: 'economy', embedding_model: null, embedding_model_provider: null, retrieval_model: '{}', index_version: 1, built_in_field_enabled: 0, created_by: 'u', created_at: now, updated_at: now })
        .execute();
      return ds;
    }

    /** A document whose `texts` are segments of `generation` (active unless told), added through `add` in one transaction. */
    async function document(ds: string, texts: string[], opts: { generation?: number; active?: number; enabledSegments?: boolean } = {}): Promise<{ doc: string; segs: string[] }> {
      const doc = id('doc');
      const generation = opts.generation ?? 1;
      await subject.store.db
        .insertInto('documents')
        .values({ id: doc, dataset_id: ds, position: n, data_source_type: 'upload_file', upload_file_id: '', name: doc, created_from: 'api', created_by: 'u', process_rule_id: '', process_rule: '{}', doc_form: 'text_model', doc_language: 'English', batch: 'b', tokens: 0, word_count: 0, indexing_status: 'completed', error: null, enabled: 1, disabled_at: null, disabled_by: null, archived: 0, hit_count: 0, active_generation: opts.active ?? generation, latest_generation: generation, created_at: now, updated_at: now })
        .execute();
      return { doc, segs: await segments(ds, doc, generation, texts, opts.enabledSegments ?? true) };
    }

    async function segments(ds: string, doc: string, generation: number, texts: string[], enabled = true): Promise<string[]> {
      const segs = texts.map(() => id('seg'));
      if (segs.length === 0) return segs;
      await subject.store.db.transaction().execute(async (trx) => {
        await trx
          .insertInto('segments')
          .values(segs.map((s, i) => ({ id: s, dataset_id: ds, document_id: doc, generation, position: i + 1, content: texts[i]!, word_count: 1, tokens: 1, hash: s, status: 'completed', hit_count: 0, created_at: now, completed_at: now, parent_id: null, answer: null, enabled: enabled ? 1 : 0, disabled_at: null, disabled_by: null, keywords: null, created_by: null, updated_at: null, updated_by: null, chunk_type: null })))
          .execute();
        const rowids = await subject.rowids(trx, segs);
        await subject.index.add(trx, segs.map((s, i) => ({ rowid: rowids[i]!, id: s, datasetId: ds, content: texts[i]! })));
      });
      return segs;
    }

    const ids = async (datasets: string[], query: string, limit = 10, documentIds?: string[]) => (await subject.index.search(datasets, query, limit, documentIds)).map((h) => h.segmentId);

    it('matches stemmed terms, best first with scores in (0, 1], only in the datasets asked', async () => {
      const ds = await dataset();
      const other = await dataset();
      const { segs } = await document(ds, ['A mill stands by the rivers of the old town, among many other quiet words around it.', 'The kettle is boiling.', 'The river flows, the river rises, the river floods.', 'Nothing to see here.']);
      await document(other, ['A river in another dataset.']);
      const hits = await subject.index.search([ds], 'river flowing', 10);
      // "rivers"/"river" and "flows"/"flowing" share their stems; the short segment with the most matches ranks first
      expect(hits.map((h) => h.segmentId).sort()).toEqual([segs[0], segs[2]].sort());
      expect(hits[0]!.segmentId).toBe(segs[2]);
      for (const h of hits) {
        expect(h.score).toBeGreaterThan(0);
        expect(h.score).toBeLessThanOrEqual(1);
      }
      expect(hits[0]!.score).toBeGreaterThanOrEqual(hits[1]!.score);
      expect(await ids([ds], 'river', 1)).toEqual([segs[2]]);
      expect((await ids([ds, other], 'river')).length).toBe(3);
    });

    it('drops stop words unless nothing else is asked, and answers nothing for no terms, no datasets or no documents', async () => {
      const ds = await dataset();
      const { segs } = await document(ds, ['the cat sat on the mat', 'what is this', 'dogs bark']);
      expect(await ids([ds], 'the cat')).toEqual([segs[0]]);
      expect(await ids([ds], '  ,.;  ')).toEqual([]);
      expect(await ids([], 'cat')).toEqual([]);
      expect(await ids([ds], 'cat', 10, [])).toEqual([]);
      expect(await ids([ds], 'zebra')).toEqual([]);
    });

    it('takes any query text as words: quotes, operators and punctuation are neither syntax nor errors', async () => {
      const ds = await dataset();
      const { segs } = await document(ds, ['alpha beta gamma', 'delta epsilon']);
      for (const q of ['"alpha', "alpha' OR 1=1 --", 'alpha AND NOT beta', 'alpha* NEAR(beta)', 'alpha:beta | !delta & (', 'ALPHA']) {
        expect(await ids([ds], q)).toContain(segs[0]);
      }
      expect(await ids([ds], 'NOT')).toEqual([]);
    });

    it('serves only enabled segments of the active generation of enabled, unarchived documents, and only the documents asked', async () => {
      const ds = await dataset();
      const served = await document(ds, ['orchard apples', 'orchard pears']);
      // a re-index in progress: generation 2 is written beside the served generation 1
      const next = await segments(ds, served.doc, 2, ['orchard plums']);
      expect((await ids([ds], 'orchard')).sort()).toEqual([...served.segs].sort());
      // the swap: generation 2 becomes active, the others are dropped
      await subject.store.db.transaction().execute(async (trx) => {
        await trx.updateTable('documents').set({ active_generation: 2 }).where('id', '=', served.doc).execute();
        await subject.index.removeOtherGenerations(trx, served.doc, 2);
        await trx.deleteFrom('segments').where('document_id', '=', served.doc).where('generation', '<>', 2).execute();
      });
      expect(await ids([ds], 'orchard')).toEqual(next);
      const off = await document(ds, ['orchard cherries'], { enabledSegments: false });
      const disabled = await document(ds, ['orchard figs']);
      const archived = await document(ds, ['orchard dates']);
      await subject.store.db.updateTable('documents').set({ enabled: 0 }).where('id', '=', disabled.doc).execute();
      await subject.store.db.updateTable('documents').set({ archived: 1 }).where('id', '=', archived.doc).execute();
      expect(await ids([ds], 'orchard')).toEqual(next);
      expect(await ids([ds], 'cherries')).toEqual([]);
      // a metadata filter narrows to the documents asked
      const kept = await document(ds, ['orchard quinces']);
      expect(await ids([ds], 'orchard', 10, [kept.doc])).toEqual(kept.segs);
      expect((await ids([ds], 'orchard', 10, [kept.doc, served.doc])).sort()).toEqual([...next, ...kept.segs].sort());
      expect(off.segs).toHaveLength(1);
    });

    it('finds `limit` searchable hits behind many better-ranked unsearchable ones', async () => {
      const ds = await dataset();
      // 120 disabled segments that match better (the term three times) than any enabled one
      await document(ds, Array.from({ length: 120 }, (_, i) => `lantern lantern lantern ${i}`), { enabledSegments: false });
      const far = await document(ds, ['a lantern among many other words here', 'one more lantern with filler words too', 'lantern', 'no match']);
      expect((await ids([ds], 'lantern', 3)).sort()).toEqual(far.segs.slice(0, 3).sort());
    });

    it('forgets removed segments and documents, and re-indexes a segment whose content changed', async () => {
      const ds = await dataset();
      const a = await document(ds, ['compass needle', 'compass rose']);
      const b = await document(ds, ['compass bearing']);
      await subject.store.db.transaction().execute(async (trx) => {
        await subject.index.removeSegments(trx, [a.segs[0]!]);
        await trx.deleteFrom('segments').where('id', '=', a.segs[0]!).execute();
      });
      expect((await ids([ds], 'compass')).sort()).toEqual([a.segs[1], b.segs[0]].sort());
      // a content change: forget the old text, write the new one, index it by id
      await subject.store.db.transaction().execute(async (trx) => {
        await subject.index.removeSegments(trx, [b.segs[0]!]);
        await trx.updateTable('segments').set({ content: 'sextant reading' }).where('id', '=', b.segs[0]!).execute();
        await subject.index.addSegments(trx, [b.segs[0]!]);
      });
      expect(await ids([ds], 'compass')).toEqual([a.segs[1]]);
      expect(await ids([ds], 'sextant')).toEqual([b.segs[0]]);
      await subject.store.db.transaction().execute(async (trx) => {
        await subject.index.removeDocument(trx, a.doc);
        await trx.deleteFrom('segments').where('document_id', '=', a.doc).execute();
      });
      expect(await ids([ds], 'compass')).toEqual([]);
      // a rolled-back add leaves nothing behind
      await expect(
        subject.store.db.transaction().execute(async (trx) => {
          await trx.updateTable('segments').set({ content: 'astrolabe' }).where('id', '=', b.segs[0]!).execute();
          await subject.index.addSegments(trx, [b.segs[0]!]);
          throw new Error('roll back');
        }),
      ).rejects.toThrow('roll back');
      expect(await ids([ds], 'astrolabe')).toEqual([]);
      expect(await ids([ds], 'sextant')).toEqual([b.segs[0]]);
    });
  });
}
