import type { FastifyReply } from 'fastify';
import type { Runtime } from '../../runtime.js';
import type { AnnotationAnswer, DirectAnswer } from '../../runs/chatflow-service.js';
import { startChatflowAnswer } from '../../runs/chatflow-answer.js';
import { completionRequestError, runNotPickedUp } from '../../runs/errors.js';
import { pauseReasons, usageOf } from '../../runs/frames.js';
import type { RunEnd } from '../../runs/run-types.js';
import { toSeconds } from '../../infra/clock.js';
import { answerCitations } from '../../messages/citations-wire.js';
import { openSse } from '../sse.js';
import { streamRun } from '../run-stream.js';
import type { ChatGenerator, ChatStopper } from './chat-request.js';

/** The runtime members the chatflow (advanced-chat) generator uses. */
export type ChatflowGeneratorDeps = Pick<Runtime, 'chatflow' | 'config' | 'moderation' | 'runs'>;

/**
 * `POST /chat-messages` for a chatflow (advanced-chat) app: an annotation answer if one matches,
 * else a workflow run (streamed as run events, or the blocking message / paused body).
 */
export function chatflowGenerator(runtime: ChatflowGeneratorDeps): ChatGenerator {
  return async ({ app: a, user, endUser, body, streaming, reply }) => {
    const deps = { chatflow: runtime.chatflow, moderation: runtime.moderation, maxFiles: runtime.config.upload.workflowFileUploadLimit };
    const started = await startChatflowAnswer(deps, {
      app: a,
      user,
      endUser,
      query: body.query,
      inputs: body.inputs,
      conversationId: body.conversation_id ?? undefined,
      files: body.files ?? [],
    });
    if (started.type === 'direct') return replyDirectly(reply, runtime, streaming, started.answer);
    const m = started.message;
    if (streaming) return streamRun(reply, runtime, m.run.runId, { afterSeq: 0 });
    const end = await m.run.done;
    if (end?.notPickedUp) throw runNotPickedUp(runtime.config.runs.queueWaitSeconds);
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
        retriever_resources: answerCitations(msg.retrieverResources),
      },
      created_at: toSeconds(m.createdAt),
    });
  };
}

/** Stopping a chatflow task: Dify lets only the user who started it stop it; anyone else silently gets success. */
export function chatflowStopper(runtime: Pick<Runtime, 'runs'>): ChatStopper {
  return async ({ app: a, findEndUser, taskId }) => {
    const endUser = await findEndUser();
    if (endUser) await runtime.runs.stopTask(a.id, taskId, { endUserId: endUser.id });
  };
}

/**
 * A chatflow answered by an annotation or by input moderation's preset response, as Dify: no
 * workflow events; streaming sends the answer in one `message` event and then `message_end` (an
 * annotation's with `metadata.annotation_reply`).
 */
function replyDirectly(reply: FastifyReply, runtime: Pick<Runtime, 'config'>, streaming: boolean, a: DirectAnswer | AnnotationAnswer): FastifyReply {
  const metadata = { usage: a.usage, retriever_resources: [], ...('annotationReply' in a ? { annotation_reply: a.annotationReply } : {}) };
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
    created_at: toSeconds(m.createdAt),
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
