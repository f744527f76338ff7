import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import type { CompletionEvent, CompletionOutcome, CompletionRun, CompletionSink } from '../../messages/completion-service.js';
import type { Runtime } from '../../runtime.js';
import { toSeconds } from '../../infra/clock.js';
import { requireApp } from '../auth.js';
import { requireJson } from '../json-body.js';
import { userArg } from '../request-user.js';
import { openSse, type SseStream } from '../sse.js';
import { afterArrivals } from '../../infra/after-arrivals.js';

/** The runtime members these routes use (server.ts hands them nothing else). */
export type CompletionRouteDeps = Pick<Runtime, 'completions' | 'config'>;

const FileRef = Type.Object({
  type: Type.Optional(Type.String()),
  transfer_method: Type.String({ enum: ['remote_url', 'local_file'] }),
  url: Type.Optional(Type.String()),
  upload_file_id: Type.Optional(Type.String()),
});

const CompletionBody = Type.Object({
  inputs: Type.Object({}, { additionalProperties: true }),
  query: Type.String({ default: '' }),
  response_mode: Type.Optional(Type.Unsafe<'blocking' | 'streaming' | null>({ type: ['string', 'null'], enum: ['blocking', 'streaming', null] })),
  user: Type.Optional(Type.String()),
  files: Type.Optional(Type.Union([Type.Array(FileRef), Type.Null()])),
});
type CompletionBody = {
  inputs: Record<string, unknown>;
  query: string;
  response_mode?: 'blocking' | 'streaming' | null;
  user?: string;
  files?: unknown[] | null;
};

const StopBody = Type.Object({ user: Type.Optional(Type.String()) });
const SuccessResult = Type.Object({ result: Type.String() });

/**
 * Dify's chunk shapes, keys in Dify's order; chat apps' chunks also carry `conversation_id`.
 * Agent-chat apps send their text as `agent_message` and their rounds as `agent_thought`; output
 * moderation's replacements are `message_replace` (`answer`, `reason`).
 */
function frame(run: CompletionRun & { conversationId?: string }, ev: Exclude<CompletionEvent, { type: 'sent' }>): Record<string, unknown> {
  const event = ev.type === 'end' ? 'message_end' : ev.type === 'thought' ? 'agent_thought' : ev.type === 'replace' ? 'message_replace' : ev.agent ? 'agent_message' : 'message';
  const base = {
    event,
    ...(run.conversationId !== undefined ? { conversation_id: run.conversationId } : {}),
    message_id: run.messageId,
    created_at: toSeconds(run.createdAt),
  };
  if (ev.type === 'message') return { ...base, task_id: run.taskId, id: run.messageId, answer: ev.text };
  if (ev.type === 'thought') return { ...base, task_id: run.taskId, ...ev.thought };
  if (ev.type === 'replace') return { ...base, task_id: run.taskId, answer: ev.text, reason: ev.reason };
  const { outcome } = ev;
  if (outcome.status === 'error' && outcome.error) {
    return { ...base, event: 'error', code: outcome.error.code, status: outcome.error.status, message: outcome.error.message };
  }
  const metadata = run.conversationId !== undefined ? chatMetadata(outcome) : { usage: outcome.usage };
  return { ...base, task_id: run.taskId, id: run.messageId, metadata, files: null };
}

/** A chat answer's `metadata`: usage, retriever resources and, for an annotation reply, `annotation_reply`. */
export function chatMetadata(outcome: CompletionOutcome): Record<string, unknown> {
  return { usage: outcome.usage, retriever_resources: [], ...(outcome.annotationReply ? { annotation_reply: outcome.annotationReply } : {}) };
}

/**
 * Answers a generation as Dify does: blocking → the `message` body (with `extra` fields), streaming
 * → an event stream of `message` chunks ending with `message_end` (or `error`).
 */
export async function replyWithGeneration<R extends CompletionRun & { conversationId?: string }>(
  reply: FastifyReply,
  runtime: Pick<Runtime, 'config'>,
  streaming: boolean,
  start: (sink?: CompletionSink) => Promise<R>,
  blockingBody: (run: R, outcome: CompletionOutcome) => Record<string, unknown>,
): Promise<unknown> {
  if (!streaming) {
    const run = await start();
    const outcome = await run.done;
    if (outcome.status === 'error' && outcome.error) throw outcome.error;
    return reply.type('application/json').send(blockingBody(run, outcome));
  }
  // The stream opens once the model request is on its way (headers sent in the first turn of the
  // event loop that brings no new request, so a burst's arrivals send their model requests first;
  // on a quiet server that is the next turn), or with the first frame: nothing but the upstream
  // request is on the path to the first token. Events that arrive before `start` has returned
  // (none in practice) wait here.
  let sse: SseStream | undefined;
  let run: R | undefined;
  const early: CompletionEvent[] = [];
  const open = (flush: boolean) =>
    (sse ??= openSse(reply, { pingIntervalMs: runtime.config.ssePingIntervalMs, headersWithFirstFrame: !flush, flushEachFrame: true, maxBufferedBytes: runtime.config.httpServer.sseMaxBufferedBytes }));
  const deliver = (ev: CompletionEvent) => {
    if (!run) return void early.push(ev);
    if (ev.type === 'sent') return void afterArrivals(() => open(true));
    const stream = open(false);
    if (ev.type === 'end') stream.end(frame(run, ev));
    else stream.send(frame(run, ev));
  };
  run = await start(deliver);
  for (const ev of early.splice(0)) deliver(ev);
  await run.done;
  return reply;
}

/** A completion app's blocking answer (Dify's `message` body), for `POST /completion-messages` and the web app's more-like-this. */
export function completionBody(run: CompletionRun, outcome: CompletionOutcome): Record<string, unknown> {
  return {
    event: 'message',
    task_id: run.taskId,
    id: run.messageId,
    message_id: run.messageId,
    mode: 'completion',
    answer: outcome.answer,
    metadata: { usage: outcome.usage },
    created_at: toSeconds(run.createdAt),
  };
}

/** `POST /completion-messages` (blocking or streaming) and `POST /completion-messages/{task_id}/stop`. */
export const completionRoutes: FastifyPluginAsync<{ runtime: CompletionRouteDeps }> = async (app, { runtime }) => {
  app.post<{ Body: CompletionBody }>('/completion-messages', { preValidation: requireJson, schema: { body: CompletionBody } }, async (request, reply) => {
    const body = request.body;
    const input = { app: requireApp(request), user: userArg(request, body.user), inputs: body.inputs, query: body.query ?? '', files: body.files ?? null };
    return replyWithGeneration(reply, runtime, body.response_mode === 'streaming', (sink) => runtime.completions.start(input, sink), completionBody);
  });

  app.post<{ Params: { task_id: string }; Body: { user?: string } }>(
    '/completion-messages/:task_id/stop',
    { preValidation: requireJson, schema: { body: StopBody, response: { 200: SuccessResult } } },
    async (request) => {
      await runtime.completions.stop(requireApp(request), request.params.task_id, userArg(request, request.body.user));
      return { result: 'success' };
    },
  );
};
