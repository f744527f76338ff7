import { Readable } from 'node:stream';
import { displayStatus } from './document-wire.js';
import type { Kysely } from 'kysely';
import type { Database, DatasetTable } from '../../store/schema.js';
import type { Clock } from '../../infra/clock.js';
import { newId } from '../../infra/ids.js';
import { invalidParam, notFound } from '../../infra/errors.js';
import { splitModelRef } from '../../llm/model-provider.js';
import type { ModelProviders } from '../../llm/model-provider.js';
import type { Queue } from '../../infra/queue/queue.js';
import type { UploadedFile, UploadService } from '../../files/upload-service.js';
import type { DatasetService, IndexingTechnique } from '../datasets.js';
import { INDEXING_TECHNIQUES } from '../datasets.js';
import { defaultHierarchicalRule, parseProcessRule, processRuleToWire, type ProcessRule } from '../ingest/process-rule.js';
import type { KeywordIndex } from '../index/keyword-index.js';
import type { VectorIndex } from '../index/vector-index.js';
import { DatasetStore } from '../dataset-store.js';
import { refuseExternal } from '../external/external-knowledge.js';
import { MetadataStore } from './metadata-store.js';
import { TagStore } from './tag-store.js';
import { SegmentStore } from './segment-store.js';
import { DocumentStore, type Document, type DocumentChange } from './document-store.js';
import { IndexingRunStore, type IndexingRun } from '../ingest/indexing-run-store.js';
import { PipelineStore } from '../pipeline/pipeline-store.js';

export const INDEX_JOB = 'knowledge.index';
export interface IndexJobPayload {
  readonly runId: string;
}

const DOC_FORMS = ['text_model', 'hierarchical_model', 'qa_model'];

/** The options of a create or update (`data` of the multipart forms, or the JSON body). */
export interface DocumentOptions {
  readonly name?: unknown;
  readonly processRule?: unknown;
  readonly docForm?: unknown;
  readonly docLanguage?: unknown;
  readonly indexingTechnique?: unknown;
}

export interface Accepted {
  readonly document: Document;
  readonly batch: string;
}

/** Dify's batch id: `YYYYMMDDHHMMSS` + six random digits. */
function newBatch(now: number): string {
  const d = new Date(now);
  const p = (n: number, w = 2) => String(n).padStart(w, '0');
  return `${d.getUTCFullYear()}${p(d.getUTCMonth() + 1)}${p(d.getUTCDate())}${p(d.getUTCHours())}${p(d.getUTCMinutes())}${p(d.getUTCSeconds())}${100000 + Math.floor(Math.random() * 900000)}`;
}

export function documentNotFound() {
  return notFound('Document not found.');
}


/**
 * Documents of a knowledge base: accepting creates and updates (each one an indexing run with its
 * own batch and segment generation, indexed by a durable job), listing, deleting, progress.
 */
export class DocumentService {
  readonly #db: Kysely<Database>;
  readonly #clock: Clock;
  readonly #uploads: UploadService;
  readonly #datasets: DatasetService;
  readonly #datasetRows: DatasetStore;
  readonly #metadata: MetadataStore;
  readonly #tags: TagStore;
  readonly #store: DocumentStore;
  readonly #segments: SegmentStore;
  readonly #runs: IndexingRunStore;
  readonly #queue: Queue;
  readonly #keyword: KeywordIndex;
  readonly #vectors: VectorIndex;
  readonly #maxTokens: number;
  readonly #qaModel: string | undefined;
  readonly #providers: () => ModelProviders;

  constructor(deps: {
    db: Kysely<Database>;
    clock: Clock;
    uploads: UploadService;
    datasets: DatasetService;
    queue: Queue;
    keyword: KeywordIndex;
    vectors: VectorIndex;
    maxSegmentationTokens: number;
    /** `provider/model` for `qa_model` (unset: refused). */
    qaModel: string | undefined;
    providers: () => ModelProviders;
  }) {
    this.#db = deps.db;
    this.#clock = deps.clock;
    this.#uploads = deps.uploads;
    this.#datasets = deps.datasets;
    this.#datasetRows = new DatasetStore(deps.db);
    this.#metadata = new MetadataStore(deps.db);
    this.#tags = new TagStore(deps.db);
    this.#store = new DocumentStore(deps.db);
    this.#segments = new SegmentStore(deps.db);
    this.#runs = new IndexingRunStore(deps.db);
    this.#queue = deps.queue;
    this.#keyword = deps.keyword;
    this.#vectors = deps.vectors;
    this.#maxTokens = deps.maxSegmentationTokens;
    this.#qaModel = deps.qaModel;
    this.#providers = deps.providers;
  }

  /**
   * Validates the options; runs before any file byte is stored. `current` is the document an
   * update replaces (its `doc_form` cannot change, as in Dify).
   */
  async checkOptions(
    ds: DatasetTable,
    opts: DocumentOptions,
    current?: Document,
  ): Promise<{ rule: ProcessRule; docForm: string; docLanguage: string; technique: IndexingTechnique }> {
    if (opts.docForm !== undefined && opts.docForm !== null && !DOC_FORMS.includes(opts.docForm as string)) throw invalidParam('Invalid doc_form.');
    if (opts.docForm === 'qa_model') this.#checkQaModel();
    if (opts.docLanguage !== undefined && opts.docLanguage !== null && typeof opts.docLanguage !== 'string') throw invalidParam('doc_language must be a string.');
    if (opts.name !== undefined && opts.name !== null && (typeof opts.name !== 'string' || opts.name.trim() === '' || opts.name.length > 255)) {
      throw invalidParam('name must be a non-empty string of at most 255 characters.');
    }
    let technique = ds.indexing_technique as IndexingTechnique | null;
    if (!technique) {
      const t = opts.indexingTechnique;
      if (t === undefined || t === null) throw invalidParam('indexing_technique is required.');
      if (!INDEXING_TECHNIQUES.includes(t as IndexingTechnique)) throw invalidParam('indexing_technique must be economy or high_quality.');
      technique = t as IndexingTechnique;
    } else if (opts.indexingTechnique !== undefined && opts.indexingTechnique !== null && !INDEXING_TECHNIQUES.includes(opts.indexingTechnique as IndexingTechnique)) {
      throw invalidParam('indexing_technique must be economy or high_quality.');
    }
    // after the technique, as Dify's create-by-text (which then accepts the document; refused here)
    refuseExternal(ds);
    let rule = parseProcessRule(opts.processRule, this.#maxTokens);
    const given = opts.processRule !== undefined && opts.processRule !== null;
    // The form: the one asked for, else the one a hierarchical rule implies, else the document's or the dataset's.
    const established = current?.doc_form ?? (await this.datasetDocForm(ds.id));
    const docForm = (opts.docForm as string | undefined | null) ?? (rule.mode === 'hierarchical' ? 'hierarchical_model' : (established ?? 'text_model'));
    if (established && docForm !== established) throw invalidParam('doc_form is different from the dataset doc_form.');
    if (docForm === 'qa_model') this.#checkQaModel();
    if (docForm === 'hierarchical_model') {
      if (rule.mode === 'custom') throw invalidParam('process_rule.mode must be hierarchical (or automatic) when doc_form is hierarchical_model.');
      if (rule.mode === 'automatic' && !(current && !given)) rule = defaultHierarchicalRule(this.#maxTokens);
    } else if (rule.mode === 'hierarchical') {
      throw invalidParam('process_rule.mode hierarchical requires doc_form hierarchical_model.');
    }
    return {
      rule,
      docForm,
      docLanguage: typeof opts.docLanguage === 'string' && opts.docLanguage ? opts.docLanguage : 'English',
      technique,
    };
  }

  /** `qa_model` needs a configured model to write the pairs; refused up front without one. */
  #checkQaModel(): void {
    const ref = this.#qaModel ? splitModelRef(this.#qaModel) : undefined;
    if (!ref) throw invalidParam('doc_form qa_model needs KNOWLEDGE_QA_MODEL (provider/model) to be set.');
    this.#providers().get(ref.provider); // provider_not_initialize when it has no credentials
  }

  /** A dataset's `doc_form`: that of its documents (all share it), null while it has none. */
  async datasetDocForm(datasetId: string): Promise<string | null> {
    return this.#store.firstDocForm(datasetId);
  }

  /** Stores text as a `.txt` upload, as Dify does for create-by-text. */
  async storeText(workspaceId: string, name: string, text: string, createdBy: string): Promise<UploadedFile> {
    const filename = `${name.replace(/[/\\]/g, '_').slice(0, 190)}.txt`;
    return this.#uploads.upload({
      filename,
      mimeType: 'text/plain',
      body: Readable.from([Buffer.from(text, 'utf8')]),
      workspaceId,
      appId: null,
      createdBy,
      createdByRole: 'account',
    });
  }

  /** Stores a knowledge pipeline's chunks (JSON) as the upload its document is indexed from. */
  async storeChunks(workspaceId: string, name: string, bytes: Buffer, createdBy: string): Promise<UploadedFile> {
    const filename = `${name.replace(/[/\\]/g, '_').slice(0, 180)}.chunks.json`;
    return this.#uploads.upload({ filename, mimeType: 'application/json', body: Readable.from([bytes]), workspaceId, appId: null, createdBy, createdByRole: 'account' });
  }

  /**
   * Accepts a document and queues its indexing. `source` marks a document a knowledge pipeline
   * made: its file holds the chunks (the indexer neither parses nor splits it), its data source is
   * the pipeline's (`upload_file`, `website_crawl`) and it was created from `rag-pipeline`.
   */
  async create(ds: DatasetTable, file: UploadedFile, opts: DocumentOptions, createdBy: string, source?: { readonly processRule: string; readonly dataSourceType: string }): Promise<Accepted> {
    const checked = await this.checkOptions(ds, opts);
    if (!ds.indexing_technique) await this.#datasets.setTechnique(ds.id, checked.technique);
    const now = this.#clock.now();
    const batch = newBatch(now);
    const name = typeof opts.name === 'string' && opts.name.trim() ? opts.name.trim() : file.name;
    const doc = await this.#db.transaction().execute(async (trx) => {
      const row = await this.#store.insertLast(trx, {
        id: newId(),
        dataset_id: ds.id,
        data_source_type: source?.dataSourceType ?? 'upload_file',
        upload_file_id: file.id,
        name,
        created_from: source ? 'rag-pipeline' : 'api',
        created_by: createdBy,
        process_rule_id: newId(),
        process_rule: source?.processRule ?? JSON.stringify(processRuleToWire(checked.rule)),
        doc_form: checked.docForm,
        doc_language: checked.docLanguage,
        batch,
        tokens: 0,
        word_count: 0,
        indexing_status: 'waiting',
        error: null,
        enabled: 1,
        disabled_at: null,
        disabled_by: null,
        archived: 0,
        hit_count: 0,
        active_generation: 0,
        latest_generation: 1,
        created_at: now,
        updated_at: now,
      });
      await this.#runs.insert(trx, this.#run(row, 1, file.id, row.process_rule, ds.indexing_technique ?? checked.technique, batch, now));
      await this.#queue.enqueue(INDEX_JOB, { runId: `${row.id}:1` } satisfies IndexJobPayload, { tx: trx });
      return row;
    });
    this.#queue.notify();
    return { document: doc, batch };
  }

  #run(doc: Document, generation: number, fileId: string, rule: string, technique: string, batch: string, now: number): IndexingRun {
    return {
      id: `${doc.id}:${generation}`,
      batch,
      dataset_id: doc.dataset_id,
      document_id: doc.id,
      generation,
      upload_file_id: fileId,
      process_rule: rule,
      indexing_technique: technique,
      status: 'waiting',
      error: null,
      processing_started_at: null,
      parsing_completed_at: null,
      cleaning_completed_at: null,
      splitting_completed_at: null,
      completed_at: null,
      paused_at: null,
      stopped_at: null,
      owner: null,
      parsing_owner: null,
      total_segments: 0,
      completed_segments: 0,
      tokens: 0,
      word_count: 0,
      created_at: now,
      updated_at: now,
    };
  }

  /** Fails with Dify's messages when the document cannot be updated now. */
  async checkUpdatable(ds: DatasetTable, documentId: string): Promise<Document> {
    const doc = await this.find(ds.id, documentId);
    if (!doc) throw documentNotFound();
    const status = displayStatus(doc);
    // Dify allows only `available`; a document in `error` may also be replaced (the remedy for a bad file).
    if (status !== 'available' && status !== 'error') throw invalidParam('Document is not available');
    return doc;
  }

  /**
   * Accepts a new version of a document (new file and/or options). The document id stays; the old
   * segments keep serving until the new generation is indexed and swapped in. Acceptance is a
   * compare-and-set on `latest_generation`, so of two racing updates exactly one is accepted.
   */
  async update(ds: DatasetTable, documentId: string, file: UploadedFile | undefined, opts: DocumentOptions): Promise<Accepted> {
    const doc = await this.checkUpdatable(ds, documentId);
    const checked = await this.checkOptions(ds, { ...opts, indexingTechnique: ds.indexing_technique }, doc);
    const now = this.#clock.now();
    const batch = newBatch(now);
    const generation = doc.latest_generation + 1;
    const fileId = file?.id ?? doc.upload_file_id;
    const rule = opts.processRule === undefined || opts.processRule === null ? doc.process_rule : JSON.stringify(processRuleToWire(checked.rule));
    const set: DocumentChange = {
      latest_generation: generation,
      batch,
      upload_file_id: fileId,
      process_rule: rule,
      process_rule_id: rule === doc.process_rule ? doc.process_rule_id : newId(),
      doc_language: typeof opts.docLanguage === 'string' && opts.docLanguage ? opts.docLanguage : doc.doc_language,
      indexing_status: 'waiting',
      error: null,
      updated_at: now,
      name: await this.#nameAfterUpdate(doc, file, opts.name),
    };
    const accepted = await this.#db.transaction().execute(async (trx) => {
      if (!(await this.#store.acceptVersion(trx, doc.id, doc.latest_generation, set))) return false;
      await this.#runs.insert(trx, this.#run(doc, generation, fileId, rule, ds.indexing_technique ?? checked.technique, batch, now));
      await this.#queue.enqueue(INDEX_JOB, { runId: `${doc.id}:${generation}` } satisfies IndexJobPayload, { tx: trx });
      return true;
    });
    if (!accepted) throw invalidParam('Document is not available');
    this.#queue.notify();
    return { document: { ...doc, ...set }, batch };
  }

  /**
   * An explicit `name` in the request wins. Without one, a name that was set explicitly earlier
   * (differs from its file's name) is kept; a name that was just the file's name follows the new file.
   */
  async #nameAfterUpdate(doc: Document, file: UploadedFile | undefined, name: unknown): Promise<string> {
    if (typeof name === 'string' && name.trim()) return name.trim();
    if (!file) return doc.name;
    const old = await this.#uploads.find(doc.upload_file_id);
    return old && old.name === doc.name ? file.name : doc.name;
  }

  async find(datasetId: string, documentId: string): Promise<Document | undefined> {
    return this.#store.find(datasetId, documentId);
  }

  async get(datasetId: string, documentId: string): Promise<Document> {
    const doc = await this.find(datasetId, documentId);
    if (!doc) throw documentNotFound();
    return doc;
  }

  async list(datasetId: string, page: number, limit: number, keyword?: string): Promise<{ rows: Document[]; total: number }> {
    return this.#store.page(datasetId, page, limit, keyword);
  }

  async delete(datasetId: string, documentId: string): Promise<void> {
    const doc = await this.get(datasetId, documentId);
    await this.#db.transaction().execute(async (trx) => {
      // The document row first, as every segment write takes it (a compare-and-set): a write
      // running now finishes before the delete reads the rows to remove, one starting later finds
      // no document; taken last, PostgreSQL could deadlock the two or leave the write's rows behind.
      await this.#store.lock(trx, datasetId, [doc.id]);
      await this.#keyword.removeDocument(trx, doc.id);
      await this.#vectors.removeDocument(trx, doc.id);
      await this.#segments.deleteOfDocument(trx, doc.id);
      await this.#runs.deleteForDocument(trx, doc.id);
      await this.#metadata.deleteForDocument(trx, doc.id);
      await this.#store.delete(trx, doc.id);
      await this.#datasetRows.bumpIndexVersion(datasetId, trx);
    });
  }

  async deleteDataset(workspaceId: string, datasetId: string): Promise<void> {
    await this.#datasets.get(workspaceId, datasetId);
    for (const id of await this.#store.idsOf(datasetId)) await this.delete(datasetId, id);
    await new PipelineStore(this.#db).deleteOfDataset(datasetId);
    await this.#db.transaction().execute(async (trx) => {
      await this.#tags.unbindDataset(datasetId, trx);
      await this.#metadata.deleteForDataset(trx, datasetId);
      await this.#datasetRows.delete(datasetId, trx);
    });
  }

  /**
   * A page of documents, each with the indexing run of its latest version (stage, segments done of
   * total, error), in one call: what a page watching its documents index polls.
   */
  async listWithProgress(datasetId: string, page: number, limit: number, keyword?: string): Promise<{ rows: { doc: Document; run: IndexingRun | undefined }[]; total: number }> {
    const { rows, total } = await this.#store.page(datasetId, page, limit, keyword);
    const runs = new Map((await this.#runs.findMany(rows.map((d) => `${d.id}:${d.latest_generation}`))).map((r) => [r.id, r]));
    return { rows: rows.map((doc) => ({ doc, run: runs.get(`${doc.id}:${doc.latest_generation}`) })), total };
  }

  /** The runs of a batch (one per document accepted with it). */
  async batchStatus(datasetId: string, batch: string): Promise<IndexingRun[]> {
    return this.#runs.ofBatch(datasetId, batch);
  }

  /** Dify's document `hit_count`: the sum over the segments (or parent chunks) being served. */
  async hitCounts(documentIds: readonly string[]): Promise<Map<string, number>> {
    return this.#segments.hitCounts(documentIds);
  }

  async files(ids: readonly string[]): Promise<Map<string, UploadedFile>> {
    const out = new Map<string, UploadedFile>();
    for (const id of new Set(ids)) {
      const f = await this.#uploads.find(id);
      if (f) out.set(id, f);
    }
    return out;
  }
}
