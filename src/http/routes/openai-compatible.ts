import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import type { Runtime } from '../../runtime.js';
import { DEFAULT_USER } from '../../apps/end-users.js';
import type { AppAnswers } from '../../publish/openai-chat.js';
import { chunk, completionBody, openAiError, readMessages, type AnswerIds, type ChatCompletionRequest } from '../../publish/openai-wire.js';
import { toErrorBody } from '../errors.js';
import { requireApp } from '../auth.js';
import { requireJson } from '../json-body.js';
import { openSse, type SseStream } from '../sse.js';

/** The runtime members these routes use (server.ts hands them nothing else). */
export type OpenAiRouteDeps = Pick<Runtime, 'appAnswers' | 'config'>;

/** Headers that name the end user when the body's `user` does not (Open WebUI's when it forwards user info). */
const USER_HEADERS = ['x-dovetail-user', 'x-openwebui-user-id'] as const;

const Content = Type.Union([Type.String(), Type.Array(Type.Unknown()), Type.Null()]);
const ChatCompletionBody = Type.Object(
  {
    model: Type.String({ minLength: 1 }),
    messages: Type.Array(Type.Object({ role: Type.String(), content: Type.Optional(Content) }, { additionalProperties: true }), { minItems: 1 }),
    stream: Type.Optional(Type.Union([Type.Boolean(), Type.Null()])),
    stream_options: Type.Optional(Type.Union([Type.Object({ include_usage: Type.Optional(Type.Boolean()) }, { additionalProperties: true }), Type.Null()])),
    user: Type.Optional(Type.String()),
    conversation_id: Type.Optional(Type.Union([Type.String(), Type.Null()])),
    inputs: Type.Optional(Type.Object({}, { additionalProperties: true })),
  },
  { additionalProperties: true },
);

/** The end user: the body's `user`, else a user header, else Dify's `DEFAULT-USER`. */
function endUserOf(request: FastifyRequest<{ Body: ChatCompletionRequest }>): string {
  if (request.body.user) return request.body.user;
  for (const h of USER_HEADERS) {
    const v = request.headers[h];
    if (typeof v === 'string' && v.trim()) return v.trim();
  }
  return DEFAULT_USER;
}

/**
 * Dovetail's OpenAI-compatible endpoint (docs/openai-compatible.md): `POST /chat/completions` and
 * `GET /models` with an app key, for chat, agent-chat, chatflow and completion apps. Errors leave in
 * OpenAI's envelope `{"error": {message, type, param, code}}`. No Dify route changes.
 */
export const openAiCompatibleRoutes: FastifyPluginAsync<{ runtime: OpenAiRouteDeps }> = async (app, { runtime }) => {
  const answers = runtime.appAnswers;

  app.setErrorHandler((err, request, reply) => {
    const { body, headers } = toErrorBody(err);
    if (body.status >= 500) request.log.error({ err, reqId: request.id }, 'unhandled error');
    if (reply.sent || reply.raw.headersSent) return;
    void reply.code(body.status).headers(headers).type('application/json').send(openAiError(body));
  });

  app.get('/models', async (request) => {
    const a = requireApp(request);
    return { object: 'list', data: [{ id: a.name, object: 'model', created: Math.floor(a.createdAt / 1000), owned_by: 'dovetail' }] };
  });

  app.post<{ Body: ChatCompletionRequest }>('/chat/completions', { preValidation: requireJson, schema: { body: ChatCompletionBody } }, async (request, reply) => {
    const a = requireApp(request);
    const body = request.body;
    const { query, previous } = readMessages(body.messages);
    const ask = { app: a, user: endUserOf(request), query, previous, inputs: body.inputs ?? {}, conversationId: body.conversation_id ?? undefined };
    if (!body.stream) {
      const started = await answers.ask(ask);
      const outcome = await started.done;
      if (outcome.error) throw outcome.error;
      return reply.type('application/json').send(completionBody({ ...started, model: body.model }, outcome.answer, outcome.usage));
    }
    return streamAnswer(reply, runtime, body, (sink, signal) => answers.ask(ask, sink, signal));
  });
};

/**
 * Streams an answer as OpenAI's chunks: the assistant role, the text as it comes, the finish
 * reason, with `stream_options.include_usage` the usage chunk, then `data: [DONE]`. An error after
 * the stream opened is an `{"error": …}` frame (OpenAI's clients raise it). Text that arrives
 * before the stream opens (a refusal throws before either) waits for it.
 */
async function streamAnswer(
  reply: FastifyReply,
  runtime: Pick<Runtime, 'config'>,
  body: ChatCompletionRequest,
  start: AnswerStart,
): Promise<FastifyReply> {
  const includeUsage = body.stream_options?.include_usage === true;
  const early: string[] = [];
  let send: ((text: string) => void) | undefined;
  const abort = new AbortController();
  const started = await start((text) => (send ? send(text) : early.push(text)), abort.signal);
  const ids: AnswerIds = { ...started, model: body.model };
  const sse: SseStream = openSse(reply, {
    pingIntervalMs: runtime.config.ssePingIntervalMs,
    pingFrame: ': ping\n\n',
    closingFrame: 'data: [DONE]\n\n',
    flushEachFrame: true,
    maxBufferedBytes: runtime.config.httpServer.sseMaxBufferedBytes,
  });
  reply.raw.once('close', () => abort.abort());
  sse.send(chunk(ids, { delta: { role: 'assistant', content: '' } }, includeUsage));
  send = (text) => void (text && sse.send(chunk(ids, { delta: { content: text } }, includeUsage)));
  for (const text of early.splice(0)) send(text);
  const outcome = await started.done;
  if (outcome.error) {
    sse.end(openAiError(toErrorBody(outcome.error).body));
    return reply;
  }
  sse.send(chunk(ids, { delta: {}, finishReason: 'stop' }, includeUsage));
  if (includeUsage) sse.send(chunk(ids, { usage: outcome.usage }, includeUsage));
  sse.end();
  return reply;
}

type AnswerStart = (sink: (text: string) => void, signal: AbortSignal) => ReturnType<AppAnswers['ask']>;
