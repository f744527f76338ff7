import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import type { AnnotationAnswer } from '../../runs/chatflow-service.js';
import { openSse } from '../sse.js';
import { Type, type Static } from '@sinclair/typebox';
import type { Runtime } from '../../runtime.js';
import { notChatApp } from '../../apps/errors.js';
import { validateInputs } from '../../apps/input-form.js';
import { completionRequestError } from '../../runs/errors.js';
import { requireApp } from '../auth.js';
import { requireJson } from '../json-body.js';
import { streamRun } from '../run-stream.js';
import { toSeconds } from '../../infra/clock.js';
import { chatMetadata, replyWithGeneration } from './completion.js';
import { CHAT_MODES } from './conversations.js';
import { requireUser } from '../user-arg.js';
import { pauseReasons, usageOf } from '../../runs/frames.js';
import type { RunEnd } from '../../runs/run-types.js';
import { invalidParam } from '../../infra/errors.js';

/** The runtime members these routes use (server.ts hands them nothing else). */
export type ChatMessageRouteDeps = Pick<Runtime, 'chatflow' | 'completions' | 'config' | 'endUsers' | 'runs'>;

const ChatBody = Type.Object({
  query: Type.String(),
  inputs: Type.Object({}, { additionalProperties: true }),
  response_mode: Type.Optional(Type.Union([Type.Literal('blocking'), Type.Literal('streaming'), Type.Null()])),
  conversation_id: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  user: Type.Optional(Type.Unknown()),
  files: Type.Optional(Type.Union([Type.Array(Type.Unknown()), Type.Null()])),
  auto_generate_name: Type.Optional(Type.Boolean()),
  workflow_id: Type.Optional(Type.Union([Type.String(), Type.Null()], { description: 'Accepted and not used: an app has one published workflow.' })),
});
const StopBody = Type.Object({ user: Type.Optional(Type.Unknown()) });
const TaskParams = Type.Object({ task_id: Type.String() });

/**
 * A chatflow answered by an annotation, as Dify: no workflow events; streaming sends the answer in
 * one `message` event and then `message_end` with `metadata.annotation_reply`.
 */
function replyWithAnnotation(reply: FastifyReply, runtime: Pick<Runtime, 'config'>, streaming: boolean, a: AnnotationAnswer): FastifyReply {
  const metadata = { usage: a.usage, retriever_resources: [], annotation_reply: a.annotationReply };
  const created_at = toSeconds(a.createdAt);
  if (!streaming) {
    return reply.type('application/json').send({
      event: 'message',
      task_id: a.taskId,
      id: a.messageId,
      message_id: a.messageId,
      conversation_id: a.conversationId,
      mode: 'advanced-chat',
      answer: a.answer,
      metadata,
      created_at,
    });
  }
  const base = { conversation_id: a.conversationId, message_id: a.messageId, created_at };
  const sse = openSse(reply, { pingIntervalMs: runtime.config.ssePingIntervalMs });
  sse.send({ event: 'message', ...base, task_id: a.taskId, id: a.messageId, answer: a.answer });
  sse.end({ event: 'message_end', ...base, task_id: a.taskId, id: a.messageId, metadata, files: null });
  return reply;
}

/** `POST /chat-messages` and `POST /chat-messages/{task_id}/stop` for chat, agent-chat and chatflow (advanced-chat) apps. */
export const chatMessageRoutes: FastifyPluginAsync<{ runtime: ChatMessageRouteDeps }> = async (app, { runtime }) => {
  app.post<{ Body: Static<typeof ChatBody> }>('/chat-messages', { preValidation: requireJson, schema: { body: ChatBody } }, async (request, reply) => {
    const a = requireApp(request);
    const user = requireUser(request.body.user);
    const body = request.body;
    if (a.mode === 'chat' || a.mode === 'agent-chat') {
      // Dify's AgentChatAppGenerator answers only streaming requests (a ValueError: 400 invalid_param)
      if (a.mode === 'agent-chat' && body.response_mode !== 'streaming') throw invalidParam('Agent Chat App does not support blocking mode');
      const input = { app: a, user, inputs: body.inputs, query: body.query, files: body.files ?? null, conversationId: body.conversation_id ?? undefined };
      return replyWithGeneration(
        reply,
        runtime,
        body.response_mode === 'streaming',
        (sink) => runtime.completions.startChat(input, sink),
        (run, outcome) => ({
          event: 'message',
          task_id: run.taskId,
          id: run.messageId,
          message_id: run.messageId,
          conversation_id: run.conversationId,
          mode: 'chat',
          answer: outcome.answer,
          metadata: chatMetadata(outcome),
          created_at: toSeconds(run.createdAt),
        }),
      );
    }
    if (a.mode !== 'advanced-chat') throw notChatApp();
    // A conversation keeps the inputs it started with; later requests' inputs are ignored (as Dify).
    const continuing = Boolean(body.conversation_id?.trim());
    const inputs = continuing ? {} : validateInputs(a.inputs, body.inputs);
    const endUser = await runtime.endUsers.getOrCreate(a.id, user);
    const annotated = await runtime.chatflow.answerFromAnnotation({
      app: a,
      endUserId: endUser.id,
      query: request.body.query,
      inputs,
      conversationId: request.body.conversation_id ?? undefined,
      files: request.body.files ?? [],
    });
    if (annotated) return replyWithAnnotation(reply, runtime, request.body.response_mode === 'streaming', annotated);
    const m = await runtime.chatflow.send({
      app: a,
      endUserId: endUser.id,
      user,
      query: request.body.query,
      inputs,
      conversationId: request.body.conversation_id ?? undefined,
      files: request.body.files ?? [],
    });
    if (request.body.response_mode === 'streaming') return streamRun(reply, runtime, m.run.runId, { afterSeq: 0 });
    const end = await m.run.done;
    const msg = (await runtime.chatflow.message(m.messageId))!;
    const run = (await runtime.runs.find(m.run.runId))!;
    if (run.status === 'failed') throw completionRequestError(run.error ?? '');
    if (end?.status === 'paused' && run.status === 'paused') return reply.type('application/json').send(chatPausedBody(m, end));
    return reply.type('application/json').send({
      event: 'message',
      task_id: m.run.taskId,
      id: m.messageId,
      message_id: m.messageId,
      conversation_id: m.conversationId,
      mode: 'advanced-chat',
      answer: msg.answer,
      metadata: {
        usage: msg.usage,
        retriever_resources: [],
      },
      created_at: Math.floor(m.createdAt / 1000),
    });
  });

  app.post<{ Params: Static<typeof TaskParams>; Body: Static<typeof StopBody> }>(
    '/chat-messages/:task_id/stop',
    { preValidation: requireJson, schema: { params: TaskParams, body: StopBody } },
    async (request) => {
      const a = requireApp(request);
      const user = requireUser(request.body.user);
      if (!CHAT_MODES.has(a.mode)) throw notChatApp();
      if (a.mode === 'chat' || a.mode === 'agent-chat') {
        await runtime.completions.stop(a, request.params.task_id, user, a.mode);
        return { result: 'success' };
      }
      const endUser = await runtime.endUsers.find(a.id, user);
      // Dify: only the user who started the task can stop it; anyone else silently gets success
      if (endUser) await runtime.runs.stopTask(a.id, request.params.task_id, { endUserId: endUser.id });
      return { result: 'success' };
    },
  );
};

/**
 * Dify's `ChatPausedBlockingResponse`: the message so far, and in `data` the pause with its
 * reasons (each human-input reason carries the `form_token` to submit the form with).
 */
function chatPausedBody(m: { messageId: string; conversationId: string; createdAt: number; run: { runId: string; taskId: string } }, end: RunEnd): Record<string, unknown> {
  const message = {
    id: m.messageId,
    mode: 'advanced-chat',
    conversation_id: m.conversationId,
    message_id: m.messageId,
    workflow_run_id: m.run.runId,
    answer: end.state.answer,
    metadata: { usage: usageOf(end.state), retriever_resources: [] },
    created_at: Math.floor(m.createdAt / 1000),
  };
  return {
    event: 'workflow_paused',
    task_id: m.run.taskId,
    id: m.messageId,
    message_id: m.messageId,
    conversation_id: m.conversationId,
    mode: 'advanced-chat',
    answer: message.answer,
    metadata: message.metadata,
    created_at: message.created_at,
    workflow_run_id: m.run.runId,
    data: {
      ...message,
      paused_nodes: end.state.paused.map((r) => r.node_id),
      reasons: pauseReasons(end.state.paused),
      status: 'paused',
      elapsed_time: end.elapsedMs / 1000,
      total_tokens: end.state.tokens,
      total_steps: end.state.steps,
    },
  };
}
