import type { Kysely, Transaction } from 'kysely';
import type SQLite from 'better-sqlite3';
import type { Database, IndexingRunTable, SegmentTable } from '../store/schema.js';
import type { Clock } from '../infra/clock.js';
import type { Logger } from '../infra/logger.js';
import { newId, sha256 } from '../infra/ids.js';
import type { UploadService } from '../files/upload-service.js';
import { ParseError } from './errors.js';
import { parseDocument } from './parse/index.js';
import { cleanText, splitText } from './chunk.js';
import { AUTOMATIC_RULE, parseProcessRule } from './process-rule.js';
import { countTokens } from './tokens.js';
import type { Embedder } from './embedder.js';
import type { KeywordIndex } from './index/keyword-index.js';
import type { VectorIndex } from './index/vector-index.js';

const INSERT_BATCH = 1000;

/**
 * Runs one indexing run: parse → clean → split → index the new segment generation → swap it in.
 * Idempotent: a re-run first removes whatever a previous attempt of the same run left behind,
 * and a run that is finished, superseded or whose document is gone does nothing.
 */
export class Indexer {
  readonly #db: Kysely<Database>;
  readonly #sqlite: SQLite.Database | undefined;
  #insertSegment: SQLite.Statement | undefined;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #uploads: UploadService;
  readonly #embedder: Embedder;
  readonly #keyword: KeywordIndex;
  readonly #vectors: VectorIndex;
  readonly #batchSize: number;
  readonly #maxTokens: number;

  constructor(deps: {
    db: Kysely<Database>;
    /** The raw SQLite handle (a prepared statement inserts segments much faster than a built query). */
    sqlite: SQLite.Database | undefined;
    clock: Clock;
    logger: Logger;
    uploads: UploadService;
    embedder: Embedder;
    keyword: KeywordIndex;
    vectors: VectorIndex;
    embeddingsBatchSize: number;
    maxSegmentationTokens: number;
  }) {
    this.#db = deps.db;
    this.#sqlite = deps.sqlite;
    this.#clock = deps.clock;
    this.#log = deps.logger;
    this.#uploads = deps.uploads;
    this.#embedder = deps.embedder;
    this.#keyword = deps.keyword;
    this.#vectors = deps.vectors;
    this.#batchSize = deps.embeddingsBatchSize;
    this.#maxTokens = deps.maxSegmentationTokens;
  }

  /** Moves the run (and its document, while it is the latest version) to a stage. */
  async #stage(run: IndexingRunTable, status: string, set: Partial<IndexingRunTable> = {}): Promise<void> {
    const now = this.#clock.now();
    await this.#db.updateTable('indexing_runs').set({ status, ...set, updated_at: now }).where('id', '=', run.id).execute();
    await this.#db
      .updateTable('documents')
      .set({ indexing_status: status, ...(set.error !== undefined ? { error: set.error } : {}), updated_at: now })
      .where('id', '=', run.document_id)
      .where('latest_generation', '=', run.generation)
      .execute();
  }

  async #discard(run: IndexingRunTable): Promise<void> {
    await this.#db.transaction().execute(async (trx) => {
      await this.#keyword.removeDocument(trx, run.document_id, run.generation);
      await this.#vectors.removeDocument(trx, run.document_id, run.generation);
      await trx.deleteFrom('segments').where('document_id', '=', run.document_id).where('generation', '=', run.generation).execute();
    });
  }

  /** Ends a run in `error` with a message (a parse failure, or the job's last attempt failed). */
  async fail(runId: string, message: string): Promise<void> {
    const run = await this.#db.selectFrom('indexing_runs').selectAll().where('id', '=', runId).executeTakeFirst();
    if (!run || run.status === 'completed') return;
    await this.#discard(run);
    await this.#stage(run, 'error', { error: message, stopped_at: this.#clock.now() });
  }

  async run(runId: string, signal: AbortSignal): Promise<void> {
    const run = await this.#db.selectFrom('indexing_runs').selectAll().where('id', '=', runId).executeTakeFirst();
    if (!run || run.status === 'completed' || run.status === 'error') return;
    const doc = await this.#db.selectFrom('documents').selectAll().where('id', '=', run.document_id).executeTakeFirst();
    if (!doc) return;
    if (doc.latest_generation !== run.generation) {
      await this.#discard(run);
      await this.#stage(run, 'error', { error: 'Superseded by a newer update of the document.', stopped_at: this.#clock.now() });
      return;
    }
    await this.#discard(run); // leftovers of an earlier attempt
    const started = this.#clock.now();
    await this.#stage(run, 'parsing', { processing_started_at: started, completed_segments: 0, total_segments: 0 });

    const file = await this.#uploads.find(run.upload_file_id);
    const bytes = file ? await this.#uploads.read(file) : undefined;
    if (!file || !bytes) return this.fail(run.id, 'The document file is missing from storage.');
    let text: string;
    try {
      text = await parseDocument(bytes, file.extension);
    } catch (err) {
      if (err instanceof ParseError) return this.fail(run.id, err.message);
      throw err;
    }
    signal.throwIfAborted();
    await this.#stage(run, 'cleaning', { parsing_completed_at: this.#clock.now() });
    let rule = AUTOMATIC_RULE;
    try {
      rule = parseProcessRule(JSON.parse(run.process_rule), this.#maxTokens);
    } catch {
      // stored rules were validated on acceptance; fall back to automatic if the limit changed since
    }
    const cleaned = cleanText(text, rule);
    await this.#stage(run, 'splitting', { cleaning_completed_at: this.#clock.now() });
    const chunks = splitText(cleaned, rule);
    if (chunks.length === 0) return this.fail(run.id, 'The document contains no text after cleaning.');
    await this.#stage(run, 'indexing', { splitting_completed_at: this.#clock.now(), total_segments: chunks.length });

    const highQuality = run.indexing_technique === 'high_quality';
    const step = highQuality ? this.#batchSize : INSERT_BATCH;
    let tokens = 0;
    let words = 0;
    for (let i = 0; i < chunks.length; i += step) {
      signal.throwIfAborted();
      const part = chunks.slice(i, i + step);
      const vectors = highQuality ? await this.#embedder.embed(part, signal) : [];
      const now = this.#clock.now();
      const rows = part.map((content, j) => {
        const t = countTokens(content);
        tokens += t;
        words += content.length;
        return {
          id: newId(),
          dataset_id: run.dataset_id,
          document_id: run.document_id,
          generation: run.generation,
          position: i + j + 1,
          content,
          word_count: content.length,
          tokens: t,
          hash: sha256(content),
          status: 'completed',
          hit_count: 0,
          created_at: now,
          completed_at: now,
        };
      });
      await this.#db.transaction().execute(async (trx) => {
        const rowids = await this.#insertSegments(trx, rows);
        await this.#keyword.add(trx, rows.map((r, j) => ({ rowid: rowids[j]!, id: r.id, datasetId: r.dataset_id, content: r.content })));
        if (highQuality) {
          await this.#vectors.add(
            trx,
            this.#embedder.model,
            rows.map((r, j) => ({ segmentId: r.id, datasetId: r.dataset_id, documentId: r.document_id, vector: vectors[j]! })),
          );
        }
        await trx.updateTable('indexing_runs').set({ completed_segments: i + part.length, updated_at: now }).where('id', '=', run.id).execute();
      });
    }
    await this.#swap(run, tokens, words);
  }

  /**
   * Inserts inside the caller's transaction (on SQLite the raw handle is that same connection) and
   * returns each row's SQLite rowid (0 on PostgreSQL), which the keyword index reuses.
   */
  async #insertSegments(trx: Transaction<Database>, rows: readonly SegmentTable[]): Promise<(number | bigint)[]> {
    if (!this.#sqlite) {
      await trx.insertInto('segments').values([...rows]).execute();
      return rows.map(() => 0);
    }
    // Positional parameters: binding by name from an object costs a property lookup per column.
    const insert = (this.#insertSegment ??= this.#sqlite.prepare(
      'INSERT INTO segments (id, dataset_id, document_id, generation, position, content, word_count, tokens, hash, status, hit_count, created_at, completed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
    ));
    return rows.map(
      (r) =>
        insert.run(r.id, r.dataset_id, r.document_id, r.generation, r.position, r.content, r.word_count, r.tokens, r.hash, r.status, r.hit_count, r.created_at, r.completed_at)
          .lastInsertRowid,
    );
  }

  /** Makes the new generation the served one and drops every other, in one transaction. */
  async #swap(run: IndexingRunTable, tokens: number, words: number): Promise<void> {
    const now = this.#clock.now();
    const swapped = await this.#db.transaction().execute(async (trx) => {
      const res = await trx
        .updateTable('documents')
        .set({ active_generation: run.generation, indexing_status: 'completed', error: null, tokens, word_count: words, updated_at: now })
        .where('id', '=', run.document_id)
        .where('latest_generation', '=', run.generation)
        .executeTakeFirst();
      if (Number(res.numUpdatedRows) !== 1) return false;
      await this.#keyword.removeOtherGenerations(trx, run.document_id, run.generation);
      await this.#vectors.removeOtherGenerations(trx, run.document_id, run.generation);
      await trx.deleteFrom('segments').where('document_id', '=', run.document_id).where('generation', '<>', run.generation).execute();
      await trx.updateTable('datasets').set((eb) => ({ index_version: eb('index_version', '+', 1) })).where('id', '=', run.dataset_id).execute();
      await trx
        .updateTable('indexing_runs')
        .set({ status: 'completed', completed_at: now, tokens, word_count: words, updated_at: now })
        .where('id', '=', run.id)
        .execute();
      return true;
    });
    if (!swapped) {
      this.#log.info({ run: run.id }, 'indexing run superseded before its swap');
      await this.#discard(run);
      await this.#stage(run, 'error', { error: 'Superseded by a newer update of the document.', stopped_at: now });
    }
  }
}
