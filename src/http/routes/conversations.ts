import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { Type, type Static } from '@sinclair/typebox';
import type { Runtime } from '../../runtime.js';
import { notChatApp } from '../../apps/errors.js';
import { CONVERSATION_SORTS } from '../../runs/chatflow-service.js';
import { requireApp } from '../auth.js';
import { requireJson } from '../json-body.js';
import { callerUser } from '../request-user.js';
import { requestOrigin } from '../file-reply.js';

/** The runtime members these routes use (server.ts hands them nothing else). */
export type ConversationRouteDeps = Pick<Runtime, 'chatflow' | 'config' | 'endUsers' | 'runs'>;

/** App modes the chat routes serve. */
export const CHAT_MODES: ReadonlySet<string> = new Set(['chat', 'agent-chat', 'advanced-chat']);

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

const ConversationParams = Type.Object({ conversation_id: Type.String() });
const RenameBody = Type.Object({
  name: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  auto_generate: Type.Optional(Type.Boolean({ default: false })),
  user: Type.Optional(Type.String()),
});
const DeleteBody = Type.Object({ user: Type.Optional(Type.String()) });
const VariablesQuery = Type.Object({
  user: Type.Optional(Type.String()),
  last_id: Type.Optional(Type.String()),
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 20 }),
  variable_name: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
});
const VariableParams = Type.Object({ conversation_id: Type.String(), variable_id: Type.String() });
/** `value` is required (TypeBox lists it): Ajv answers `value is required` before the handler runs. */
const VariableBody = Type.Object({ value: Type.Unknown(), user: Type.Optional(Type.String()) });

/** The web app's conversation list also takes Dify's `pinned` (`true`: only pinned ones, `false`: only the others). */
const WebConversationsQuery = Type.Composite([ConversationsQuery, Type.Object({ pinned: Type.Optional(Type.Boolean()) })]);

/**
 * `GET /messages`, `GET /conversations`, renaming and deleting, over the shared conversation tables.
 * With `web` (the web app's API, the end user from its passport): the list takes `pinned`, and
 * `PATCH /conversations/{id}/pin|unpin` pin; the conversation variables routes are the Service API's only.
 */
export const conversationRoutes: FastifyPluginAsync<{ runtime: ConversationRouteDeps; web?: boolean }> = async (app, { runtime, web = false }) => {
  const userFromQuery = callerUser(runtime, { from: 'query', user: 'optional' });
  const userFromBody = callerUser(runtime, { from: 'body', user: 'optional' });
  /** The app (a chat-family app, else 400 `not_chat_app`) and the caller's end user (`DEFAULT-USER` when unnamed). */
  const chatCaller = async (request: FastifyRequest) => {
    const a = requireApp(request);
    if (!CHAT_MODES.has(a.mode)) throw notChatApp();
    return { a, endUser: await request.endUser() };
  };

  app.get<{ Querystring: Static<typeof MessagesQuery> }>('/messages', { preHandler: userFromQuery, schema: { querystring: MessagesQuery } }, async (request) => {
    const { a, endUser } = await chatCaller(request);
    const origin = requestOrigin(request, runtime.config.httpServer.trustProxy);
    return runtime.chatflow.messages(a.id, endUser.id, request.query.conversation_id, request.query.first_id || undefined, request.query.limit, origin);
  });

  app.get<{ Querystring: Static<typeof WebConversationsQuery> }>(
    '/conversations',
    { preHandler: userFromQuery, schema: { querystring: web ? WebConversationsQuery : ConversationsQuery } },
    async (request) => {
      const { a, endUser } = await chatCaller(request);
      const q = request.query;
      return runtime.chatflow.conversations(a.id, endUser.id, q.last_id || undefined, q.limit, q.sort_by, web ? q.pinned : undefined);
    },
  );

  if (web) {
    for (const action of ['pin', 'unpin'] as const) {
      app.patch<{ Params: Static<typeof ConversationParams> }>(`/conversations/:conversation_id/${action}`, { preHandler: userFromQuery, schema: { params: ConversationParams } }, async (request) => {
        const { a, endUser } = await chatCaller(request);
        await runtime.chatflow.pin(a.id, endUser.id, request.params.conversation_id, action === 'pin');
        return { result: 'success' };
      });
    }
  }

  app.post<{ Params: Static<typeof ConversationParams>; Body: Static<typeof RenameBody> }>(
    '/conversations/:conversation_id/name',
    { preValidation: requireJson, preHandler: userFromBody, schema: { params: ConversationParams, body: RenameBody } },
    async (request) => {
      const { a, endUser } = await chatCaller(request);
      const { name, auto_generate } = request.body;
      return runtime.chatflow.rename(a.id, endUser.id, request.params.conversation_id, { name: name ?? undefined, autoGenerate: auto_generate === true });
    },
  );

  if (!web) registerVariableRoutes();
  function registerVariableRoutes(): void {
  app.get<{ Params: Static<typeof ConversationParams>; Querystring: Static<typeof VariablesQuery> }>(
    '/conversations/:conversation_id/variables',
    { preHandler: userFromQuery, schema: { params: ConversationParams, querystring: VariablesQuery } },
    async (request) => {
      const { a, endUser } = await chatCaller(request);
      const conv = await runtime.chatflow.conversation(a.id, endUser.id, request.params.conversation_id);
      const q = request.query;
      return runtime.runs.conversationVariables.list(conv.id, { lastId: q.last_id || undefined, limit: q.limit, name: q.variable_name });
    },
  );

  app.put<{ Params: Static<typeof VariableParams>; Body: Static<typeof VariableBody> }>(
    '/conversations/:conversation_id/variables/:variable_id',
    { preValidation: requireJson, preHandler: userFromBody, schema: { params: VariableParams, body: VariableBody } },
    async (request) => {
      const { a, endUser } = await chatCaller(request);
      const conv = await runtime.chatflow.conversation(a.id, endUser.id, request.params.conversation_id);
      return runtime.runs.conversationVariables.update(conv.id, request.params.variable_id, request.body.value);
    },
  );
  }

  app.delete<{ Params: Static<typeof ConversationParams>; Body: Static<typeof DeleteBody> }>(
    '/conversations/:conversation_id',
    { preValidation: requireJson, preHandler: userFromBody, schema: { params: ConversationParams, body: DeleteBody } },
    async (request, reply) => {
      const { a, endUser } = await chatCaller(request);
      await runtime.chatflow.delete(a.id, endUser.id, request.params.conversation_id);
      return reply.code(204).send();
    },
  );
};
