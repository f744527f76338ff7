import type { Kysely, Transaction } from 'kysely';
import type { Database, MessageFeedbackTable } from '../store/schema.js';
import { AccountStore } from '../accounts/account-store.js';

export const RATINGS = ['like', 'dislike'] as const;
export type Rating = (typeof RATINGS)[number];
export const FEEDBACK_SOURCES = ['user', 'admin'] as const;
export type FeedbackSource = (typeof FEEDBACK_SOURCES)[number];

export interface Feedback {
  readonly seq: number;
  readonly id: string;
  readonly appId: string;
  readonly conversationId: string | null;
  readonly messageId: string;
  readonly rating: Rating;
  readonly content: string | null;
  readonly fromSource: FeedbackSource;
  readonly fromEndUserId: string | null;
  readonly fromAccountId: string | null;
  /** Epoch ms. */
  readonly createdAt: number;
  readonly updatedAt: number;
}

type Row = MessageFeedbackTable & { seq: number };

function toFeedback(r: Row): Feedback {
  return {
    seq: Number(r.seq),
    id: r.id,
    appId: r.app_id,
    conversationId: r.conversation_id,
    messageId: r.message_id,
    rating: r.rating as Rating,
    content: r.content,
    fromSource: r.from_source as FeedbackSource,
    fromEndUserId: r.from_end_user_id,
    fromAccountId: r.from_account_id,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

export type NewFeedback = Omit<Feedback, 'seq'>;

/** Feedback rows: one slot per message and source (`user`, `admin`). */
export class FeedbackStore {
  readonly #db: Kysely<Database>;
  readonly #accounts: AccountStore;

  constructor(db: Kysely<Database>, accounts: AccountStore = new AccountStore(db)) {
    this.#db = db;
    this.#accounts = accounts;
  }

  async findSlot(messageId: string, source: FeedbackSource): Promise<Feedback | undefined> {
    const row = await this.#db.selectFrom('message_feedbacks').selectAll().where('message_id', '=', messageId).where('from_source', '=', source).executeTakeFirst();
    return row ? toFeedback(row as Row) : undefined;
  }

  /**
   * Creates the slot's feedback or, when it exists, overwrites rating, content and author.
   * Concurrent writers to one slot end with one row (the unique key decides).
   */
  async upsert(f: NewFeedback): Promise<void> {
    await this.#db
      .insertInto('message_feedbacks')
      .values({
        id: f.id,
        app_id: f.appId,
        conversation_id: f.conversationId,
        message_id: f.messageId,
        rating: f.rating,
        content: f.content,
        from_source: f.fromSource,
        from_end_user_id: f.fromEndUserId,
        from_account_id: f.fromAccountId,
        created_at: f.createdAt,
        updated_at: f.updatedAt,
      })
      .onConflict((oc) =>
        oc.columns(['message_id', 'from_source']).doUpdateSet({
          rating: f.rating,
          content: f.content,
          from_end_user_id: f.fromEndUserId,
          from_account_id: f.fromAccountId,
          updated_at: f.updatedAt,
        }),
      )
      .execute();
  }

  /** The end user's (`user` source) rating of each of these messages that has one (Dify's `Message.user_feedback`). */
  async userRatings(messageIds: readonly string[]): Promise<Map<string, Rating>> {
    const out = new Map<string, Rating>();
    if (messageIds.length === 0) return out;
    const rows = await this.#db
      .selectFrom('message_feedbacks')
      .select(['message_id', 'rating'])
      .where('message_id', 'in', [...messageIds])
      .where('from_source', '=', 'user')
      .execute();
    for (const r of rows) out.set(r.message_id, r.rating as Rating);
    return out;
  }

  /** Deletes the slot's feedback; returns whether there was one. */
  async delete(messageId: string, source: FeedbackSource): Promise<boolean> {
    const r = await this.#db.deleteFrom('message_feedbacks').where('message_id', '=', messageId).where('from_source', '=', source).executeTakeFirst();
    return Number(r.numDeletedRows) > 0;
  }

  /** Deletes the feedback on a conversation's messages (in `tx`, with the conversation). */
  async deleteByConversation(conversationId: string, tx: Transaction<Database>): Promise<void> {
    await tx.deleteFrom('message_feedbacks').where('conversation_id', '=', conversationId).execute();
  }

  /** Highest `seq` so far (0 when empty). */
  async maxSeq(): Promise<number> {
    const r = await this.#db.selectFrom('message_feedbacks').select((eb) => eb.fn.max('seq').as('m')).executeTakeFirst();
    return Number(r?.m ?? 0);
  }

  /** The app's feedback with `seq ≤ maxSeq`, newest first (`created_at` desc, `id` desc). */
  async page(appId: string, opts: { maxSeq: number; offset: number; limit: number }): Promise<Feedback[]> {
    const rows = await this.#db
      .selectFrom('message_feedbacks')
      .selectAll()
      .where('app_id', '=', appId)
      .where('seq', '<=', opts.maxSeq)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .offset(opts.offset)
      .limit(opts.limit)
      .execute();
    return rows.map((r) => toFeedback(r as Row));
  }

  /** The snapshot a key's reader took on page 1 for this page size. */
  async snapshot(apiKeyId: string, limit: number): Promise<{ maxSeq: number; at: number } | undefined> {
    const r = await this.#db
      .selectFrom('feedback_page_snapshots')
      .select(['max_seq', 'created_at'])
      .where('api_key_id', '=', apiKeyId)
      .where('page_limit', '=', limit)
      .executeTakeFirst();
    return r ? { maxSeq: Number(r.max_seq), at: Number(r.created_at) } : undefined;
  }

  async saveSnapshot(apiKeyId: string, limit: number, maxSeq: number, at: number): Promise<void> {
    await this.#db
      .insertInto('feedback_page_snapshots')
      .values({ api_key_id: apiKeyId, page_limit: limit, max_seq: maxSeq, created_at: at })
      .onConflict((oc) => oc.columns(['api_key_id', 'page_limit']).doUpdateSet({ max_seq: maxSeq, created_at: at }))
      .execute();
  }

  /** The account id for an admin name, created on first use. */
  accountId(name: string, id: string, at: number): Promise<string> {
    return this.#accounts.idOf(name, id, at);
  }

  /** Deletes the feedback on an app's messages (`app delete --purge`, in its transaction). */
  async purgeApp(appId: string): Promise<void> {
    await this.#db.deleteFrom('message_feedbacks').where('app_id', '=', appId).execute();
  }
}
