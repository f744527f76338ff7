import { EMPTY_USAGE } from '../lib/usage.js';
import type { UsageBody } from '../llm/usage.js';
import type { MessageStore, NewConversation, NewMessage } from './message-store.js';

/** `metadata.annotation_reply`: the annotation and its author (none over the Service API: `Dify user`, as Dify's fallback). */
export interface AnnotationReplyInfo {
  readonly id: string;
  readonly account: { readonly id: string | null; readonly name: string };
}

/** The annotation that answers a chat query instead of the model (src/annotations). */
export interface AnnotationHit {
  readonly id: string;
  readonly question: string;
  readonly content: string;
  readonly accountId: string | null;
  readonly score: number;
}

/** Annotation reply as chat apps see it. */
export interface AnnotationReplier {
  /** The annotation to answer `query` with, if reply is enabled and one scores high enough. Never throws. */
  match(appId: string, query: string): Promise<AnnotationHit | undefined>;
  /** Counts the hit and records it against the message. */
  recordHit(h: { appId: string; match: AnnotationHit; query: string; messageId: string; endUserId: string }): Promise<void>;
}

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
