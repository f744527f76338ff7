import type { Kysely } from 'kysely';
import type { Database } from '../store/schema.js';

/** Workflow and chatflow runs by status (for metrics). */
export async function runsByStatus(db: Kysely<Database>): Promise<Record<string, number>> {
  const rows = await db.selectFrom('workflow_runs').select(['status', (eb) => eb.fn.countAll<number>().as('n')]).groupBy('status').execute();
  return Object.fromEntries(rows.map((r) => [r.status, Number(r.n)]));
}
