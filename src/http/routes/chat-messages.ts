import type { FastifyPluginAsync } from 'fastify';
import { Type, type Static } from '@sinclair/typebox';
import type { Runtime } from '../../runtime.js';
import { notChatApp } from '../../apps/errors.js';
import { requireApp } from '../auth.js';
import { requireJson } from '../json-body.js';
import { callerUser, requireCaller } from '../request-user.js';
import { ChatBody } from '../generators/chat-request.js';
import { chatGenerators, chatStoppers } from '../generators/chat-generators.js';

/** The runtime members these routes use (server.ts hands them nothing else). */
export type ChatMessageRouteDeps = Pick<Runtime, 'chatflow' | 'completions' | 'config' | 'endUsers' | 'moderation' | 'runs'>;

const StopBody = Type.Object({ user: Type.Optional(Type.Unknown()) });
const TaskParams = Type.Object({ task_id: Type.String() });

/**
 * `POST /chat-messages` and `POST /chat-messages/{task_id}/stop`: the app's mode picks the
 * generator (chat, agent-chat, advanced-chat); an app of another mode is not a chat app.
 */
export const chatMessageRoutes: FastifyPluginAsync<{ runtime: ChatMessageRouteDeps }> = async (app, { runtime }) => {
  const generators = chatGenerators(runtime);
  const stoppers = chatStoppers(runtime);
  const userFromBody = callerUser(runtime, { from: 'body', user: 'required' });

  app.post<{ Body: ChatBody }>('/chat-messages', { preValidation: requireJson, preHandler: userFromBody, schema: { body: ChatBody } }, async (request, reply) => {
    const a = requireApp(request);
    const generate = generators[a.mode];
    if (!generate) throw notChatApp();
    return generate({ app: a, user: requireCaller(request), endUser: request.endUser, body: request.body, streaming: request.body.response_mode === 'streaming', reply });
  });

  app.post<{ Params: Static<typeof TaskParams>; Body: Static<typeof StopBody> }>(
    '/chat-messages/:task_id/stop',
    { preValidation: requireJson, preHandler: userFromBody, schema: { params: TaskParams, body: StopBody } },
    async (request) => {
      const a = requireApp(request);
      const stop = stoppers[a.mode];
      if (!stop) throw notChatApp();
      await stop({ app: a, user: requireCaller(request), findEndUser: request.findEndUser, taskId: request.params.task_id });
      return { result: 'success' };
    },
  );
};
