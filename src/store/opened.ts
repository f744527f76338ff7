import type { Kysely } from 'kysely';
import type { Database } from './schema.js';
import type { SearchDialect } from '../knowledge/index/search-dialect.js';

/** What differs between the storage dialects that is not a search port: capabilities, not identities. */
export interface StoreCaps {
  /** Row locks (`SELECT … FOR UPDATE`) exist; SQLite serializes writers instead. */
  readonly rowLocks: boolean;
  /**
   * A number that changes whenever another connection (another process: the CLI, another
   * instance) commits, read without a query and at most once per event-loop turn (a commit is seen
   * from the next turn); absent where the database has no such counter (PostgreSQL). Caches of rows
   * that change rarely (keys, apps) check it instead of the row.
   */
  readonly changeStamp?: () => number;
}

/** A database as its dialect module opened it (`sqlite/open.ts`, `postgres/open.ts`), before migrations. */
export interface OpenedDatabase {
  readonly db: Kysely<Database>;
  readonly caps: StoreCaps;
  readonly dialect: SearchDialect;
  /** Whether Kysely's migration table exists yet (in the configured schema), read from the catalog. */
  migrationTableExists(): Promise<boolean>;
}
