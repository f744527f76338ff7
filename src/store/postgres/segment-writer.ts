import type { Transaction } from 'kysely';
import type { Database, SegmentTable } from '../schema.js';
import type { SegmentWriter } from '../../knowledge/index/search-dialect.js';

/** A multi-row insert through the transaction; PostgreSQL rows have no rowid to hand on (0). */
export class PostgresSegmentWriter implements SegmentWriter {
  async insert(trx: Transaction<Database>, rows: readonly SegmentTable[]): Promise<(number | bigint)[]> {
    await trx.insertInto('segments').values([...rows]).execute();
    return rows.map(() => 0);
  }
}
