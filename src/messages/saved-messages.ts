import type { Kysely } from 'kysely';
import type { Database } from '../store/schema.js';
import type { Clock } from '../infra/clock.js';
import { newId } from '../infra/ids.js';
import { notFound } from '../infra/errors.js';
import type { MessageStore } from './message-store.js';
import { messageFiles, type MessageFilePorts } from './message-files.js';

/** What saved messages read of other domains. */
export interface SavedMessageDeps {
  readonly db: Kysely<Database>;
  readonly clock: Clock;
  readonly messages: Pick<MessageStore, 'findOwned'>;
  /** The end user's rating of each message (feedback sits above messages: handed in, not imported). */
  readonly ratings: (messageIds: readonly string[]) => Promise<Map<string, string>>;
  readonly files: MessageFilePorts;
}

/**
 * The web app's saved messages (Dify's `saved_messages`): completion answers an end user keeps.
 * Each end user sees only their own, of their app's messages; saving one twice keeps one.
 */
export class SavedMessages {
  readonly #d: SavedMessageDeps;

  constructor(deps: SavedMessageDeps) {
    this.#d = deps;
  }

  /** Saves the end user's message; another's (or none) is 404 "Message Not Exists.". */
  async save(appId: string, endUserId: string, messageId: string): Promise<void> {
    const m = await this.#d.messages.findOwned(messageId, appId, endUserId);
    if (!m) throw notFound('Message Not Exists.');
    await this.#d.db
      .insertInto('saved_messages')
      .values({ id: newId(), app_id: appId, end_user_id: endUserId, message_id: messageId, created_at: this.#d.clock.now() })
      .onConflict((oc) => oc.columns(['end_user_id', 'message_id']).doNothing())
      .execute();
  }

  /** Removes the end user's saved message (one not saved is left as it is, as Dify). */
  async remove(appId: string, endUserId: string, messageId: string): Promise<void> {
    await this.#d.db.deleteFrom('saved_messages').where('app_id', '=', appId).where('end_user_id', '=', endUserId).where('message_id', '=', messageId).execute();
  }

  /**
   * A page of the end user's saved messages, newest saved first, after the message `lastId` (404
   * when it is not one of them), in Dify's saved-message shape.
   */
  async list(appId: string, endUserId: string, lastId: string | undefined, limit: number, origin: string): Promise<{ limit: number; has_more: boolean; data: Record<string, unknown>[] }> {
    let q = this.#d.db.selectFrom('saved_messages').select(['message_id', 'created_at', 'id']).where('app_id', '=', appId).where('end_user_id', '=', endUserId);
    if (lastId) {
      const last = await this.#d.db.selectFrom('saved_messages').select(['created_at', 'id']).where('end_user_id', '=', endUserId).where('app_id', '=', appId).where('message_id', '=', lastId).executeTakeFirst();
      if (!last) throw notFound('Last Message Not Exists.');
      q = q.where((eb) => eb.or([eb('created_at', '<', last.created_at), eb.and([eb('created_at', '=', last.created_at), eb('id', '<', last.id)])]));
    }
    const rows = await q.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit + 1).execute();
    const page = rows.slice(0, limit);
    const found = await Promise.all(page.map((r) => this.#d.messages.findOwned(r.message_id, appId, endUserId)));
    const messages = found.filter((m) => m !== undefined);
    const ratings = await this.#d.ratings(messages.map((m) => m.id));
    const files = await Promise.all(messages.map((m) => messageFiles(this.#d.files, origin, m)));
    const data = messages.map((m, i) => ({
      id: m.id,
      inputs: m.inputs,
      query: m.query,
      answer: m.answer,
      message_files: files[i],
      feedback: ratings.has(m.id) ? { rating: ratings.get(m.id) } : null,
      created_at: Math.floor(m.createdAt / 1000),
    }));
    return { limit, has_more: rows.length > limit, data };
  }

  /** Deletes an app's saved answers (`app delete --purge`, in its transaction, before the messages). */
  static async purgeApp(db: Kysely<Database>, appId: string): Promise<void> {
    await db.deleteFrom('saved_messages').where('app_id', '=', appId).execute();
  }
}
