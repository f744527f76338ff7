import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsync } from 'fastify';
import type { CompletionEvent, CompletionRun } from '../../messages/completion-service.js';
import type { Runtime } from '../../runtime.js';
import { toSeconds } from '../../infra/clock.js';
import { requireApp } from '../auth.js';
import { requireJson } from '../json-body.js';
import { openSse, type SseStream } from '../sse.js';

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

/** Dify's chunk shapes, keys in Dify's order. */
function frame(run: CompletionRun, ev: CompletionEvent): Record<string, unknown> {
  const created = toSeconds(run.createdAt);
  if (ev.type === 'message') {
    return { event: 'message', message_id: run.messageId, created_at: created, task_id: run.taskId, id: run.messageId, answer: ev.text };
  }
  const { outcome } = ev;
  if (outcome.status === 'error' && outcome.error) {
    return { event: 'error', message_id: run.messageId, created_at: created, code: outcome.error.code, status: outcome.error.status, message: outcome.error.message };
  }
  return { event: 'message_end', message_id: run.messageId, created_at: created, task_id: run.taskId, id: run.messageId, metadata: { usage: outcome.usage }, files: null };
}

/** `POST /completion-messages` (blocking or streaming) and `POST /completion-messages/{task_id}/stop`. */
export const completionRoutes: FastifyPluginAsync<{ runtime: Runtime }> = async (app, { runtime }) => {
  app.post<{ Body: CompletionBody }>('/completion-messages', { preValidation: requireJson, schema: { body: CompletionBody } }, async (request, reply) => {
    const a = requireApp(request);
    const body = request.body;
    const input = { app: a, user: body.user, inputs: body.inputs, query: body.query ?? '', files: body.files ?? null };
    if (body.response_mode !== 'streaming') {
      const run = await runtime.completions.start(input);
      const outcome = await run.done;
      if (outcome.status === 'error' && outcome.error) throw outcome.error;
      return reply.type('application/json').send({
        event: 'message',
        task_id: run.taskId,
        id: run.messageId,
        message_id: run.messageId,
        mode: 'completion',
        answer: outcome.answer,
        metadata: { usage: outcome.usage },
        created_at: toSeconds(run.createdAt),
      });
    }
    // Events that arrive before the stream is open (none in practice) wait here.
    let sse: SseStream | undefined;
    let run: CompletionRun | undefined;
    const early: CompletionEvent[] = [];
    const deliver = (ev: CompletionEvent) => {
      if (!sse || !run) return void early.push(ev);
      sse.send(frame(run, ev));
      if (ev.type === 'end') sse.end();
    };
    run = await runtime.completions.start(input, deliver);
    sse = openSse(reply, { pingIntervalMs: runtime.config.ssePingIntervalMs });
    for (const ev of early.splice(0)) deliver(ev);
    await run.done;
  });

  app.post<{ Params: { task_id: string }; Body: { user?: string } }>(
    '/completion-messages/:task_id/stop',
    { preValidation: requireJson, schema: { body: StopBody, response: { 200: SuccessResult } } },
    async (request) => {
      await runtime.completions.stop(requireApp(request), request.params.task_id, request.body.user);
      return { result: 'success' };
    },
  );
};
