import type { Kysely } from 'kysely';
import type { Database } from '../store/schema.js';
import { RunStore } from '../runs/run-store.js';
import { FormStore } from '../forms/form-store.js';
import { FeedbackStore } from '../feedback/feedback-store.js';
import { SavedMessages } from '../messages/saved-messages.js';
import { MessageStore } from '../messages/message-store.js';
import { ConversationStore } from '../messages/conversation-store.js';
import { ConversationVariables } from '../runs/conversation-variables.js';
import { AnnotationStore } from '../annotations/annotation-store.js';
import { FileStore } from '../files/file-store.js';
import { EndUserService } from '../apps/end-users.js';

/**
 * Removes every row of an app's data (`app delete --purge`), inside the transaction that deletes
 * the app: each domain's store deletes its own tables, children first — runs with their event logs
 * and snapshots, forms with their deliveries, feedback, saved answers, messages, conversation
 * variables, conversations with their pins, annotations, upload records, and end users last.
 * Uploaded files' bytes stay in the blob store.
 */
export async function purgeAppData(trx: Kysely<Database>, appId: string): Promise<void> {
  await new RunStore(trx).purgeApp(appId, trx);
  await new FormStore(trx).purgeApp(appId);
  await new FeedbackStore(trx).purgeApp(appId);
  await SavedMessages.purgeApp(trx, appId);
  await new MessageStore(trx).purgeApp(appId);
  await ConversationVariables.purgeApp(trx, appId);
  await new ConversationStore(trx).purgeApp(appId);
  await new AnnotationStore(trx).purgeApp(appId);
  await new FileStore(trx).purgeApp(appId);
  await EndUserService.purgeApp(trx, appId);
}
