import type { Kysely, Transaction } from 'kysely';
import type { Database, DatasetTable, DocumentTable, Executor, ParentChunkTable, SegmentTable } from '../../store/schema.js';
import type { Clock } from '../../infra/clock.js';
import { sha256 } from '../../infra/ids.js';
import { invalidParam, notFound } from '../../infra/errors.js';
import { documentIndexing, segmentNotFound } from '../errors.js';
import { splitText, type CountedChunk } from '../ingest/chunk.js';
import { AUTOMATIC_RULE, childRule, parseProcessRule, type ProcessRule } from '../ingest/process-rule.js';
import { countTokens } from '../../text/tokenizer.js';
import type { TextOffload } from '../../text/offload.js';
import { docPlace, parentChunkRow, segmentRow } from '../ingest/chunk-rows.js';
import type { Embedder } from '../ingest/embedder.js';
import type { KeywordIndex } from '../index/keyword-index.js';
import type { VectorIndex } from '../index/vector-index.js';
import type { NewSegment, SegmentPatch, SegmentQuery } from './segment-input.js';
import type { Chunk } from './segment-wire.js';
import { DatasetStore } from '../dataset-store.js';
import { DocumentStore, INDEXING_STATES } from './document-store.js';
import { SegmentStore, type Generation } from './segment-store.js';

type Trx = Transaction<Database>;

/**
 * Segment editing for knowledge-base documents (Dify's SegmentService). Edits apply to the segments
 * being served (the document's active generation), only while the document is `completed` and no
 * newer version is being indexed: every write re-checks that in its own transaction, so an edit and
 * the acceptance of a document update are ordered, never interleaved (see docs/decisions.md).
 * Indexes are updated through the same ports the indexer uses, in the same transaction.
 */
export class SegmentService {
  readonly #db: Kysely<Database>;
  readonly #datasets: DatasetStore;
  readonly #documents: DocumentStore;
  readonly #store: SegmentStore;
  readonly #clock: Clock;
  readonly #embedder: Embedder;
  readonly #keyword: KeywordIndex;
  readonly #vectors: VectorIndex;
  readonly #batchSize: number;
  readonly #maxTokens: number;
  readonly #offload: TextOffload;

  constructor(deps: {
    db: Kysely<Database>;
    clock: Clock;
    embedder: Embedder;
    keyword: KeywordIndex;
    vectors: VectorIndex;
    embeddingsBatchSize: number;
    maxSegmentationTokens: number;
    /** Token counting and splitting of large segments off the event loop. */
    offload: TextOffload;
  }) {
    this.#db = deps.db;
    this.#datasets = new DatasetStore(deps.db);
    this.#documents = new DocumentStore(deps.db);
    this.#store = new SegmentStore(deps.db);
    this.#offload = deps.offload;
    this.#clock = deps.clock;
    this.#embedder = deps.embedder;
    this.#keyword = deps.keyword;
    this.#vectors = deps.vectors;
    this.#batchSize = deps.embeddingsBatchSize;
    this.#maxTokens = deps.maxSegmentationTokens;
  }

  async list(doc: DocumentTable, q: SegmentQuery): Promise<{ items: Chunk[]; total: number }> {
    const page = { keyword: q.keyword, limit: q.limit, offset: (q.page - 1) * q.limit, ...(q.enabled === undefined ? {} : { enabled: q.enabled }) };
    if (doc.doc_form === 'hierarchical_model') {
      // Parent chunks have no indexing status of their own: they are `completed` once served.
      if (q.status.length > 0 && !q.status.includes('completed')) return { items: [], total: 0 };
      const { rows, total } = await this.#store.pageParents(served(doc), page);
      return { items: await this.#withChildren(this.#db, rows), total };
    }
    const { rows, total } = await this.#store.pageTop(served(doc), q.status, page);
    return { items: rows.map((row) => ({ kind: 'segment', row })), total };
  }

  async get(doc: DocumentTable, segmentId: string): Promise<Chunk> {
    const c = await this.find(this.#db, doc, segmentId);
    if (!c) throw segmentNotFound();
    return c;
  }

  /** @internal shared with ChildChunkService */
  async find(db: Executor, doc: DocumentTable, segmentId: string): Promise<Chunk | undefined> {
    if (doc.doc_form === 'hierarchical_model') {
      const row = await this.#store.findParent(db, served(doc), segmentId);
      return row ? (await this.#withChildren(db, [row]))[0] : undefined;
    }
    const row = await this.#store.findTop(db, served(doc), segmentId);
    return row ? { kind: 'segment', row } : undefined;
  }

  async #withChildren(db: Executor, parents: ParentChunkTable[]): Promise<Chunk[]> {
    if (parents.length === 0) return [];
    const children = await this.#store.childrenOf(db, parents.map((p) => p.id));
    const by = new Map<string, SegmentTable[]>();
    for (const c of children) by.set(c.parent_id!, [...(by.get(c.parent_id!) ?? []), c]);
    return parents.map((row) => ({ kind: 'parent', row, children: by.get(row.id) ?? [] }));
  }

  /** Dify's checks before creating: the document must be `completed` and enabled (both 404 in Dify). */
  #checkCreatable(doc: DocumentTable): void {
    if (doc.indexing_status !== 'completed') throw notFound('Document is not completed.');
    if (!doc.enabled) throw notFound('Document is disabled.');
  }

  /** A document being (re)indexed or whose last version failed cannot have its segments edited. */
  #notEditable(doc: Pick<DocumentTable, 'indexing_status'>): Error {
    if ((INDEXING_STATES as readonly string[]).includes(doc.indexing_status)) return documentIndexing();
    return invalidParam('Document is not available');
  }

  /** @internal shared with ChildChunkService */
  checkEditable(doc: DocumentTable): void {
    if (doc.indexing_status !== 'completed' || doc.latest_generation !== doc.active_generation) throw this.#notEditable(doc);
  }

  #rule(doc: DocumentTable): ProcessRule {
    try {
      return parseProcessRule(JSON.parse(doc.process_rule), this.#maxTokens);
    } catch {
      return AUTOMATIC_RULE;
    }
  }

  /** `#children` with token counts, split and counted on the worker thread when the text is large. */
  async #countedChildren(doc: DocumentTable, content: string): Promise<CountedChunk[]> {
    const rule = this.#rule(doc);
    if (!rule.hierarchy) return [{ content: content.trim(), tokens: (await this.#offload.countTokens([content.trim()]))[0]! }];
    const split = await this.#offload.run('chunkDocument', content.length, content, childRule(rule), 0);
    const parts = split.kind === 'flat' ? split.chunks : [];
    return parts.length > 0 ? [...parts] : [{ content: content.trim(), tokens: (await this.#offload.countTokens([content.trim()]))[0]! }];
  }

  /** The child texts of a parent chunk, split by the document's child rule (at least the whole text). */
  #children(doc: DocumentTable, content: string): string[] {
    const rule = this.#rule(doc);
    const parts = rule.hierarchy ? splitText(content, childRule(rule)) : [];
    return parts.length > 0 ? parts : [content.trim()];
  }

  /** @internal shared with ChildChunkService */
  async embed(ds: DatasetTable, texts: readonly string[]): Promise<Float32Array[]> {
    if (ds.indexing_technique !== 'high_quality' || texts.length === 0) return [];
    const out: Float32Array[] = [];
    for (let i = 0; i < texts.length; i += this.#batchSize) out.push(...(await this.#embedder.embed(texts.slice(i, i + this.#batchSize))));
    return out;
  }

  /**
   * Runs `fn` in one transaction that first re-checks (and locks, on PostgreSQL) the document: still
   * `completed`, serving the version the caller read, with no newer version accepted. Afterwards the
   * document's `word_count` / `tokens` are summed again and the dataset's `index_version` bumped.
   * @internal Shared with ChildChunkService.
   */
  async write<T>(doc: DocumentTable, fn: (trx: Trx, now: number) => Promise<T>): Promise<T> {
    return this.#db.transaction().execute(async (trx) => {
      const now = this.#clock.now();
      if (!(await this.#documents.takeForEdit(trx, doc.id, doc.active_generation, now))) {
        const current = await this.#documents.status(trx, doc.id);
        if (!current) throw notFound('Document not found.'); // deleted meanwhile
        throw this.#notEditable({ indexing_status: current });
      }
      const out = await fn(trx, now);
      await this.#totals(trx, doc);
      await this.#datasets.bumpIndexVersion(doc.dataset_id, trx);
      return out;
    });
  }

  /** The document's `word_count` / `tokens`: sums over what it serves (as the indexer's swap sets them). */
  async #totals(trx: Trx, doc: DocumentTable): Promise<void> {
    const t = await this.#store.totals(trx, served(doc), doc.doc_form === 'hierarchical_model' ? 'parent_chunks' : 'segments');
    await this.#documents.setTotals(trx, doc.id, { word_count: t.words, tokens: t.tokens });
  }

  /** Inserts segment rows and indexes them (keyword always, vectors when given). @internal Shared with ChildChunkService. */
  async insertIndexed(trx: Trx, rows: readonly SegmentTable[], vectors: readonly Float32Array[]): Promise<void> {
    await this.#store.insert(trx, rows);
    await this.#keyword.addSegments(trx, rows.map((r) => r.id));
    if (vectors.length > 0) {
      await this.#vectors.add(
        trx,
        this.#embedder.model,
        rows.map((r, j) => ({ segmentId: r.id, datasetId: r.dataset_id, documentId: r.document_id, vector: vectors[j]! })),
      );
    }
  }

  /** Removes segment rows and their index entries (the keyword index first: it reads their content). @internal Shared with ChildChunkService. */
  async deleteIndexed(trx: Trx, ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    await this.#keyword.removeSegments(trx, ids);
    await this.#vectors.removeSegments(trx, ids);
    await this.#store.delete(trx, ids);
  }

  /** A segment row made through the API by `by`. @internal shared with ChildChunkService */
  segmentRow(doc: DocumentTable, content: string, position: number, now: number, by: string, extra: Partial<SegmentTable>): SegmentTable {
    const { answer = null, parent_id = null, ...edit } = extra;
    return segmentRow(docPlace(doc, position, now), content, answer, parent_id, { created_by: by, ...edit });
  }

  /** Creates segments at the end of the document (Dify's `multi_create_segment`), indexed before the answer. */
  async create(ds: DatasetTable, doc: DocumentTable, items: readonly NewSegment[], by: string): Promise<Chunk[]> {
    this.#checkCreatable(doc);
    if (doc.doc_form === 'qa_model') {
      items.forEach((s, i) => {
        if (s.answer === undefined || s.answer.trim() === '') throw invalidParam(`Answer is required (segments[${i}].answer).`);
      });
    }
    if (doc.doc_form === 'hierarchical_model') return this.#createParents(ds, doc, items, by);
    // Up to KNOWLEDGE_SEGMENTS_PER_REQUEST_MAX segments of KNOWLEDGE_SEGMENT_MAX_CHARS each: counted
    // in one batch, on the worker thread when large.
    const tokens = await this.#offload.countTokens(items.map((s) => (doc.doc_form === 'qa_model' ? s.content + s.answer! : s.content)));
    const vectors = await this.embed(
      ds,
      items.map((s) => s.content),
    );
    const ids = await this.write(doc, async (trx, now) => {
      const first = (await this.#store.lastPosition(trx, served(doc), 'segments')) + 1;
      const rows = items.map((s, i) =>
        this.segmentRow(doc, s.content, first + i, now, by, {
          answer: doc.doc_form === 'qa_model' ? s.answer! : null,
          keywords: JSON.stringify(s.keywords ?? []),
          tokens: tokens[i]!,
        }),
      );
      await this.insertIndexed(trx, rows, vectors);
      return rows.map((r) => r.id);
    });
    const rows = await this.#store.byIds(ids);
    return rows.map((row) => ({ kind: 'segment', row }));
  }

  async #createParents(ds: DatasetTable, doc: DocumentTable, items: readonly NewSegment[], by: string): Promise<Chunk[]> {
    const groups = await Promise.all(items.map(async (s) => ({ item: s, children: await this.#countedChildren(doc, s.content) })));
    const parentTokens = await this.#offload.countTokens(items.map((s) => s.content));
    const vectors = await this.embed(
      ds,
      groups.flatMap((g) => g.children.map((c) => c.content)),
    );
    const ids = await this.write(doc, async (trx, now) => {
      const first = (await this.#store.lastPosition(trx, served(doc), 'parent_chunks')) + 1;
      const parents: ParentChunkTable[] = [];
      const children: SegmentTable[] = [];
      groups.forEach((g, i) => {
        const parent = this.#parentRow(doc, g.item.content, first + i, now, by, JSON.stringify(g.item.keywords ?? []), parentTokens[i]!);
        parents.push(parent);
        g.children.forEach((c, k) => children.push(this.segmentRow(doc, c.content, k + 1, now, by, { parent_id: parent.id, created_by: by, tokens: c.tokens })));
      });
      await this.#store.insertParents(trx, parents);
      await this.insertIndexed(trx, children, vectors);
      return parents.map((p) => p.id);
    });
    const rows = await this.#store.parentsByIds(ids);
    return this.#withChildren(this.#db, rows);
  }

  #parentRow(doc: DocumentTable, content: string, position: number, now: number, by: string, kw: string, tokens?: number): ParentChunkTable {
    return parentChunkRow(docPlace(doc, position, now), content, { created_by: by, keywords: kw, ...(tokens === undefined ? {} : { tokens }) });
  }


  /**
   * Dify's `update_segment`: `enabled: false` only disables (other fields are ignored); a disabled
   * segment can only be changed together with `enabled: true`; a new content is re-indexed (for a
   * parent chunk its children are re-split only with `regenerate_child_chunks`, as in Dify).
   */
  async update(ds: DatasetTable, doc: DocumentTable, segmentId: string, patch: SegmentPatch, by: string): Promise<Chunk> {
    this.checkEditable(doc);
    const before = await this.find(this.#db, doc, segmentId);
    if (!before) throw segmentNotFound();
    if (doc.doc_form === 'qa_model' && patch.answer !== undefined && patch.answer.trim() === '') throw invalidParam('Answer is empty (segment.answer).');
    const parent = doc.doc_form === 'hierarchical_model';
    // Embeddings are paid before the transaction (never while it holds the database).
    const newContent = patch.content !== undefined && patch.content !== before.row.content ? patch.content : undefined;
    const childTexts = parent && patch.regenerateChildChunks ? this.#children(doc, newContent ?? before.row.content) : undefined;
    const vectors = parent ? (childTexts ? await this.embed(ds, childTexts) : []) : newContent !== undefined ? await this.embed(ds, [newContent]) : [];
    await this.write(doc, async (trx, now) => {
      const c = await this.find(trx, doc, segmentId);
      if (!c) throw segmentNotFound();
      const childIds = c.kind === 'parent' ? c.children.map((x) => x.id) : [];
      if (patch.enabled === false) {
        if (!c.row.enabled) throw invalidParam("Can't update disabled segment");
        const off = { enabled: 0, disabled_at: now, disabled_by: by, updated_at: now, updated_by: by };
        if (c.kind === 'parent') await this.#store.updateParent(trx, c.row.id, off);
        else await this.#store.update(trx, [c.row.id], off);
        await this.#store.update(trx, childIds, off);
        return;
      }
      if (!c.row.enabled && patch.enabled !== true) throw invalidParam("Can't update disabled segment");
      const content = patch.content ?? c.row.content;
      const changed = content !== c.row.content;
      if (changed && newContent !== content) throw documentIndexing('The segment was changed by another request; please try again.');
      const answer = c.kind === 'segment' && doc.doc_form === 'qa_model' ? (patch.answer ?? c.row.answer) : null;
      const whole = answer === null ? content : content + answer;
      const on = { enabled: 1, disabled_at: null, disabled_by: null, updated_at: now, updated_by: by };
      const set = {
        ...on,
        word_count: whole.length,
        tokens: countTokens(whole),
        ...(patch.keywords !== undefined ? { keywords: JSON.stringify(patch.keywords) } : {}),
        ...(changed ? { content, hash: sha256(content), completed_at: now } : {}),
      };
      if (c.kind === 'segment') {
        // The keyword index forgets the old content before the row changes (FTS5 needs the indexed text).
        if (changed) {
          await this.#keyword.removeSegments(trx, [c.row.id]);
          await this.#vectors.removeSegments(trx, [c.row.id]);
        }
        await this.#store.update(trx, [c.row.id], { ...set, answer });
        if (changed) {
          await this.#keyword.addSegments(trx, [c.row.id]);
          if (vectors.length > 0) await this.#vectors.add(trx, this.#embedder.model, [{ segmentId: c.row.id, datasetId: c.row.dataset_id, documentId: c.row.document_id, vector: vectors[0]! }]);
        }
        return;
      }
      await this.#store.updateParent(trx, c.row.id, set);
      if (childTexts) {
        await this.deleteIndexed(trx, childIds);
        const rows = childTexts.map((t, k) => this.segmentRow(doc, t, k + 1, now, by, { parent_id: c.row.id, created_by: by }));
        await this.insertIndexed(trx, rows, vectors);
      } else if (childIds.length > 0) {
        await this.#store.update(trx, childIds, on);
      }
    });
    return this.get(doc, segmentId);
  }

  /** Deletes a segment (a parent chunk with its children) and its index entries. */
  async delete(doc: DocumentTable, segmentId: string): Promise<void> {
    this.checkEditable(doc);
    if (!(await this.find(this.#db, doc, segmentId))) throw segmentNotFound();
    await this.write(doc, async (trx) => {
      const c = await this.find(trx, doc, segmentId);
      if (!c) throw segmentNotFound();
      if (c.kind === 'parent') {
        await this.deleteIndexed(
          trx,
          c.children.map((x) => x.id),
        );
        await this.#store.deleteParent(trx, c.row.id);
      } else {
        await this.deleteIndexed(trx, [c.row.id]);
      }
    });
  }
}

/** The generation a document serves. */
function served(doc: Pick<DocumentTable, 'id' | 'active_generation'>): Generation {
  return { documentId: doc.id, generation: doc.active_generation };
}
