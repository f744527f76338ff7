/** A new conversation's name: the first line of its first query, cut to 50 characters. */
export function conversationName(query: string): string {
  return query.split('\n')[0]!.trim().slice(0, 50) || 'New conversation';
}
