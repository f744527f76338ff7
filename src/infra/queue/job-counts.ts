import type { Kysely } from 'kysely';
import type { Database } from '../../store/schema.js';

/** Background jobs of the embedded runner by status: queued, running, done, failed (for metrics); timers (`repeat:` rows) left out. */
export async function jobsByStatus(db: Kysely<Database>): Promise<Record<string, number>> {
  const rows = await db.selectFrom('jobs').where('id', 'not like', 'repeat:%').select(['status', (eb) => eb.fn.countAll<number>().as('n')]).groupBy('status').execute();
  return Object.fromEntries(rows.map((r) => [r.status, Number(r.n)]));
}
