import type { Kysely } from 'kysely';
import type { Database } from '../store/schema.js';
import type { ChatMessage } from '../llm/model-provider.js';
import type { ConversationMemory } from '../engine/types.js';

/** Chatflow memory from the messages table: the last finished exchanges of a conversation. */
export class DbConversationMemory implements ConversationMemory {
  readonly #db: Kysely<Database>;

  constructor(db: Kysely<Database>) {
    this.#db = db;
  }

  async history(conversationId: string, window: number): Promise<ChatMessage[]> {
    if (window <= 0) return [];
    const rows = await this.#db
      .selectFrom('messages')
      .select(['query', 'answer'])
      .where('conversation_id', '=', conversationId)
      .where('status', '=', 'normal')
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(window)
      .execute();
    return rows.reverse().flatMap((r) => [
      { role: 'user' as const, content: r.query },
      { role: 'assistant' as const, content: r.answer },
    ]);
  }
}
