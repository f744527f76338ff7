import type { Kysely, Transaction } from 'kysely';
import type { Database, ParentChunkTable, SegmentTable } from '../../store/schema.js';
import type { Clock } from '../../infra/clock.js';
import type { Logger } from '../../infra/logger.js';
import { newId, sha256 } from '../../infra/ids.js';
import type { UploadService } from '../../files/upload-service.js';
import { DocumentRefused, IndexingUnavailable } from '../errors.js';
import type { DocumentParser } from './parse/document-parser.js';
import type { DocumentChunks } from './chunk.js';
import type { TextOffload } from '../../text/offload.js';
import { AUTOMATIC_RULE, parseProcessRule } from './process-rule.js';
import { decodePreparedChunks, PREPARED_RULE } from './prepared-chunks.js';
import { parentChunkRow, segmentRow, type ChunkPlace } from './chunk-rows.js';
import { generateQaPairs, type QaPair } from './qa.js';
import type { ModelProviders } from '../../llm/model-provider.js';
import type { Embedder } from './embedder.js';
import type { KeywordIndex } from '../index/keyword-index.js';
import type { SegmentWriter } from '../index/search-dialect.js';
import type { VectorIndex } from '../index/vector-index.js';
import { assertOwner, Fenced, turn } from './run-ownership.js';
import { DatasetStore } from '../dataset-store.js';
import { DocumentStore, type IndexingStatus } from '../documents/document-store.js';
import { IndexingRunStore, type IndexingRun, type RunChange } from './indexing-run-store.js';
import { SegmentStore, type Generation } from '../documents/segment-store.js';

/**
 * Segments stored per transaction without embeddings. Each batch is written synchronously on
 * SQLite (better-sqlite3), so it is kept small enough to hold the event loop only a few ms.
 */
const INSERT_BATCH = 100;

/** Where a chunk of this run's document version goes. */
const place = (run: IndexingRun, position: number, now: number): ChunkPlace => ({ datasetId: run.dataset_id, documentId: run.document_id, generation: run.generation, position, now });


/**
 * Runs one indexing run: parse → clean → split → index the new segment generation → swap it in.
 * Idempotent: a re-run first removes whatever a previous attempt of the same run left behind,
 * and a run that is finished, superseded or whose document is gone does nothing.
 */
export class Indexer {
  readonly #db: Kysely<Database>;
  readonly #datasets: DatasetStore;
  readonly #documents: DocumentStore;
  readonly #runs: IndexingRunStore;
  readonly #segments: SegmentStore;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #uploads: Pick<UploadService, 'find' | 'read'>;
  readonly #embedder: Embedder;
  readonly #keyword: KeywordIndex;
  readonly #vectors: VectorIndex;
  readonly #batchSize: number;
  readonly #maxTokens: number;
  readonly #fullDocMaxTokens: number;
  readonly #providers: () => ModelProviders;
  readonly #qaModel: string | undefined;
  readonly #qaConcurrency: number;
  readonly #offload: Pick<TextOffload, 'run'>;
  readonly #parser: Pick<DocumentParser, 'parse'>;
  readonly #onIndexed: (segments: number) => void;

  constructor(deps: {
    db: Kysely<Database>;
    /** The storage dialect's bulk segment insert. */
    segments: SegmentWriter;
    clock: Clock;
    logger: Logger;
    uploads: Pick<UploadService, 'find' | 'read'>;
    embedder: Embedder;
    keyword: KeywordIndex;
    vectors: VectorIndex;
    embeddingsBatchSize: number;
    maxSegmentationTokens: number;
    /** A `full-doc` parent keeps this many tokens of the document (Dify: 10,000). */
    fullDocMaxTokens: number;
    /** Model providers (for `qa_model`). */
    providers: () => ModelProviders;
    /** `provider/model` that writes Q&A pairs; `qa_model` is refused without it. */
    qaModel: string | undefined;
    /** Model calls at once while writing Q&A pairs. */
    qaConcurrency: number;
    /** Splitting and counting off the event loop. */
    offload: Pick<TextOffload, 'run'>;
    /** Parsing on worker threads, within the `PARSE_*` limits. */
    parser: Pick<DocumentParser, 'parse'>;
    /** Told the number of segments (or child chunks) of each committed batch (metrics). */
    onIndexed?: (segments: number) => void;
  }) {
    this.#onIndexed = deps.onIndexed ?? (() => undefined);
    this.#db = deps.db;
    this.#datasets = new DatasetStore(deps.db);
    this.#documents = new DocumentStore(deps.db);
    this.#runs = new IndexingRunStore(deps.db);
    this.#segments = new SegmentStore(deps.db, deps.segments);
    this.#clock = deps.clock;
    this.#log = deps.logger;
    this.#uploads = deps.uploads;
    this.#embedder = deps.embedder;
    this.#keyword = deps.keyword;
    this.#vectors = deps.vectors;
    this.#batchSize = deps.embeddingsBatchSize;
    this.#maxTokens = deps.maxSegmentationTokens;
    this.#fullDocMaxTokens = deps.fullDocMaxTokens;
    this.#providers = deps.providers;
    this.#qaModel = deps.qaModel;
    this.#qaConcurrency = deps.qaConcurrency;
    this.#offload = deps.offload;
    this.#parser = deps.parser;
  }

  /** Moves the run (and its document, while it is the latest version) to a stage. */
  async #stage(run: IndexingRun, status: IndexingStatus, set: RunChange = {}): Promise<void> {
    const now = this.#clock.now();
    if (!(await this.#runs.updateOwned(run, { status, ...set, updated_at: now }))) throw new Fenced();
    await this.#documents.setLatestStatus(this.#db, run.document_id, run.generation, { indexing_status: status, ...(set.error !== undefined ? { error: set.error } : {}), updated_at: now });
  }

  async #discard(run: IndexingRun): Promise<void> {
    await this.#db.transaction().execute(async (trx) => {
      await assertOwner(trx, run, this.#clock.now());
      await this.#keyword.removeDocument(trx, run.document_id, run.generation);
      await this.#vectors.removeDocument(trx, run.document_id, run.generation);
      await this.#segments.deleteGeneration(trx, ofRun(run));
    });
  }

  /** Ends a run in `error` with a message (a parse failure, or the job's last attempt failed). */
  async fail(runId: string, message: string): Promise<void> {
    const run = await this.#runs.find(runId);
    if (!run || run.status === 'completed' || run.status === 'paused') return;
    try {
      await this.#discard(run);
      await this.#stage(run, 'error', { error: message, stopped_at: this.#clock.now() });
    } catch (err) {
      if (!(err instanceof Fenced)) throw err;
    }
  }

  /** Ends this execution's run in `error` (the document's own fault); a run it no longer owns is left alone. */
  async #refuse(run: IndexingRun, message: string): Promise<void> {
    try {
      await this.#discard(run);
      await this.#stage(run, 'error', { error: message, stopped_at: this.#clock.now() });
    } catch (err) {
      if (!(err instanceof Fenced)) throw err;
    }
  }

  /**
   * Runs (or resumes) an indexing run. Each execution first claims the run with a fresh `owner`;
   * every later write checks it, so a pause (which clears it), a resume or a second worker stops
   * this execution at its next stage or batch. A run whose earlier execution got part-way (a pause,
   * a crash) continues after its last committed batch when the document splits the same way again.
   */
  async run(runId: string, signal: AbortSignal): Promise<void> {
    const owner = newId();
    if (!(await this.#runs.claim(runId, owner))) return; // finished, failed, paused or gone
    const run = await this.#runs.find(runId);
    if (!run || run.owner !== owner) return;
    this.#log.info({ run: run.id, document: run.document_id }, 'indexing document');
    try {
      await this.#run(run, signal);
    } catch (err) {
      // the document's own fault ends the run now; anything else is thrown for the queue to retry
      if (err instanceof DocumentRefused) return this.#refuse(run, err.message);
      if (!(err instanceof Fenced)) {
        // A failure of an execution that has lost the run (paused, then resumed by another) is not
        // the run's failure: reporting it would let the job's last attempt fail the new owner's run.
        if ((await this.#runs.owner(runId)) === owner) throw err;
      }
      this.#log.info({ run: run.id }, 'indexing run paused or taken over; this execution stops');
    }
  }

  async #run(run: IndexingRun, signal: AbortSignal): Promise<void> {
    const doc = await this.#documents.byId(run.document_id);
    if (!doc) return;
    if (doc.latest_generation !== run.generation) {
      await this.#discard(run);
      await this.#stage(run, 'error', { error: 'Superseded by a newer update of the document.', stopped_at: this.#clock.now() });
      return;
    }
    // An earlier execution that committed batches after splitting may be continued; else start clean.
    const resumable = run.completed_segments > 0 && run.splitting_completed_at !== null;
    if (!resumable) await this.#discard(run);
    await this.#stage(run, 'parsing', resumable ? {} : { processing_started_at: this.#clock.now(), completed_segments: 0, total_segments: 0 });

    const file = await this.#uploads.find(run.upload_file_id);
    if (!file) throw new DocumentRefused('The document file was deleted.');
    // An earlier execution marked the parse and never cleared the mark: its process stopped while
    // parsing this file (a parse that kills its process would kill the next one too).
    if (run.parsing_owner !== null) throw new DocumentRefused(`Parsing ${file.name} did not finish: the process parsing it stopped (likely out of memory), so it is not parsed again.`);
    // A blob that is not readable now may be on its way (an object store catching up, a volume
    // coming back): retried like any storage failure; the last attempt ends the run with this.
    const bytes = await this.#uploads.read(file);
    if (!bytes) throw new IndexingUnavailable('The document file is missing from storage.');
    if (isPrepared(run.process_rule)) {
      // a knowledge pipeline's chunker made the chunks: nothing to parse, clean or split
      const prepared = decodePreparedChunks(bytes);
      const now = this.#clock.now();
      await this.#stage(run, 'splitting', { parsing_completed_at: now, cleaning_completed_at: now });
      if (prepared.kind === 'hierarchical') return this.#runHierarchical(run, prepared.groups, signal, resumable);
      if (prepared.units.length === 0) throw new DocumentRefused('The pipeline produced no chunks.');
      return this.#indexUnits(run, prepared.units, signal, resumable);
    }
    const text = await this.#parse(run, bytes, file, signal);
    signal.throwIfAborted();
    await this.#stage(run, 'cleaning', { parsing_completed_at: this.#clock.now() });
    let rule = AUTOMATIC_RULE;
    try {
      rule = parseProcessRule(JSON.parse(run.process_rule), this.#maxTokens);
    } catch {
      // stored rules were validated on acceptance; fall back to automatic if the limit changed since
    }
    // the rules' regular expressions run over the whole document: off the event loop when it is large
    const cleaned = await this.#offload.run('cleanText', text.length, text, rule);
    await this.#stage(run, 'splitting', { cleaning_completed_at: this.#clock.now() });
    // Splitting and counting are CPU-bound and grow with the document: off the event loop.
    const split = await this.#offload.run('chunkDocument', cleaned.length, cleaned, rule, this.#fullDocMaxTokens);
    signal.throwIfAborted();
    if (split.kind === 'hierarchical') return this.#runHierarchical(run, split.groups, signal, resumable);
    const chunks = split.chunks;
    if (chunks.length === 0) throw new DocumentRefused('The document contains no text after cleaning.');
    // qa_model: every chunk becomes the Q&A pairs a model writes from it (Dify's QA index processor).
    const units = doc.doc_form === 'qa_model' ? await this.#qaUnits(chunks.map((c) => c.content), doc.doc_language, signal) : chunks.map((c) => ({ ...c, answer: null }));
    if (units.length === 0) throw new DocumentRefused('The model generated no question-answer pairs from the document.');
    await this.#indexUnits(run, units, signal, resumable);
  }

  /** Indexes flat segments (with an answer for Q&A pairs) in batches, then swaps the new generation in. */
  async #indexUnits(run: IndexingRun, units: readonly { content: string; answer: string | null; tokens?: number }[], signal: AbortSignal, resumable: boolean): Promise<void> {
    const start = await this.#beginIndexing(run, 'segments', units.map((u) => u.content), resumable);
    const { from, highQuality, step } = start;
    let { tokens, words } = start;
    for (let i = from; i < units.length; i += step) {
      await turn();
      signal.throwIfAborted();
      await assertOwner(this.#db, run, this.#clock.now()); // before paying for embeddings
      const part = units.slice(i, i + step);
      const vectors = highQuality ? await this.#embedder.embed(part.map((u) => u.content), signal) : [];
      const now = this.#clock.now();
      const rows = part.map(({ content, answer, tokens: counted }, j) => {
        const row = segmentRow(place(run, i + j + 1, now), content, answer, null, counted === undefined ? {} : { tokens: counted });
        tokens += row.tokens;
        words += row.word_count;
        return row;
      });
      await this.#db.transaction().execute(async (trx) => {
        await this.#writeSegments(trx, rows, highQuality ? vectors : undefined);
        await this.#progress(trx, run, i + part.length, now);
      });
      this.#onIndexed(part.length);
    }
    await this.#swap(run, tokens, words);
  }

  /** The file's text, parsed on a worker thread, with the run marked as parsing (durably) until the parse ends. */
  async #parse(run: IndexingRun, bytes: Buffer, file: { name: string; extension: string }, signal: AbortSignal): Promise<string> {
    const owner = run.owner!;
    if (!(await this.#runs.updateOwned(run, { parsing_owner: owner }))) throw new Fenced();
    try {
      return await this.#parser.parse(bytes, file.extension, { name: file.name, signal });
    } finally {
      await this.#runs.clearParsing(run.id, owner);
    }
  }

  /** Q&A pairs of every chunk, `qaConcurrency` model calls at a time, in chunk order. */
  async #qaUnits(chunks: readonly string[], language: string, signal: AbortSignal): Promise<{ content: string; answer: string | null; tokens?: number }[]> {
    if (!this.#qaModel) throw new DocumentRefused('doc_form qa_model needs KNOWLEDGE_QA_MODEL (provider/model).');
    const pairs: QaPair[][] = new Array(chunks.length);
    let next = 0;
    const worker = async () => {
      while (next < chunks.length) {
        const i = next++;
        signal.throwIfAborted();
        pairs[i] = await generateQaPairs(this.#providers(), this.#qaModel!, chunks[i]!, language, signal);
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.#qaConcurrency, chunks.length) }, worker));
    return pairs.flat().map((p) => ({ content: p.question, answer: p.answer }));
  }

  /** Records a committed batch, inside its transaction; a lost claim rolls the batch back. */
  async #progress(trx: Transaction<Database>, run: IndexingRun, completed: number, now: number): Promise<void> {
    if (!(await this.#runs.updateOwned(run, { completed_segments: completed, updated_at: now }, trx))) throw new Fenced();
  }

  /**
   * Where an interrupted run continues: the number of units (segments, or parents) already
   * committed, if they are exactly the first ones of this split (count, last position and the last
   * one's hash agree); otherwise 0, after removing them.
   */
  async #resumePoint(run: IndexingRun, table: 'segments' | 'parent_chunks', contents: readonly string[]): Promise<number> {
    const n = run.completed_segments;
    if (n > 0 && n <= contents.length) {
      const stored = await this.#segments.unitsAt(ofRun(run), table, n);
      if (stored.count === n && stored.last === n && stored.hashAt === sha256(contents[n - 1]!)) return n;
    }
    await this.#discard(run);
    return 0;
  }

  /**
   * Starts the indexing stage of a split document: where to begin (after the units a resumed run
   * already committed, see `#resumePoint`), the run marked `indexing` with its totals, the batch
   * size (`#batchSize` units when they get embeddings, `INSERT_BATCH` otherwise) and the tokens and
   * characters of the units already stored.
   */
  async #beginIndexing(run: IndexingRun, table: 'segments' | 'parent_chunks', contents: readonly string[], resumable: boolean) {
    const from = resumable ? await this.#resumePoint(run, table, contents) : 0;
    await this.#stage(run, 'indexing', { splitting_completed_at: this.#clock.now(), total_segments: contents.length, completed_segments: from });
    const highQuality = run.indexing_technique === 'high_quality';
    return { from, highQuality, step: highQuality ? this.#batchSize : INSERT_BATCH, ...(await this.#indexedTotals(run, table, from)) };
  }

  /** Tokens and characters of the first `count` units already stored (0 when starting over). */
  async #indexedTotals(run: IndexingRun, table: 'segments' | 'parent_chunks', count: number): Promise<{ tokens: number; words: number }> {
    if (count === 0) return { tokens: 0, words: 0 };
    return this.#segments.totals(this.#db, ofRun(run), table);
  }

  /**
   * Parent-child chunking: parents (paragraphs of the rule's segmentation, or the whole document,
   * cut at `fullDocMaxTokens`) each split into children by `subchunk_segmentation`. Parents go to
   * `parent_chunks`; children are segments pointing at their parent, indexed like any segment.
   * Batches hold whole parents; the progress counts parents (Dify's segments).
   */
  async #runHierarchical(run: IndexingRun, groups: Extract<DocumentChunks, { kind: 'hierarchical' }>['groups'], signal: AbortSignal, resumable: boolean): Promise<void> {
    if (groups.length === 0) throw new DocumentRefused('The document contains no text after cleaning.');
    const start = await this.#beginIndexing(run, 'parent_chunks', groups.map((g) => g.content), resumable);
    const { from, highQuality, step } = start;
    let { tokens, words } = start;
    for (let i = from; i < groups.length; ) {
      await turn();
      signal.throwIfAborted();
      await assertOwner(this.#db, run, this.#clock.now());
      const first = i;
      let childCount = 0;
      while (i < groups.length && (i === first || childCount + groups[i]!.children.length <= step)) childCount += groups[i++]!.children.length;
      const part = groups.slice(first, i);
      const texts = part.flatMap((g) => g.children.map((c) => c.content));
      const vectors: Float32Array[] = [];
      if (highQuality) for (let j = 0; j < texts.length; j += this.#batchSize) vectors.push(...(await this.#embedder.embed(texts.slice(j, j + this.#batchSize), signal)));
      const now = this.#clock.now();
      const parents: ParentChunkTable[] = [];
      const rows: SegmentTable[] = [];
      part.forEach((g, j) => {
        const parent = parentChunkRow(place(run, first + j + 1, now), g.content, { tokens: g.tokens });
        tokens += parent.tokens;
        words += parent.word_count;
        parents.push(parent);
        g.children.forEach((c, k) => rows.push(segmentRow(place(run, k + 1, now), c.content, null, parent.id, { tokens: c.tokens })));
      });
      await this.#db.transaction().execute(async (trx) => {
        await this.#segments.insertParents(trx, parents);
        await this.#writeSegments(trx, rows, highQuality ? vectors : undefined);
        await this.#progress(trx, run, i, now);
      });
      this.#onIndexed(rows.length);
    }
    await this.#swap(run, tokens, words);
  }

  /** Makes the new generation the served one and drops every other, in one transaction. */
  /** Writes segment rows with their keyword entries and, for high-quality indexing, their vectors. */
  async #writeSegments(trx: Transaction<Database>, rows: SegmentTable[], vectors: readonly Float32Array[] | undefined): Promise<void> {
    const rowids = await this.#segments.insertBulk(trx, rows);
    await this.#keyword.add(trx, rows.map((r, j) => ({ rowid: rowids[j]!, id: r.id, datasetId: r.dataset_id, content: r.content })));
    if (vectors) {
      await this.#vectors.add(
        trx,
        this.#embedder.model,
        rows.map((r, j) => ({ segmentId: r.id, datasetId: r.dataset_id, documentId: r.document_id, vector: vectors[j]! })),
      );
    }
  }

  async #swap(run: IndexingRun, tokens: number, words: number): Promise<void> {
    const now = this.#clock.now();
    const swapped = await this.#db.transaction().execute(async (trx) => {
      if (!(await this.#documents.activate(trx, run.document_id, run.generation, { tokens, word_count: words, updated_at: now }))) return false;
      await this.#keyword.removeOtherGenerations(trx, run.document_id, run.generation);
      await this.#vectors.removeOtherGenerations(trx, run.document_id, run.generation);
      await this.#segments.deleteOtherGenerations(trx, ofRun(run));
      await this.#datasets.bumpIndexVersion(run.dataset_id, trx);
      const done = await this.#runs.updateOwned(run, { status: 'completed', completed_at: now, tokens, word_count: words, updated_at: now }, trx);
      if (!done) throw new Fenced(); // paused at the last moment: nothing swapped
      return true;
    });
    if (!swapped) {
      this.#log.info({ run: run.id }, 'indexing run superseded before its swap');
      await this.#discard(run);
      await this.#stage(run, 'error', { error: 'Superseded by a newer update of the document.', stopped_at: now });
    }
  }
}

/** The stored rule of a document whose chunks a knowledge pipeline made. */
function isPrepared(rule: string): boolean {
  try {
    return (JSON.parse(rule) as { mode?: unknown }).mode === PREPARED_RULE.mode;
  } catch {
    return false;
  }
}

/** The generation an indexing run writes. */
function ofRun(run: IndexingRun): Generation {
  return { documentId: run.document_id, generation: run.generation };
}
