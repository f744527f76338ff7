
import type { Executor } from '../../store/schema.js';

export interface Hit {
  readonly segmentId: string;
  /** 0..1, higher is better. */
  readonly score: number;
}


/** English function words, dropped from keyword queries (Dify extracts keywords the same way). */
const STOPWORDS = new Set(
  'a an and are as at be been but by can could did do does for from had has have he her his how i if in into is it its me my no not of on or our she so than that the their them then there these they this those to too us was we were what when where which who why will with would you your'.split(' '),
);

/**
 * The words of a query: letters and digits only, so they are safe inside FTS5 / tsquery syntax;
 * stop words are dropped unless the query has nothing else.
 */
export function queryTerms(query: string): string[] {
  const words = [...new Set(query.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [])];
  const content = words.filter((w) => !STOPWORDS.has(w));
  return (content.length > 0 ? content : words).slice(0, 32);
}

/** The distinct content words of a text (lower case, stop words dropped): what reranking by keywords compares. */
export function contentTerms(text: string): Set<string> {
  const out = new Set<string>();
  for (const w of text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []) if (!STOPWORDS.has(w)) out.add(w);
  return out;
}

/** A segment row already in `segments`, as the keyword index is handed it after a bulk insert. */
export interface KeywordRow {
  /** The row's SQLite rowid from the segment writer (0 where the dialect has none). */
  readonly rowid: number | bigint;
  readonly id: string;
  readonly datasetId: string;
  readonly content: string;
}

/**
 * Full-text index over segment content, supplied by the storage dialect (SQLite FTS5, PostgreSQL
 * tsvector). Only segments of a document's active generation are ever returned. Every write runs
 * inside the caller's transaction; removals must run while the `segments` rows still hold the
 * indexed content.
 */
export interface KeywordIndex {
  init(): Promise<void>;
  /** Adds segments already inserted in `segments` (a bulk insert, see `SegmentWriter`). */
  add(db: Executor, rows: readonly KeywordRow[]): Promise<void>;
  removeDocument(db: Executor, documentId: string, generation?: number): Promise<void>;
  removeOtherGenerations(db: Executor, documentId: string, keep: number): Promise<void>;
  /** Indexes segments already in `segments` by id (created, or content changed, through the segment API). */
  addSegments(db: Executor, segmentIds: readonly string[]): Promise<void>;
  /** Forgets segments by id (before a delete or a content change). */
  removeSegments(db: Executor, segmentIds: readonly string[]): Promise<void>;
  /** The `limit` best keyword hits in these datasets, among the segments of `documentIds` when given (a metadata filter). */
  search(datasetIds: readonly string[], query: string, limit: number, documentIds?: readonly string[]): Promise<Hit[]>;
}
