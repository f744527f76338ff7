import type { Kysely } from 'kysely';

/**
 * Agent-chat apps: Dify's `message_agent_thoughts`, one row per round of the agent loop (its
 * thought, the tools it called with their inputs, and what they answered), by message.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('message_agent_thoughts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('message_id', 'text', (c) => c.notNull())
    .addColumn('position', 'integer', (c) => c.notNull())
    .addColumn('thought', 'text', (c) => c.notNull())
    .addColumn('tool', 'text', (c) => c.notNull())
    .addColumn('tool_labels', 'text', (c) => c.notNull())
    .addColumn('tool_input', 'text', (c) => c.notNull())
    .addColumn('observation', 'text', (c) => c.notNull())
    .addColumn('files', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('message_agent_thoughts_message').on('message_agent_thoughts').columns(['message_id', 'position']).execute();
}
