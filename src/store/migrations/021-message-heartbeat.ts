import type { Kysely } from 'kysely';

/**
 * Chat and completion messages carry the time their generating process last said it was alive
 * (`heartbeat_at`, epoch ms; written with the answer so far every MESSAGE_SAVE_INTERVAL_MS). A
 * `running` message whose heartbeat is older than MESSAGE_LEASE_SECONDS lost its process and is
 * ended `error` with its partial answer (src/messages/message-leases.ts). Rows from before are 0:
 * any of them still `running` was left by a process that is gone.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('messages').addColumn('heartbeat_at', 'bigint', (c) => c.notNull().defaultTo(0)).execute();
  await db.schema.createIndex('messages_status_heartbeat').on('messages').columns(['status', 'heartbeat_at']).execute();
}
