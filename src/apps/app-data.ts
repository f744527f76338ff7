import type { Kysely } from 'kysely';
import type { Database } from '../store/schema.js';
import { RunStore } from '../runs/run-store.js';
import { FormStore } from '../forms/form-store.js';

/** Tables holding an app's data by `app_id` (besides its runs, which the runs store purges), cleared by `app delete --purge` (children first). */
const APP_TABLES = [
  'message_feedbacks',
  'saved_messages',
  'pinned_conversations',
  'messages',
  'conversation_variables',
  'conversations',
  'annotation_hit_histories',
  'annotation_embeddings',
  'annotation_jobs',
  'app_annotations',
  'app_annotation_settings',
  'upload_files',
  'end_users',
] as const satisfies readonly (keyof Database)[];

/**
 * Removes every row of an app's data: its runs with their event logs and snapshots, forms with
 * their deliveries, messages, conversations, feedback, annotations, upload records and end users.
 * Runs inside the transaction that deletes the app. Uploaded files' bytes stay in the blob store.
 */
export async function purgeAppData(trx: Kysely<Database>, appId: string): Promise<void> {
  await new RunStore(trx).purgeApp(appId, trx);
  await new FormStore(trx).purgeApp(appId);
  for (const t of APP_TABLES) await trx.deleteFrom(t).where('app_id', '=', appId).execute();
}
