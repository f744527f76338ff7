import { EMPTY_USAGE } from '../lib/usage.js';
import type { UsageBody } from '../llm/usage.js';
import type { AnnotationHit, AnnotationReplier, AnnotationReplyInfo } from './completion-service.js';
import type { MessageStore, NewConversation, NewMessage } from './message-store.js';

/** Dify's `metadata.annotation_reply`; the Service API has no accounts, so the name is Dify's fallback `Dify user`. */
export function annotationReplyInfo(hit: AnnotationHit): AnnotationReplyInfo {
  return { id: hit.id, account: { id: hit.accountId, name: 'Dify user' } };
}

/** The usage of an answer no model wrote: no tokens, no price, no latency (a copy of `EMPTY_USAGE`). */
export function zeroUsage(): UsageBody {
  return { ...EMPTY_USAGE };
}

/**
 * Stores a message an annotation answered (chat apps and chatflows alike): the row with the
 * annotation's id, the hit (count and history), then the answer with zero usage, which it returns.
 */
export async function storeAnnotationAnswer(
  d: { readonly messages: MessageStore; readonly annotations: AnnotationReplier; readonly now: () => number },
  message: Omit<NewMessage, 'annotationId'>,
  conversation: NewConversation | undefined,
  hit: AnnotationHit,
): Promise<UsageBody> {
  await d.messages.insert({ ...message, annotationId: hit.id }, conversation);
  await d.annotations.recordHit({ appId: message.appId, match: hit, query: message.query, messageId: message.id, endUserId: message.endUserId });
  const usage = zeroUsage();
  await d.messages.finish(message.id, {
    answer: hit.content,
    status: 'normal',
    error: null,
    promptTokens: 0,
    completionTokens: 0,
    usage: { ...usage },
    totalPrice: usage.total_price,
    currency: usage.currency,
    latency: usage.latency,
    updatedAt: d.now(),
  });
  return usage;
}
