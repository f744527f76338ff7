
import type { Executor } from '../../store/schema.js';
import { IndexingRunStore, type IndexingRun } from './indexing-run-store.js';

/**
 * Thrown when this execution no longer owns its run: the document was paused (or resumed by a
 * newer execution, or a lease expired and another worker took over). The execution just stops.
 */
export class Fenced extends Error {
  override name = 'Fenced';
}


/**
 * Yields one turn of the event loop. On SQLite every query resolves as a microtask, so a loop of
 * batches would otherwise run from the first to the last without letting a request in.
 */
export const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Asserts (inside `db`'s transaction) that `run.owner` still owns the run, touching its row so concurrent owners serialize. */
export async function assertOwner(db: Executor, run: IndexingRun, now: number): Promise<void> {
  if (!(await new IndexingRunStore(db).updateOwned(run, { updated_at: now }))) throw new Fenced();
}
