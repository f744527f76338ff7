import type { Kysely } from 'kysely';
import type { Database } from '../../store/schema.js';

/** Background jobs by status: queued, running, done, failed (for metrics). */
export async function jobsByStatus(db: Kysely<Database>): Promise<Record<string, number>> {
  const rows = await db.selectFrom('jobs').select(['status', (eb) => eb.fn.countAll<number>().as('n')]).groupBy('status').execute();
  return Object.fromEntries(rows.map((r) => [r.status, Number(r.n)]));
}
