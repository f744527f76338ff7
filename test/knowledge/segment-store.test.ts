import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { onEachStore, type OpenedStore } from '../helpers/store-suites.js';
import { SegmentStore, type Generation } from '../../src/knowledge/documents/segment-store.js';
import { parentChunkRow, segmentRow, type ChunkPlace } from '../../src/knowledge/ingest/chunk-rows.js';
import { newId } from '../../src/infra/ids.js';

/** SegmentStore on each database: segments, parent chunks with their children, generations, the bulk writer. */

const place = (g: Generation, datasetId: string, position: number): ChunkPlace => ({ datasetId, documentId: g.documentId, generation: g.generation, position, now: 1000 + position });
const all = { keyword: undefined, limit: 100, offset: 0 };

function suite(label: string, open: () => Promise<OpenedStore>): void {
  describe(`SegmentStore (${label})`, () => {
    let opened: OpenedStore;
    let store: SegmentStore;
    const datasetId = newId();
    beforeAll(async () => {
      opened = await open();
      store = new SegmentStore(opened.store.db, opened.store.dialect.segmentWriter());
    });
    afterAll(async () => opened?.close());

    it('inserts, pages (keyword with LIKE characters literal), updates and deletes top-level segments', async () => {
      const g = { documentId: newId(), generation: 1 };
      const rows = ['alpha 50%', 'beta', 'gamma 50_'].map((c, i) => segmentRow(place(g, datasetId, i + 1), c, null, null));
      await store.insert(opened.store.db, rows);
      expect(await store.lastPosition(opened.store.db, g, 'segments')).toBe(3);
      expect((await store.pageTop(g, [], all)).rows.map((r) => r.content)).toEqual(['alpha 50%', 'beta', 'gamma 50_']);
      expect(await store.pageTop(g, [], { keyword: '50%', limit: 10, offset: 0 })).toMatchObject({ total: 1, rows: [{ content: 'alpha 50%' }] });
      expect((await store.pageTop(g, [], { keyword: undefined, limit: 1, offset: 1 })).rows.map((r) => r.content)).toEqual(['beta']);
      expect((await store.pageTop(g, ['error'], all)).total).toBe(0);
      expect(await store.totals(opened.store.db, g, 'segments')).toEqual({ tokens: rows.reduce((n, r) => n + r.tokens, 0), words: rows.reduce((n, r) => n + r.word_count, 0) });

      await store.update(opened.store.db, [rows[1]!.id], { content: 'BETA', enabled: 0 });
      expect(await store.findTop(opened.store.db, g, rows[1]!.id)).toMatchObject({ content: 'BETA', enabled: 0 });
      expect(await store.findTop(opened.store.db, { ...g, generation: 2 }, rows[1]!.id)).toBeUndefined();
      await store.delete(opened.store.db, [rows[0]!.id, rows[2]!.id]);
      expect((await store.byIds(rows.map((r) => r.id))).map((r) => r.id)).toEqual([rows[1]!.id]);
      expect(await store.unitsAt(g, 'segments', 2)).toEqual({ count: 1, last: 2, hashAt: rows[1]!.hash });
    });

    it('parent chunks with children; generations are dropped one or all but one', async () => {
      const g1 = { documentId: newId(), generation: 1 };
      const g2 = { ...g1, generation: 2 };
      const parent = parentChunkRow(place(g1, datasetId, 1), 'the parent');
      const children = ['c one', 'c two'].map((c, k) => segmentRow(place(g1, datasetId, k + 1), c, null, parent.id));
      await store.insertParents(opened.store.db, [parent]);
      await store.insert(opened.store.db, children);
      expect(await store.findParent(opened.store.db, g1, parent.id)).toMatchObject({ content: 'the parent' });
      expect((await store.childrenOf(opened.store.db, [parent.id])).map((c) => c.content)).toEqual(['c one', 'c two']);
      expect(await store.lastChildPosition(opened.store.db, parent.id)).toBe(2);
      expect((await store.pageChildren(parent.id, { keyword: 'TWO', limit: 10, offset: 0 })).rows.map((c) => c.id)).toEqual([children[1]!.id]);
      expect(await store.findChild(opened.store.db, parent.id, children[0]!.id)).toBeDefined();
      expect(await store.findChild(opened.store.db, newId(), children[0]!.id)).toBeUndefined();
      // Children are not top-level segments.
      expect((await store.pageTop(g1, [], all)).total).toBe(0);
      expect((await store.pageParents(g1, all)).total).toBe(1);
      await store.updateParent(opened.store.db, parent.id, { keywords: '["k"]' });
      expect((await store.parentsByIds([parent.id]))[0]?.keywords).toBe('["k"]');

      await opened.store.db.transaction().execute((tx) => store.insertBulk(tx, [segmentRow(place(g2, datasetId, 1), 'new version', null, null)]));
      expect((await store.pageTop(g2, [], all)).total).toBe(1);
      await store.deleteOtherGenerations(opened.store.db, g2);
      expect(await store.findParent(opened.store.db, g1, parent.id)).toBeUndefined();
      expect(await store.childrenOf(opened.store.db, [parent.id])).toEqual([]);
      expect((await store.pageTop(g2, [], all)).total).toBe(1);
      await store.deleteGeneration(opened.store.db, g2);
      expect((await store.pageTop(g2, [], all)).total).toBe(0);
    });

    it('a rolled-back transaction leaves no segment or parent chunk; deleteOfDocument removes every generation', async () => {
      const g = { documentId: newId(), generation: 1 };
      const parent = parentChunkRow(place(g, datasetId, 1), 'p');
      await expect(
        opened.store.db.transaction().execute(async (tx) => {
          await store.insertParents(tx, [parent]);
          await store.insertBulk(tx, [segmentRow(place(g, datasetId, 1), 'child', null, parent.id)]);
          await store.insert(tx, [segmentRow(place(g, datasetId, 1), 'top', null, null)]);
          expect((await store.childrenOf(tx, [parent.id])).length).toBe(1);
          throw new Error('rollback');
        }),
      ).rejects.toThrow('rollback');
      expect(await store.parentsByIds([parent.id])).toEqual([]);
      expect(await store.childrenOf(opened.store.db, [parent.id])).toEqual([]);
      expect((await store.pageTop(g, [], all)).total).toBe(0);

      await store.insertParents(opened.store.db, [parent]);
      await store.insert(opened.store.db, [segmentRow(place({ ...g, generation: 2 }, datasetId, 1), 'top', null, null)]);
      await store.deleteOfDocument(opened.store.db, g.documentId);
      expect(await store.parentsByIds([parent.id])).toEqual([]);
      expect((await store.pageTop({ ...g, generation: 2 }, [], all)).total).toBe(0);
      expect(await store.hitCounts([g.documentId])).toEqual(new Map());
    });
  });
}

onEachStore('segment-store', suite);
