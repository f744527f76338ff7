import type { Kysely, Transaction, Updateable } from 'kysely';
import type { Database, ParentChunkTable, SegmentTable, Executor } from '../../store/schema.js';
import { inBatches } from '../../store/statement-batches.js';
import type { SegmentWriter } from '../index/search-dialect.js';
import { containsIgnoringCase } from '../../store/like.js';


/** A segment: a chunk of a document's generation, or (with `parent_id`) a child chunk of a parent chunk. */
export type Segment = SegmentTable;
/** A parent chunk of a `hierarchical_model` document (its children are segments). */
export type ParentChunk = ParentChunkTable;
/** What an edit may change of a segment or a parent chunk. */
export type SegmentChange = Updateable<SegmentTable>;
export type ParentChunkChange = Updateable<ParentChunkTable>;

/** One generation of a document: the rows an indexing run writes, or the ones being served. */
export interface Generation {
  readonly documentId: string;
  readonly generation: number;
}

/** The units an indexing run counts: top-level segments, or parent chunks. */
export type UnitTable = 'segments' | 'parent_chunks';

/** A page of a listing; `keyword` matches the content case-insensitively (LIKE characters literal). */
export interface PageQuery {
  readonly keyword: string | undefined;
  readonly limit: number;
  readonly offset: number;
  /** Only enabled (true) or disabled (false) chunks; all when absent. */
  readonly enabled?: boolean;
}

const INSERT_CHUNK = 100;


/**
 * The `segments` and `parent_chunks` tables. Reads and writes take the caller's executor where
 * they belong to a transaction. The indexer's bulk insert goes through the dialect's
 * `SegmentWriter`, given at construction (only the indexer's store has one).
 */
export class SegmentStore {
  readonly #db: Kysely<Database>;
  readonly #bulk: SegmentWriter | undefined;

  constructor(db: Kysely<Database>, bulk?: SegmentWriter) {
    this.#db = db;
    this.#bulk = bulk;
  }

  // --- reads ---

  /** Top-level segments of a generation, by position, optionally of these statuses. */
  async pageTop(g: Generation, statuses: readonly string[], q: PageQuery): Promise<{ rows: Segment[]; total: number }> {
    let base = this.#db.selectFrom('segments').where('document_id', '=', g.documentId).where('generation', '=', g.generation).where('parent_id', 'is', null);
    if (statuses.length > 0) base = base.where('status', 'in', [...statuses]);
    if (q.enabled !== undefined) base = base.where('enabled', '=', q.enabled ? 1 : 0);
    if (q.keyword !== undefined) base = base.where(containsIgnoringCase('content', q.keyword));
    const total = Number((await base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);
    const rows = await base.selectAll().orderBy('position').limit(q.limit).offset(q.offset).execute();
    return { rows, total };
  }

  /** Parent chunks of a generation, by position. */
  async pageParents(g: Generation, q: PageQuery): Promise<{ rows: ParentChunk[]; total: number }> {
    let base = this.#db.selectFrom('parent_chunks').where('document_id', '=', g.documentId).where('generation', '=', g.generation);
    if (q.enabled !== undefined) base = base.where('enabled', '=', q.enabled ? 1 : 0);
    if (q.keyword !== undefined) base = base.where(containsIgnoringCase('content', q.keyword));
    const total = Number((await base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);
    const rows = await base.selectAll().orderBy('position').limit(q.limit).offset(q.offset).execute();
    return { rows, total };
  }

  /** Children of a parent chunk, by position. */
  async pageChildren(parentId: string, q: PageQuery): Promise<{ rows: Segment[]; total: number }> {
    let base = this.#db.selectFrom('segments').where('parent_id', '=', parentId);
    if (q.keyword !== undefined) base = base.where(containsIgnoringCase('content', q.keyword));
    const total = Number((await base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);
    const rows = await base.selectAll().orderBy('position').limit(q.limit).offset(q.offset).execute();
    return { rows, total };
  }

  /** A top-level segment of the generation. */
  async findTop(ex: Executor, g: Generation, id: string): Promise<Segment | undefined> {
    return ex.selectFrom('segments').selectAll().where('id', '=', id).where('document_id', '=', g.documentId).where('generation', '=', g.generation).where('parent_id', 'is', null).executeTakeFirst();
  }

  /** A parent chunk of the generation. */
  async findParent(ex: Executor, g: Generation, id: string): Promise<ParentChunk | undefined> {
    return ex.selectFrom('parent_chunks').selectAll().where('id', '=', id).where('document_id', '=', g.documentId).where('generation', '=', g.generation).executeTakeFirst();
  }

  /** A child chunk of this parent. */
  async findChild(ex: Executor, parentId: string, id: string): Promise<Segment | undefined> {
    return ex.selectFrom('segments').selectAll().where('id', '=', id).where('parent_id', '=', parentId).executeTakeFirst();
  }

  /** The children of these parents, by position. */
  async childrenOf(ex: Executor, parentIds: readonly string[]): Promise<Segment[]> {
    if (parentIds.length === 0) return [];
    return ex.selectFrom('segments').selectAll().where('parent_id', 'in', [...parentIds]).orderBy('position').execute();
  }

  async byId(id: string): Promise<Segment | undefined> {
    return this.#db.selectFrom('segments').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /** Segments by id, by position. */
  async byIds(ids: readonly string[]): Promise<Segment[]> {
    if (ids.length === 0) return [];
    return this.#db.selectFrom('segments').selectAll().where('id', 'in', [...ids]).orderBy('position').execute();
  }

  /** Parent chunks by id, by position. */
  async parentsByIds(ids: readonly string[]): Promise<ParentChunk[]> {
    if (ids.length === 0) return [];
    return this.#db.selectFrom('parent_chunks').selectAll().where('id', 'in', [...ids]).orderBy('position').execute();
  }

  /** The last position among a parent's children (0 without any). */
  async lastChildPosition(ex: Executor, parentId: string): Promise<number> {
    const r = await ex.selectFrom('segments').select((eb) => eb.fn.max<number>('position').as('p')).where('parent_id', '=', parentId).executeTakeFirst();
    return Number(r?.p ?? 0);
  }

  /** The last position among the generation's units (top-level segments or parent chunks; 0 without any). */
  async lastPosition(ex: Executor, g: Generation, table: UnitTable): Promise<number> {
    const r = await this.#units(ex, g, table).select((eb) => eb.fn.max<number>('position').as('p')).executeTakeFirst();
    return Number(r?.p ?? 0);
  }

  /** How many units the generation has, its last position, and the hash of the unit at `position`. */
  async unitsAt(g: Generation, table: UnitTable, position: number): Promise<{ count: number; last: number; hashAt: string | undefined }> {
    const agg = await this.#units(this.#db, g, table).select((eb) => [eb.fn.countAll<number>().as('c'), eb.fn.max<number>('position').as('m')]).executeTakeFirst();
    const at = await this.#units(this.#db, g, table).select('hash').where('position', '=', position).executeTakeFirst();
    return { count: Number(agg?.c ?? 0), last: Number(agg?.m ?? 0), hashAt: at?.hash };
  }

  /** Sums of `tokens` and `word_count` over the generation's units. */
  async totals(ex: Executor, g: Generation, table: UnitTable): Promise<{ tokens: number; words: number }> {
    const r = await this.#units(ex, g, table).select((eb) => [eb.fn.sum<number>('tokens').as('t'), eb.fn.sum<number>('word_count').as('w')]).executeTakeFirst();
    return { tokens: Number(r?.t ?? 0), words: Number(r?.w ?? 0) };
  }

  /** The units of `table` of a generation: parent chunks, or top-level segments (not children). */
  #units(ex: Executor, g: Generation, table: UnitTable) {
    const q = ex.selectFrom(table).where('document_id', '=', g.documentId).where('generation', '=', g.generation);
    return table === 'segments' ? q.where('parent_id', 'is', null) : q;
  }

  /** Dify's document `hit_count`: the sum over the segments (or parent chunks) each document serves. */
  async hitCounts(documentIds: readonly string[]): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    if (documentIds.length === 0) return out;
    const ids = [...new Set(documentIds)];
    const rows = await this.#db
      .selectFrom('segments as s')
      .innerJoin('documents as d', (j) => j.onRef('d.id', '=', 's.document_id').onRef('d.active_generation', '=', 's.generation'))
      .select((eb) => ['s.document_id', eb.fn.sum<number>('s.hit_count').as('n')])
      .where('s.document_id', 'in', ids)
      .groupBy('s.document_id')
      .execute();
    const parents = await this.#db
      .selectFrom('parent_chunks as p')
      .innerJoin('documents as d', (j) => j.onRef('d.id', '=', 'p.document_id').onRef('d.active_generation', '=', 'p.generation'))
      .select((eb) => ['p.document_id', eb.fn.sum<number>('p.hit_count').as('n')])
      .where('p.document_id', 'in', ids)
      .groupBy('p.document_id')
      .execute();
    // Children of parent chunks carry no hits (their parent does), so the two sums never overlap.
    for (const r of [...rows, ...parents]) out.set(r.document_id, (out.get(r.document_id) ?? 0) + Number(r.n ?? 0));
    return out;
  }

  // --- writes ---

  /** Inserts segments in `ex`, a hundred rows a statement. */
  async insert(ex: Executor, rows: readonly Segment[]): Promise<void> {
    for (let i = 0; i < rows.length; i += INSERT_CHUNK) await ex.insertInto('segments').values(rows.slice(i, i + INSERT_CHUNK)).execute();
  }

  /**
   * The indexer's hot path: the dialect's bulk insert inside `trx`, answering each row's rowid
   * where the dialect has one (SQLite; 0 elsewhere).
   */
  async insertBulk(trx: Transaction<Database>, rows: readonly Segment[]): Promise<(number | bigint)[]> {
    if (!this.#bulk) throw new Error('SegmentStore: no bulk writer given');
    return this.#bulk.insert(trx, rows);
  }

  /** Inserts parent chunks in `ex`, a hundred rows a statement. */
  async insertParents(ex: Executor, rows: readonly ParentChunk[]): Promise<void> {
    for (let i = 0; i < rows.length; i += INSERT_CHUNK) await ex.insertInto('parent_chunks').values(rows.slice(i, i + INSERT_CHUNK)).execute();
  }

  async update(ex: Executor, ids: readonly string[], set: SegmentChange): Promise<void> {
    for (const part of inBatches(ids)) await ex.updateTable('segments').set(set).where('id', 'in', part).execute();
  }

  async updateParent(ex: Executor, id: string, set: ParentChunkChange): Promise<void> {
    await ex.updateTable('parent_chunks').set(set).where('id', '=', id).execute();
  }

  async delete(ex: Executor, ids: readonly string[]): Promise<void> {
    for (const part of inBatches(ids)) await ex.deleteFrom('segments').where('id', 'in', part).execute();
  }

  async deleteParent(ex: Executor, id: string): Promise<void> {
    await ex.deleteFrom('parent_chunks').where('id', '=', id).execute();
  }

  /** Every segment and parent chunk of a document, of every generation. */
  async deleteOfDocument(ex: Executor, documentId: string): Promise<void> {
    await ex.deleteFrom('segments').where('document_id', '=', documentId).execute();
    await ex.deleteFrom('parent_chunks').where('document_id', '=', documentId).execute();
  }

  /** The segments and parent chunks of one generation. */
  async deleteGeneration(ex: Executor, g: Generation): Promise<void> {
    await ex.deleteFrom('segments').where('document_id', '=', g.documentId).where('generation', '=', g.generation).execute();
    await ex.deleteFrom('parent_chunks').where('document_id', '=', g.documentId).where('generation', '=', g.generation).execute();
  }

  /** The segments and parent chunks of every generation of the document but `g`. */
  async deleteOtherGenerations(ex: Executor, g: Generation): Promise<void> {
    await ex.deleteFrom('segments').where('document_id', '=', g.documentId).where('generation', '<>', g.generation).execute();
    await ex.deleteFrom('parent_chunks').where('document_id', '=', g.documentId).where('generation', '<>', g.generation).execute();
  }
}
