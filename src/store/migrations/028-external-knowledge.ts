import type { Kysely } from 'kysely';

/**
 * Datasets backed by Dify's External Knowledge API (`datasets.external_knowledge`, JSON: endpoint,
 * sealed API key, knowledge id, retrieval settings); null for Dovetail's own knowledge bases.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('datasets').addColumn('external_knowledge', 'text').execute();
}
