import { Type, type Static } from '@sinclair/typebox';
import type { FastifyPluginAsync } from 'fastify';
import type { Runtime } from '../../runtime.js';
import { requireApp } from '../auth.js';
import { userArg } from '../request-user.js';

/** The runtime members these routes use (server.ts hands them nothing else). */
export type SuggestedQuestionRouteDeps = Pick<Runtime, 'suggestedQuestions'>;

const SuggestedParams = Type.Object({ message_id: Type.String() });
const SuggestedQuery = Type.Object({ user: Type.Optional(Type.String()) });
const SuggestedResponse = Type.Object({ result: Type.String(), data: Type.Array(Type.String()) });

/** `GET /messages/{message_id}/suggested` (the web app's: `…/suggested-questions`): follow-up questions after a chat answer. */
export const suggestedQuestionRoutes: FastifyPluginAsync<{ runtime: SuggestedQuestionRouteDeps; web?: boolean }> = async (app, { runtime, web = false }) => {
  app.get<{ Params: Static<typeof SuggestedParams>; Querystring: Static<typeof SuggestedQuery> }>(
    web ? '/messages/:message_id/suggested-questions' : '/messages/:message_id/suggested',
    { schema: { params: SuggestedParams, querystring: SuggestedQuery, response: { 200: SuggestedResponse } } },
    async (request) => {
      const data = await runtime.suggestedQuestions.suggest(requireApp(request), request.params.message_id, userArg(request, request.query.user));
      return { result: 'success', data };
    },
  );
};
