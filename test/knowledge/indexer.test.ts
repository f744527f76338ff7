import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { onEachStore, type OpenedStore } from '../helpers/store-suites.js';
import { Indexer } from '../../src/knowledge/ingest/indexer.js';
import type { Embedder } from '../../src/knowledge/ingest/embedder.js';
import type { KeywordIndex, KeywordRow } from '../../src/knowledge/index/keyword-index.js';
import type { VectorIndex, VectorRow } from '../../src/knowledge/index/vector-index.js';
import { ParseError } from '../../src/knowledge/errors.js';
import { OFFLOAD_OPS, type OffloadArgs, type OffloadOp, type OffloadResult } from '../../src/text/offload-ops.js';
import type { UploadedFile } from '../../src/files/file-store.js';
import type { ModelProviders } from '../../src/llm/model-provider.js';
import { newId } from '../../src/infra/ids.js';
import type { Logger } from '../../src/infra/logger.js';

/**
 * The indexer on a real database (its own stores), with every other port faked: the upload store
 * and the parser answer what the test says, the embedder and both indexes record their calls, the
 * text work runs inline. What it proves: the stages and the swap of a new generation, the
 * document's own faults ending the run at once, other failures thrown for the queue to retry, the
 * fence against another execution, and a parse that never finished not being run again.
 */

const silent = { info: () => undefined, warn: () => undefined, error: () => undefined, debug: () => undefined, child: () => silent } as unknown as Logger;

class RecordingKeywords implements KeywordIndex {
  readonly added: KeywordRow[] = [];
  readonly calls: string[] = [];
  async init(): Promise<void> {}
  async add(_db: unknown, rows: readonly KeywordRow[]): Promise<void> {
    this.added.push(...rows);
  }
  async removeDocument(_db: unknown, documentId: string, generation?: number): Promise<void> {
    this.calls.push(`removeDocument ${documentId} ${generation ?? '*'}`);
  }
  async removeOtherGenerations(_db: unknown, documentId: string, keep: number): Promise<void> {
    this.calls.push(`removeOtherGenerations ${documentId} keep ${keep}`);
  }
  async addSegments(): Promise<void> {}
  async removeSegments(): Promise<void> {}
  async search(): Promise<never[]> {
    return [];
  }
}

class RecordingVectors implements VectorIndex {
  readonly kind = 'recording';
  readonly added: { model: string; rows: readonly VectorRow[] }[] = [];
  async init(): Promise<void> {}
  async add(_db: unknown, model: string, rows: readonly VectorRow[]): Promise<void> {
    this.added.push({ model, rows });
  }
  async removeDocument(): Promise<void> {}
  async removeOtherGenerations(): Promise<void> {}
  async removeSegments(): Promise<void> {}
  async search(): Promise<never[]> {
    return [];
  }
}

/** Embeds each text as a 3-d vector; `fail` makes the next call throw (an upstream down). */
class FakeEmbedder implements Embedder {
  readonly provider = 'test';
  readonly model = 'fake-3d';
  readonly batches: string[][] = [];
  fail: Error | undefined;
  beforeEmbed: (() => Promise<void>) | undefined;
  async embed(texts: readonly string[]): Promise<Float32Array[]> {
    await this.beforeEmbed?.();
    if (this.fail) throw this.fail;
    this.batches.push([...texts]);
    return texts.map((t) => Float32Array.from([t.length, 1, 0]));
  }
}

const inlineOffload = {
  run: async <K extends OffloadOp>(op: K, _chars: number, ...args: OffloadArgs<K>): Promise<OffloadResult<K>> =>
    (OFFLOAD_OPS[op] as unknown as (...a: OffloadArgs<K>) => OffloadResult<K>)(...args),
};

const PARAGRAPHS = ['Alpha paragraph about apples.', 'Beta paragraph about bananas.', 'Gamma paragraph about grapes.'];

function suite(label: string, open: () => Promise<OpenedStore>): void {
  describe(`Indexer with fake ports (${label})`, () => {
    let opened: OpenedStore;
    let n = 0;
    beforeAll(async () => {
      opened = await open();
    });
    afterAll(async () => opened?.close());

    /** A dataset, a document and its indexing run of `generation`, as an accepted create or update leaves them. */
    async function accepted(opts: { technique?: 'economy' | 'high_quality'; generation?: number; documentId?: string; datasetId?: string; parsingOwner?: string } = {}) {
      const db = opened.store.db;
      const now = 1_700_000_000_000 + ++n;
      const datasetId = opts.datasetId ?? newId();
      const documentId = opts.documentId ?? newId();
      const generation = opts.generation ?? 1;
      const technique = opts.technique ?? 'economy';
      if (!opts.datasetId) {
        await db.insertInto('datasets').values({ id: datasetId, workspace_id: 'ws', name: `ds ${n} ${label}`, description: '', permission: 'only_me', indexing_technique: technique, embedding_model: null, embedding_model_provider: null, retrieval_model: '{}', index_version: 0, built_in_field_enabled: 0, created_by: 'k', created_at: now, updated_at: now }).execute();
      }
      const fileId = newId();
      const doc = { dataset_id: datasetId, position: 1, data_source_type: 'upload_file', upload_file_id: fileId, name: 'notes.txt', created_from: 'api', created_by: 'k', process_rule_id: newId(), process_rule: '{"mode":"automatic"}', doc_form: 'text_model', doc_language: 'English', batch: `b${n}`, tokens: 0, word_count: 0, indexing_status: 'waiting', error: null, enabled: 1, disabled_at: null, disabled_by: null, archived: 0, hit_count: 0, active_generation: generation - 1, latest_generation: generation, created_at: now, updated_at: now };
      if (opts.documentId) await db.updateTable('documents').set({ latest_generation: generation, upload_file_id: fileId, indexing_status: 'waiting' }).where('id', '=', documentId).execute();
      else await db.insertInto('documents').values({ id: documentId, ...doc }).execute();
      const runId = `${documentId}:${generation}`;
      await db.insertInto('indexing_runs').values({ id: runId, batch: `b${n}`, dataset_id: datasetId, document_id: documentId, generation, upload_file_id: fileId, process_rule: '{"mode":"automatic"}', indexing_technique: technique, status: 'waiting', error: null, processing_started_at: null, parsing_completed_at: null, cleaning_completed_at: null, splitting_completed_at: null, completed_at: null, paused_at: null, stopped_at: null, owner: null, parsing_owner: opts.parsingOwner ?? null, total_segments: 0, completed_segments: 0, tokens: 0, word_count: 0, created_at: now, updated_at: now }).execute();
      return { datasetId, documentId, runId, fileId };
    }

    function indexer(o: { text?: string | Error; file?: boolean } = {}) {
      const keyword = new RecordingKeywords();
      const vectors = new RecordingVectors();
      const embedder = new FakeEmbedder();
      const parsed: string[] = [];
      const file: UploadedFile = { id: 'f', workspaceId: 'ws', appId: null, name: 'notes.txt', size: 10, extension: 'txt', mimeType: 'text/plain', blobKey: 'k', createdBy: 'k', createdAt: 0 };
      const ix = new Indexer({
        db: opened.store.db,
        segments: opened.store.dialect.segmentWriter(),
        clock: { now: () => 1_700_000_100_000 },
        logger: silent,
        uploads: { find: async () => (o.file === false ? undefined : file), read: async () => Buffer.from('bytes') },
        embedder,
        keyword,
        vectors,
        embeddingsBatchSize: 2,
        maxSegmentationTokens: 4000,
        fullDocMaxTokens: 10_000,
        providers: () => ({}) as unknown as ModelProviders,
        qaModel: undefined,
        qaConcurrency: 1,
        offload: inlineOffload,
        parser: {
          parse: async (_bytes, ext) => {
            parsed.push(ext);
            if (o.text instanceof Error) throw o.text;
            return o.text ?? PARAGRAPHS.join('\n');
          },
        },
      });
      return { ix, keyword, vectors, embedder, parsed };
    }

    const runRow = (id: string) => opened.store.db.selectFrom('indexing_runs').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    const docRow = (id: string) => opened.store.db.selectFrom('documents').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    const segmentsOf = (documentId: string) => opened.store.db.selectFrom('segments').select(['content', 'generation', 'position']).where('document_id', '=', documentId).orderBy('generation').orderBy('position').execute();

    it('economy: parses, splits one segment per line, indexes keywords only, swaps the generation in and completes', async () => {
      const a = await accepted();
      const { ix, keyword, vectors, embedder, parsed } = indexer();
      await ix.run(a.runId, new AbortController().signal);
      expect(parsed).toEqual(['txt']);
      expect((await segmentsOf(a.documentId)).map((s) => [s.content, s.generation, s.position])).toEqual(PARAGRAPHS.map((p, i) => [p, 1, i + 1]));
      expect(keyword.added.map((r) => r.content)).toEqual(PARAGRAPHS);
      expect(vectors.added).toEqual([]);
      expect(embedder.batches).toEqual([]);
      expect(await runRow(a.runId)).toMatchObject({ status: 'completed', total_segments: 3, completed_segments: 3, owner: expect.any(String), parsing_owner: null });
      const doc = await docRow(a.documentId);
      expect(doc).toMatchObject({ indexing_status: 'completed', active_generation: 1, error: null });
      expect(Number(doc.word_count)).toBe(PARAGRAPHS.join('').length);
      const ds = await opened.store.db.selectFrom('datasets').select('index_version').where('id', '=', a.datasetId).executeTakeFirstOrThrow();
      expect(Number(ds.index_version)).toBe(1);
      expect(keyword.calls).toContain(`removeOtherGenerations ${a.documentId} keep 1`);
    });

    it('high_quality: embeds in batches of EMBEDDINGS_BATCH_SIZE and adds the vectors with the model', async () => {
      const a = await accepted({ technique: 'high_quality' });
      const { ix, vectors, embedder } = indexer();
      await ix.run(a.runId, new AbortController().signal);
      expect(embedder.batches).toEqual([PARAGRAPHS.slice(0, 2), PARAGRAPHS.slice(2)]);
      expect(vectors.added.map((v) => [v.model, v.rows.length])).toEqual([
        ['fake-3d', 2],
        ['fake-3d', 1],
      ]);
      expect((await runRow(a.runId)).status).toBe('completed');
    });

    it('an update indexes generation 2 beside the served one, then drops generation 1 at the swap', async () => {
      const a = await accepted();
      await indexer().ix.run(a.runId, new AbortController().signal);
      const b = await accepted({ datasetId: a.datasetId, documentId: a.documentId, generation: 2 });
      await indexer({ text: 'Delta only.' }).ix.run(b.runId, new AbortController().signal);
      expect((await segmentsOf(a.documentId)).map((s) => [s.content, s.generation])).toEqual([['Delta only.', 2]]);
      expect(await docRow(a.documentId)).toMatchObject({ active_generation: 2, indexing_status: 'completed' });
    });

    it('a run superseded by a newer update ends in error without touching the served segments', async () => {
      const a = await accepted();
      await indexer().ix.run(a.runId, new AbortController().signal);
      const b = await accepted({ datasetId: a.datasetId, documentId: a.documentId, generation: 2 });
      await accepted({ datasetId: a.datasetId, documentId: a.documentId, generation: 3 });
      const { ix, parsed } = indexer({ text: 'stale' });
      await ix.run(b.runId, new AbortController().signal);
      expect(parsed).toEqual([]);
      expect(await runRow(b.runId)).toMatchObject({ status: 'error', error: 'Superseded by a newer update of the document.' });
      expect((await segmentsOf(a.documentId)).map((s) => s.generation)).toEqual([1, 1, 1]);
    });

    it('the document\'s own fault (a parse error, no text, a deleted file) ends the run at once, not retried', async () => {
      for (const [o, message] of [
        [{ text: new ParseError('The PDF could not be read: bad xref') }, 'The PDF could not be read: bad xref'],
        [{ text: '   \n\n  ' }, 'The document contains no text after cleaning.'],
        [{ file: false }, 'The document file was deleted.'],
      ] as const) {
        const a = await accepted();
        await expect(indexer(o).ix.run(a.runId, new AbortController().signal)).resolves.toBeUndefined();
        expect(await runRow(a.runId)).toMatchObject({ status: 'error', error: message });
        expect(await docRow(a.documentId)).toMatchObject({ indexing_status: 'error', error: message, active_generation: 0 });
      }
    });

    it('an infrastructure failure (the embeddings endpoint down) is thrown for the queue to retry; the retry finishes the document', async () => {
      const a = await accepted({ technique: 'high_quality' });
      const first = indexer();
      first.embedder.fail = new Error('connect ECONNREFUSED 127.0.0.1:9');
      await expect(first.ix.run(a.runId, new AbortController().signal)).rejects.toThrow(/ECONNREFUSED/);
      expect((await runRow(a.runId)).status).toBe('indexing');
      const retry = indexer();
      await retry.ix.run(a.runId, new AbortController().signal);
      expect((await runRow(a.runId)).status).toBe('completed');
      expect((await segmentsOf(a.documentId)).map((s) => s.content)).toEqual(PARAGRAPHS);
    });

    it('fenced: when another execution claims the run mid-way, this one stops without writing its batch or swapping', async () => {
      const a = await accepted({ technique: 'high_quality' });
      const { ix, embedder } = indexer();
      embedder.beforeEmbed = async () => {
        embedder.beforeEmbed = undefined;
        await opened.store.db.updateTable('indexing_runs').set({ owner: 'another-execution' }).where('id', '=', a.runId).execute();
      };
      await expect(ix.run(a.runId, new AbortController().signal)).resolves.toBeUndefined();
      expect(await runRow(a.runId)).toMatchObject({ owner: 'another-execution', status: 'indexing', completed_segments: 0 });
      expect(await segmentsOf(a.documentId)).toEqual([]);
      expect((await docRow(a.documentId)).active_generation).toBe(0);
    });

    it('a parse that never finished (its process died) is not run again: the document ends in error', async () => {
      const a = await accepted({ parsingOwner: 'dead-execution' });
      const { ix, parsed } = indexer();
      await ix.run(a.runId, new AbortController().signal);
      expect(parsed).toEqual([]);
      expect(await runRow(a.runId)).toMatchObject({ status: 'error', error: expect.stringMatching(/^Parsing notes\.txt did not finish: the process parsing it stopped/) });
    });

    it('does nothing for a finished run (a job delivered twice)', async () => {
      const a = await accepted();
      await indexer().ix.run(a.runId, new AbortController().signal);
      const again = indexer();
      await again.ix.run(a.runId, new AbortController().signal);
      expect(again.parsed).toEqual([]);
      expect((await segmentsOf(a.documentId)).length).toBe(3);
    });
  });
}

onEachStore('indexer', suite);
