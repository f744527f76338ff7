import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsync } from 'fastify';
import { feedbackItem } from '../../feedback/feedback-service.js';
import type { Rating } from '../../feedback/feedback-store.js';
import type { Runtime } from '../../runtime.js';
import { requireApp, requireKey } from '../auth.js';
import { PAGE_MAX } from './knowledge-params.js';
import { requireJson } from '../json-body.js';
import { userArg } from '../request-user.js';

/** The runtime members these routes use (server.ts hands them nothing else). */
export type FeedbackRouteDeps = Pick<Runtime, 'config' | 'feedback'>;

const FeedbackBody = Type.Object({
  rating: Type.Optional(Type.Unsafe<Rating | null>({ type: ['string', 'null'], enum: ['like', 'dislike', null] })),
  // `type: [string, null]`, not a union: with Ajv's coerceTypes the union's string branch would
  // turn null into "" (issue 13 item 9); Dify stores the request's value, null included.
  content: Type.Optional(Type.Unsafe<string | null>({ type: ['string', 'null'] })),
  user: Type.Optional(Type.String()),
});

const Nullable = (t: ReturnType<typeof Type.String>) => Type.Union([t, Type.Null()]);
const FeedbackItem = Type.Object({
  id: Type.String(),
  app_id: Type.String(),
  conversation_id: Nullable(Type.String()),
  message_id: Type.String(),
  rating: Type.String(),
  content: Nullable(Type.String()),
  from_source: Type.String(),
  from_end_user_id: Nullable(Type.String()),
  from_account_id: Nullable(Type.String()),
  created_at: Type.String(),
  updated_at: Type.String(),
});

/** `POST /messages/{message_id}/feedbacks` and `GET /app/feedbacks`. */
export const feedbackRoutes: FastifyPluginAsync<{ runtime: FeedbackRouteDeps; web?: boolean }> = async (app, { runtime, web = false }) => {
  app.post<{ Params: { message_id: string }; Body: { rating?: Rating | null; content?: string | null; user?: string } }>(
    '/messages/:message_id/feedbacks',
    { preValidation: requireJson, schema: { body: FeedbackBody, response: { 200: Type.Object({ result: Type.String() }) } } },
    async (request) => {
      const b = request.body;
      await runtime.feedback.submit(requireApp(request), { messageId: request.params.message_id, rating: b.rating ?? null, content: b.content ?? null, user: userArg(request, b.user) });
      return { result: 'success' };
    },
  );

  // the web app's API has no list: it is for the app's owner (an app key)
  if (web) return;
  const FeedbackQuery = Type.Object({
    page: Type.Integer({ minimum: 1, maximum: PAGE_MAX, default: 1 }),
    limit: Type.Integer({ minimum: 1, maximum: runtime.config.feedbackListMaxLimit, default: 20 }),
  });
  app.get<{ Querystring: { page: number; limit: number } }>(
    '/app/feedbacks',
    { schema: { querystring: FeedbackQuery, response: { 200: Type.Object({ data: Type.Array(FeedbackItem) }) } } },
    async (request) => {
      const { page, limit } = request.query;
      const items = await runtime.feedback.list(requireApp(request), { page, limit, readerKeyId: requireKey(request).id });
      return { data: items.map(feedbackItem) };
    },
  );
};
