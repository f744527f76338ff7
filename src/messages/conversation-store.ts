import type { Kysely, Transaction } from 'kysely';
import type { ConversationTable, Database } from '../store/schema.js';

export const CONVERSATION_STATUSES = ['normal'] as const;
export type ConversationStatus = (typeof CONVERSATION_STATUSES)[number];

export const CONVERSATION_SORTS = ['created_at', '-created_at', 'updated_at', '-updated_at'] as const;
export type ConversationSort = (typeof CONVERSATION_SORTS)[number];

/** A conversation of a chat, agent-chat or chatflow app (completion messages have one each, too). */
export interface Conversation {
  readonly id: string;
  readonly appId: string;
  readonly endUserId: string;
  readonly name: string;
  /** The inputs it started with (later requests' inputs are ignored, as Dify). */
  readonly inputs: Record<string, unknown>;
  readonly status: ConversationStatus;
  /** Epoch ms. */
  readonly createdAt: number;
  readonly updatedAt: number;
}

/** A conversation created together with its first message. */
export interface NewConversation {
  readonly id: string;
  readonly appId: string;
  readonly endUserId: string;
  readonly name: string;
  readonly inputs: Record<string, unknown>;
}

function toConversation(r: ConversationTable): Conversation {
  return {
    id: r.id,
    appId: r.app_id,
    endUserId: r.end_user_id,
    name: r.name,
    inputs: JSON.parse(r.inputs) as Record<string, unknown>,
    status: r.status as ConversationStatus,
    createdAt: Number(r.created_at),
    updatedAt: Number(r.updated_at),
  };
}

/** The row of a new conversation started at `at` (epoch ms), inserted with its first message (`MessageStore.insert`). */
export function conversationRow(c: NewConversation, at: number): ConversationTable {
  return { id: c.id, app_id: c.appId, end_user_id: c.endUserId, name: c.name, inputs: JSON.stringify(c.inputs), status: 'normal', created_at: at, updated_at: at };
}

/** The `conversations` table. */
export class ConversationStore {
  readonly #db: Kysely<Database>;

  constructor(db: Kysely<Database>) {
    this.#db = db;
  }

  /** Makes the conversation the most recently updated (a new message, an answer finished). */
  async touch(id: string, at: number, tx?: Transaction<Database>): Promise<void> {
    await (tx ?? this.#db).updateTable('conversations').set({ updated_at: at }).where('id', '=', id).execute();
  }

  /** The end user's live conversation `id` of this app, or undefined. */
  async findOwned(appId: string, endUserId: string, id: string): Promise<Conversation | undefined> {
    const row = await this.#db.selectFrom('conversations').selectAll().where('id', '=', id).where('app_id', '=', appId).where('end_user_id', '=', endUserId).where('status', '=', 'normal').executeTakeFirst();
    return row ? toConversation(row) : undefined;
  }

  /**
   * A page of the end user's live conversations in `sort` order, after the conversation `lastId`
   * when given (`null`: there is no such conversation). Fetch `limit + 1` to learn whether more exist.
   */
  async page(appId: string, endUserId: string, opts: { lastId?: string; limit: number; sort: ConversationSort; pinned?: boolean }): Promise<Conversation[] | null> {
    const field = opts.sort.replace('-', '') as 'created_at' | 'updated_at';
    const desc = opts.sort.startsWith('-');
    let q = this.#db.selectFrom('conversations').selectAll().where('app_id', '=', appId).where('end_user_id', '=', endUserId).where('status', '=', 'normal');
    if (opts.pinned !== undefined) {
      // the web app's `pinned`: only the end user's pinned conversations, or only the others
      const pins = this.#db.selectFrom('pinned_conversations').select('conversation_id').where('end_user_id', '=', endUserId);
      q = q.where('id', opts.pinned ? 'in' : 'not in', pins);
    }
    if (opts.lastId) {
      const last = await this.#db.selectFrom('conversations').selectAll().where('id', '=', opts.lastId).where('app_id', '=', appId).where('end_user_id', '=', endUserId).executeTakeFirst();
      if (!last) return null;
      const v = last[field];
      q = q.where((eb) => eb.or([eb(field, desc ? '<' : '>', v), eb.and([eb(field, '=', v), eb('id', desc ? '<' : '>', last.id)])]));
    }
    const rows = await q.orderBy(field, desc ? 'desc' : 'asc').orderBy('id', desc ? 'desc' : 'asc').limit(opts.limit).execute();
    return rows.map(toConversation);
  }

  async rename(id: string, name: string, at: number): Promise<void> {
    await this.#db.updateTable('conversations').set({ name, updated_at: at }).where('id', '=', id).execute();
  }

  /** Deletes the conversation row and its pins (in `tx`, after what refers to it). */
  async delete(id: string, tx: Transaction<Database>): Promise<void> {
    await tx.deleteFrom('pinned_conversations').where('conversation_id', '=', id).execute();
    await tx.deleteFrom('conversations').where('id', '=', id).execute();
  }

  /** Pins a conversation for its end user (Dify's web app); pinning it again changes nothing. */
  async pin(c: Pick<Conversation, 'id' | 'appId' | 'endUserId'>, at: number): Promise<void> {
    await this.#db
      .insertInto('pinned_conversations')
      .values({ app_id: c.appId, end_user_id: c.endUserId, conversation_id: c.id, created_at: at })
      .onConflict((oc) => oc.columns(['end_user_id', 'conversation_id']).doNothing())
      .execute();
  }

  /** Unpins a conversation for its end user; one that is not pinned is left as it is. */
  async unpin(c: Pick<Conversation, 'id' | 'endUserId'>): Promise<void> {
    await this.#db.deleteFrom('pinned_conversations').where('end_user_id', '=', c.endUserId).where('conversation_id', '=', c.id).execute();
  }

  /** Deletes an app's conversations with their pins (`app delete --purge`, in its transaction, after the messages). */
  async purgeApp(appId: string): Promise<void> {
    await this.#db.deleteFrom('pinned_conversations').where('app_id', '=', appId).execute();
    await this.#db.deleteFrom('conversations').where('app_id', '=', appId).execute();
  }
}
