import type { Kysely } from 'kysely';

/**
 * One row per process that runs the job worker, its heartbeat (`seen_at`, epoch ms) renewed every
 * WORKER_HEARTBEAT_SECONDS: how a process without a worker (the `api` role) knows whether any worker
 * is running (`/ready`, `/metrics`, a warning in its log).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('worker_heartbeats')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('role', 'text', (c) => c.notNull())
    .addColumn('host', 'text', (c) => c.notNull())
    .addColumn('pid', 'integer', (c) => c.notNull())
    .addColumn('started_at', 'bigint', (c) => c.notNull())
    .addColumn('seen_at', 'bigint', (c) => c.notNull())
    .execute();
}
