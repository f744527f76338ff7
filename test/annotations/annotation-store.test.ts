import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { onEachStore, type OpenedStore } from '../helpers/store-suites.js';
import { AnnotationStore } from '../../src/annotations/annotation-store.js';
import { newId } from '../../src/infra/ids.js';

/** AnnotationStore on each database: annotations, jobs, the reply setting and embeddings. */

function suite(label: string, open: () => Promise<OpenedStore>): void {
  describe(`AnnotationStore (${label})`, () => {
    let opened: OpenedStore;
    let store: AnnotationStore;
    const appId = newId();
    beforeAll(async () => {
      opened = await open();
      store = new AnnotationStore(opened.store.db);
    });
    afterAll(async () => opened?.close());

    it('inserts, lists newest first with a keyword (LIKE characters literal), updates and deletes with hits and embedding', async () => {
      const a = await store.insert({ id: newId(), appId, question: 'What is 50%?', answer: 'half', now: 1000 });
      const b = await store.insert({ id: newId(), appId, question: 'Why?', answer: 'because', now: 2000 });
      expect((await store.list(appId, { keyword: '', limit: 10, offset: 0 })).items.map((x) => x.id)).toEqual([b.id, a.id]);
      expect(await store.list(appId, { keyword: '50%', limit: 10, offset: 0 })).toMatchObject({ total: 1, items: [{ id: a.id, answer: 'half', hitCount: 0 }] });
      expect((await store.list(appId, { keyword: '%', limit: 1, offset: 1 })).items).toEqual([]);
      expect(await store.list(newId(), { keyword: '', limit: 10, offset: 0 })).toEqual({ items: [], total: 0 });

      await store.update(a.id, 'What is 25%?', 'a quarter', 3000);
      expect(await store.find(appId, a.id)).toMatchObject({ question: 'What is 25%?', answer: 'a quarter', appId, accountId: null });
      expect(await store.find(newId(), a.id)).toBeUndefined();

      await store.recordHit({ id: newId(), appId, annotationId: a.id, messageId: newId(), endUserId: newId(), query: 'q', score: 0.9, annotationQuestion: 'What is 25%?', annotationContent: 'a quarter', now: 4000 });
      expect((await store.find(appId, a.id))?.hitCount).toBe(1);
      expect(await store.hitHistoryCount(a.id)).toBe(1);
      await store.saveEmbedding(opened.store.db, { annotationId: a.id, appId, model: 'm', question: 'What is 25%?', dims: 2, embedding: 'AAAA' });
      expect(await store.embedded(appId, 'm')).toMatchObject([{ id: a.id }]);

      await store.delete(a.id);
      expect(await store.find(appId, a.id)).toBeUndefined();
      expect(await store.hitHistoryCount(a.id)).toBe(0);
      expect(await store.embeddingKeys(appId)).toEqual([]);
      expect(await store.questions(appId)).toEqual([{ id: b.id, question: 'Why?' }]);
    });

    it('jobs: one open per action, finished once; a later job of the other action is seen', async () => {
      const s = { scoreThreshold: 0.8, provider: 'p', model: 'm' };
      const enable = newId();
      await store.insertJob(opened.store.db, { id: enable, appId, action: 'enable', setting: s, now: 1000 });
      expect(await store.openJobId(opened.store.db, appId, 'enable')).toBe(enable);
      expect(await store.job(enable, { appId, action: 'disable' })).toBeUndefined();
      await store.markProcessing(enable, 1100);
      const job = (await store.job(enable))!;
      expect(job).toMatchObject({ status: 'processing', scoreThreshold: 0.8, provider: 'p', model: 'm', createdAt: 1000 });
      expect(await store.hasLaterOtherAction(opened.store.db, job)).toBe(false);
      await store.insertJob(opened.store.db, { id: newId(), appId, action: 'disable', setting: s, now: 2000 });
      expect(await store.hasLaterOtherAction(opened.store.db, job)).toBe(true);
      await store.finishJob(opened.store.db, enable, 'error', 'boom', 1200);
      await store.finishJob(opened.store.db, enable, 'completed', '', 1300);
      expect(await store.job(enable)).toMatchObject({ status: 'error', errorMsg: 'boom' });
      expect(await store.openJobId(opened.store.db, appId, 'enable')).toBeUndefined();
    });

    it('a rolled-back transaction leaves no setting, embedding or job', async () => {
      const app = newId();
      const a = await store.insert({ id: newId(), appId: app, question: 'q', answer: 'a', now: 1 });
      await expect(
        opened.store.db.transaction().execute(async (tx) => {
          await store.saveSetting(tx, app, { scoreThreshold: 0.5, provider: 'p', model: 'm' }, 1);
          await store.saveEmbedding(tx, { annotationId: a.id, appId: app, model: 'm', question: 'q', dims: 1, embedding: 'AAAAAA==' });
          await store.insertJob(tx, { id: newId(), appId: app, action: 'enable', setting: { scoreThreshold: 0.5, provider: 'p', model: 'm' }, now: 1 });
          expect(await store.setting(app, tx)).toEqual({ scoreThreshold: 0.5, provider: 'p', model: 'm' });
          throw new Error('rollback');
        }),
      ).rejects.toThrow('rollback');
      expect(await store.setting(app)).toBeUndefined();
      expect(await store.embeddingKeys(app)).toEqual([]);
      expect(await store.openJobId(opened.store.db, app, 'enable')).toBeUndefined();

      await store.saveSetting(opened.store.db, app, { scoreThreshold: 0.5, provider: 'p', model: 'm' }, 1);
      await store.saveSetting(opened.store.db, app, { scoreThreshold: 0.7, provider: 'p', model: 'm2' }, 2);
      expect(await store.setting(app)).toEqual({ scoreThreshold: 0.7, provider: 'p', model: 'm2' });
      await store.deleteSetting(opened.store.db, app);
      expect(await store.setting(app)).toBeUndefined();
    });
  });
}

onEachStore('annotation-store', suite);
