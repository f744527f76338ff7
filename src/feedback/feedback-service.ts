import type { App } from '../apps/app-service.js';
import type { EndUserService } from '../apps/end-users.js';
import type { Clock } from '../infra/clock.js';
import { invalidParam, notFound } from '../infra/errors.js';
import { newId, isUuid } from '../infra/ids.js';
import type { MessageStore } from '../messages/message-store.js';
import type { Feedback, FeedbackStore, Rating } from './feedback-store.js';

/** A page-1 snapshot older than this no longer pins later pages. */
export const SNAPSHOT_TTL_MS = 10 * 60_000;

export interface SubmitFeedback {
  readonly messageId: string;
  /** `null` (or absent) revokes. */
  readonly rating: Rating | null;
  readonly content: string | null;
  readonly user: string | undefined;
}

export interface AdminFeedback {
  readonly messageId: string;
  readonly rating: Rating;
  readonly content: string | null;
  /** Account name; the account is created on first use. */
  readonly account: string;
}

export interface FeedbackPage {
  readonly page: number;
  readonly limit: number;
  /** API key of the reader; its page-1 read pins the snapshot later pages use. */
  readonly readerKeyId: string;
}

/** Message feedback from end users (API) and admins (CLI / console), and the app's feedback list. */
export class FeedbackService {
  readonly #store: FeedbackStore;
  readonly #messages: MessageStore;
  readonly #endUsers: EndUserService;
  readonly #clock: Clock;

  constructor(store: FeedbackStore, messages: MessageStore, endUsers: EndUserService, clock: Clock) {
    this.#store = store;
    this.#messages = messages;
    this.#endUsers = endUsers;
    this.#clock = clock;
  }

  /**
   * Dify's rules: the message must be this app's and this end user's (else 404 `Message Not
   * Exists.`); like/dislike creates or overwrites (content too, also with null); null revokes, and
   * null with nothing to revoke is a 400.
   */
  async submit(app: App, f: SubmitFeedback): Promise<void> {
    if (f.user === undefined || f.user === '') throw invalidParam('Arg user must be provided.');
    const endUser = await this.#endUsers.getOrCreate(app.id, f.user);
    const message = isUuid(f.messageId) ? await this.#messages.findOwned(f.messageId, app.id, endUser.id) : undefined;
    if (!message) throw notFound('Message Not Exists.');
    if (f.rating === null) {
      if (!(await this.#store.delete(message.id, 'user'))) throw invalidParam('rating cannot be None when feedback not exists');
      return;
    }
    const now = this.#clock.now();
    await this.#store.upsert({
      id: newId(),
      appId: app.id,
      conversationId: message.conversationId,
      messageId: message.id,
      rating: f.rating,
      content: f.content,
      fromSource: 'user',
      fromEndUserId: endUser.id,
      fromAccountId: null,
      createdAt: now,
      updatedAt: now,
    });
  }

  /** Admin feedback (the message's admin slot), as the console would leave it. */
  async addAdmin(f: AdminFeedback): Promise<Feedback> {
    const message = isUuid(f.messageId) ? await this.#messages.find(f.messageId) : undefined;
    if (!message) throw notFound('Message Not Exists.');
    const now = this.#clock.now();
    const accountId = await this.#store.accountId(f.account, newId(), now);
    await this.#store.upsert({
      id: newId(),
      appId: message.appId,
      conversationId: message.conversationId,
      messageId: message.id,
      rating: f.rating,
      content: f.content,
      fromSource: 'admin',
      fromEndUserId: null,
      fromAccountId: accountId,
      createdAt: now,
      updatedAt: now,
    });
    return (await this.#store.findSlot(message.id, 'admin'))!;
  }

  /**
   * One page of the app's feedback, newest first. Page 1 pins a snapshot (the newest insert seen)
   * for the reader's key and page size; later pages rank only feedback inside it, so feedback
   * added while a reader pages through neither repeats nor pushes items past a page boundary.
   */
  async list(app: App, p: FeedbackPage): Promise<Feedback[]> {
    const now = this.#clock.now();
    let maxSeq: number;
    if (p.page === 1) {
      maxSeq = await this.#store.maxSeq();
      await this.#store.saveSnapshot(p.readerKeyId, p.limit, maxSeq, now);
    } else {
      const snap = await this.#store.snapshot(p.readerKeyId, p.limit);
      maxSeq = snap && now - snap.at < SNAPSHOT_TTL_MS ? snap.maxSeq : await this.#store.maxSeq();
    }
    return this.#store.page(app.id, { maxSeq, offset: (p.page - 1) * p.limit, limit: p.limit });
  }
}

/** FeedbackItem on the wire; timestamps are RFC 3339 (UTC, `Z`). */
export function feedbackItem(f: Feedback): Record<string, unknown> {
  return {
    id: f.id,
    app_id: f.appId,
    conversation_id: f.conversationId,
    message_id: f.messageId,
    rating: f.rating,
    content: f.content,
    from_source: f.fromSource,
    from_end_user_id: f.fromEndUserId,
    from_account_id: f.fromAccountId,
    created_at: new Date(f.createdAt).toISOString(),
    updated_at: new Date(f.updatedAt).toISOString(),
  };
}
