import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { Type, type Static } from '@sinclair/typebox';
import type { Runtime } from '../../runtime.js';
import { moreLikeThisDisabled, notCompletionApp } from '../../apps/errors.js';
import { appFeatures } from '../../apps/parameters.js';
import { notFound } from '../../infra/errors.js';
import { objectOf } from '../../infra/objects.js';
import { requireApp } from '../auth.js';
import { requestOrigin } from '../file-reply.js';
import { completionBody, replyWithGeneration } from './completion.js';

/** The runtime members these routes use (server.ts hands them nothing else). */
export type WebCompletionRouteDeps = Pick<Runtime, 'completions' | 'config' | 'messages' | 'savedMessages'>;

const MessageParams = Type.Object({ message_id: Type.String() });
const MoreLikeThisQuery = Type.Object({ response_mode: Type.Union([Type.Literal('blocking'), Type.Literal('streaming')]) });
const SavedQuery = Type.Object({ last_id: Type.Optional(Type.String()), limit: Type.Integer({ minimum: 1, maximum: 100, default: 20 }) });
const SaveBody = Type.Object({ message_id: Type.String({ minLength: 1 }) });

/** The passport's completion app and end user (another mode: Dify's 400 `not_completion_app`). */
function completionCaller(request: FastifyRequest) {
  const a = requireApp(request);
  if (a.mode !== 'completion') throw notCompletionApp();
  return { a, endUser: request.passport! };
}

/**
 * The web app's text-generator routes: `GET /messages/{id}/more-like-this` (the end user's answer
 * generated again from its inputs, as a new message, when the app turns `more_like_this` on) and
 * saved messages (`GET|POST /saved-messages`, `DELETE /saved-messages/{message_id}`).
 */
export const webCompletionRoutes: FastifyPluginAsync<{ runtime: WebCompletionRouteDeps }> = async (app, { runtime }) => {
  app.get<{ Params: Static<typeof MessageParams>; Querystring: Static<typeof MoreLikeThisQuery> }>(
    '/messages/:message_id/more-like-this',
    { schema: { params: MessageParams, querystring: MoreLikeThisQuery } },
    async (request, reply) => {
      const { a, endUser } = completionCaller(request);
      if (objectOf(appFeatures(a).more_like_this).enabled !== true) throw moreLikeThisDisabled();
      const m = await runtime.messages.findOwned(request.params.message_id, a.id, endUser.id);
      if (!m) throw notFound('Message Not Exists.');
      const input = { app: a, user: endUser.sessionId, inputs: m.inputs, query: m.query, files: m.files };
      return replyWithGeneration(reply, runtime, request.query.response_mode === 'streaming', (sink) => runtime.completions.start(input, sink), completionBody);
    },
  );

  app.get<{ Querystring: Static<typeof SavedQuery> }>('/saved-messages', { schema: { querystring: SavedQuery } }, async (request) => {
    const { a, endUser } = completionCaller(request);
    const origin = requestOrigin(request, runtime.config.httpServer.trustProxy);
    return runtime.savedMessages.list(a.id, endUser.id, request.query.last_id || undefined, request.query.limit, origin);
  });

  app.post<{ Body: Static<typeof SaveBody> }>('/saved-messages', { schema: { body: SaveBody } }, async (request) => {
    const { a, endUser } = completionCaller(request);
    await runtime.savedMessages.save(a.id, endUser.id, request.body.message_id);
    return { result: 'success' };
  });

  app.delete<{ Params: Static<typeof MessageParams> }>('/saved-messages/:message_id', { schema: { params: MessageParams } }, async (request, reply) => {
    const { a, endUser } = completionCaller(request);
    await runtime.savedMessages.remove(a.id, endUser.id, request.params.message_id);
    return reply.code(204).send();
  });
};
