import type { ChatMessage } from '../llm/model-provider.js';
import type { ConversationMemory } from '../engine/types.js';
import type { MessageStore } from '../messages/message-store.js';

/** Chatflow memory from the messages table: the last finished exchanges of a conversation. */
export class DbConversationMemory implements ConversationMemory {
  readonly #messages: MessageStore;

  constructor(messages: MessageStore) {
    this.#messages = messages;
  }

  async history(conversationId: string, window: number): Promise<ChatMessage[]> {
    if (window <= 0) return [];
    const rows = await this.#messages.recentExchanges(conversationId, window);
    return rows.flatMap((r) => [
      { role: 'user' as const, content: r.query },
      { role: 'assistant' as const, content: r.answer },
    ]);
  }
}
