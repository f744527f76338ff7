import type { FastifyPluginAsync } from 'fastify';
import { Type, type Static } from '@sinclair/typebox';
import type { Runtime } from '../../runtime.js';
import { notChatApp } from '../../apps/errors.js';
import { DEFAULT_USER } from '../../apps/end-users.js';
import { CONVERSATION_SORTS } from '../../runs/chatflow-service.js';
import { requireApp } from '../auth.js';

const CHAT_MODES = new Set(['chat', 'agent-chat', 'advanced-chat']);

const MessagesQuery = Type.Object({
  conversation_id: Type.String(),
  user: Type.Optional(Type.String()),
  first_id: Type.Optional(Type.String()),
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 20 }),
});
const ConversationsQuery = Type.Object({
  user: Type.Optional(Type.String()),
  last_id: Type.Optional(Type.String()),
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 20 }),
  sort_by: Type.Union(CONVERSATION_SORTS.map((s) => Type.Literal(s)), { default: '-updated_at' }),
});

/** `GET /messages` and `GET /conversations` over the shared conversation tables. */
export const conversationRoutes: FastifyPluginAsync<{ runtime: Runtime }> = async (app, { runtime }) => {
  app.get<{ Querystring: Static<typeof MessagesQuery> }>('/messages', { schema: { querystring: MessagesQuery } }, async (request) => {
    const a = requireApp(request);
    if (!CHAT_MODES.has(a.mode)) throw notChatApp();
    const endUser = await runtime.endUsers.getOrCreate(a.id, request.query.user || DEFAULT_USER);
    return runtime.chatflow.messages(a.id, endUser.id, request.query.conversation_id, request.query.first_id || undefined, request.query.limit);
  });

  app.get<{ Querystring: Static<typeof ConversationsQuery> }>('/conversations', { schema: { querystring: ConversationsQuery } }, async (request) => {
    const a = requireApp(request);
    if (!CHAT_MODES.has(a.mode)) throw notChatApp();
    const endUser = await runtime.endUsers.getOrCreate(a.id, request.query.user || DEFAULT_USER);
    return runtime.chatflow.conversations(a.id, endUser.id, request.query.last_id || undefined, request.query.limit, request.query.sort_by);
  });
};
