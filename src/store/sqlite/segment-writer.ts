import type { Transaction } from 'kysely';
import type SQLite from 'better-sqlite3';
import type { Database, SegmentTable } from '../schema.js';
import type { SegmentWriter } from '../../knowledge/index/search-dialect.js';

/**
 * Inserts segments through one prepared statement on the raw handle, which is the connection
 * Kysely's open transaction runs on (a prepared statement inserts much faster than a built query),
 * and answers each row's rowid for the FTS5 index.
 */
export class SqliteSegmentWriter implements SegmentWriter {
  readonly #handle: SQLite.Database;
  #insert: SQLite.Statement | undefined;

  constructor(handle: SQLite.Database) {
    this.#handle = handle;
  }

  async insert(_trx: Transaction<Database>, rows: readonly SegmentTable[]): Promise<(number | bigint)[]> {
    // Positional parameters: binding by name from an object costs a property lookup per column.
    const insert = (this.#insert ??= this.#handle.prepare(
      'INSERT INTO segments (id, dataset_id, document_id, generation, position, content, word_count, tokens, hash, status, hit_count, created_at, completed_at, parent_id, answer) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
    ));
    return rows.map(
      (r) =>
        insert.run(r.id, r.dataset_id, r.document_id, r.generation, r.position, r.content, r.word_count, r.tokens, r.hash, r.status, r.hit_count, r.created_at, r.completed_at, r.parent_id, r.answer)
          .lastInsertRowid,
    );
  }
}
