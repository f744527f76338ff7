import type { Kysely } from 'kysely';

/**
 * Messages keep their citations (`metadata.retriever_resources`): a JSON array of Dify's
 * `RetrievalSourceMetadata` objects, each with the `id` `GET /messages` lists it by. Rows from
 * before have none (`[]`).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('messages').addColumn('retriever_resources', 'text', (c) => c.notNull().defaultTo('[]')).execute();
}
