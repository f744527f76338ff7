import type { Kysely } from 'kysely';

/**
 * Runs execute as queue jobs with an owner lease (issue 18). `owner_epoch` is the fencing token:
 * claiming a run increments it (compare-and-set), and every write of the owner (journal flush,
 * run-row update) is conditional on the epoch it claimed, so an owner that stalled past its lease
 * and was taken over can no longer write. `owner_job` is the job that owns the run while it
 * executes (null while it waits, paused or ended): a second job for the same run never takes it
 * over, only the same job re-claimed after its lease ran out.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('workflow_runs').addColumn('owner_epoch', 'integer', (c) => c.notNull().defaultTo(0)).execute();
  await db.schema.alterTable('workflow_runs').addColumn('owner_job', 'text').execute();
  // runs an earlier version left running (handed back at shutdown, or their process died): the
  // runtime queues a job for each at start (RunService.startBackground) and they continue
  const t = db as unknown as Kysely<{ workflow_runs: { status: string; owner_epoch: number } }>;
  await t.updateTable('workflow_runs').set({ owner_epoch: -1 }).where('status', '=', 'running').execute();
}
