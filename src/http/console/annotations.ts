import { Type, type Static } from '@sinclair/typebox';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { Readable } from 'node:stream';
import type { Annotation, HitHistory, ReplyStatus } from '../../annotations/annotation-service.js';
import type { App } from '../../apps/app-service.js';
import { invalidParam, notFound } from '../../infra/errors.js';
import type { Runtime } from '../../runtime.js';
import { multipartRoutes, readFileForm } from '../multipart-upload.js';
import { consoleMember, requireRole } from './console-auth.js';

/** The runtime members these routes use. */
export type ConsoleAnnotationDeps = Pick<Runtime, 'apps' | 'annotations'>;

const toSeconds = (ms: number) => Math.floor(ms / 1000);

/** An annotation in the console (Dify's `annotation_fields`). */
function annotationItem(a: Annotation): Record<string, unknown> {
  return { id: a.id, question: a.question, answer: a.answer, hit_count: a.hitCount, created_at: toSeconds(a.createdAt) };
}

/** A hit (Dify's `annotation_hit_history_fields`, with the message it answered). */
function hitItem(h: HitHistory): Record<string, unknown> {
  return { id: h.id, source: h.source, score: h.score, question: h.question, match: h.annotationQuestion, response: h.annotationContent, message_id: h.messageId, created_at: toSeconds(h.createdAt) };
}

function statusItem(s: ReplyStatus, models: { provider: string; model: string }[]): Record<string, unknown> {
  return {
    enabled: s.enabled,
    score_threshold: s.scoreThreshold,
    embedding_model: s.enabled ? { embedding_provider_name: s.provider, embedding_model_name: s.model } : null,
    job: s.job && { job_id: s.job.id, action: s.job.action, job_status: s.job.status, error_msg: s.job.errorMsg },
    progress: { embedded: s.embedded, total: s.total },
    embedding_models: models.map((m) => ({ embedding_provider_name: m.provider, embedding_model_name: m.model })),
  };
}

const AppParams = Type.Object({ app_id: Type.String({ maxLength: 64 }) });
const AnnotationParams = Type.Object({ app_id: Type.String({ maxLength: 64 }), annotation_id: Type.String({ maxLength: 64 }) });
const MessageParams = Type.Object({ app_id: Type.String({ maxLength: 64 }), message_id: Type.String({ maxLength: 64 }) });
const ActionParams = Type.Object({ app_id: Type.String({ maxLength: 64 }), action: Type.String({ maxLength: 16 }) });
const ListQuery = Type.Object({
  page: Type.Integer({ minimum: 1, maximum: 100_000, default: 1 }),
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 20 }),
  keyword: Type.String({ maxLength: 255, default: '' }),
});
const PageQuery = Type.Object({ page: Type.Integer({ minimum: 1, maximum: 100_000, default: 1 }), limit: Type.Integer({ minimum: 1, maximum: 100, default: 20 }) });
const CreateBody = Type.Object({
  question: Type.Optional(Type.String()),
  answer: Type.String(),
  message_id: Type.Optional(Type.String({ maxLength: 64 })),
});
const UpdateBody = Type.Object({ question: Type.String(), answer: Type.String() });
const ReplyBody = Type.Object({
  score_threshold: Type.Number(),
  embedding_provider_name: Type.String(),
  embedding_model_name: Type.String(),
});

/** Reads the `file` part into memory, at most `max` bytes (one more says it is too large). */
async function readCapped(body: Readable, max: number): Promise<{ bytes: Buffer; tooLarge: boolean }> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > max) {
      body.resume();
      return { bytes: Buffer.alloc(0), tooLarge: true };
    }
    chunks.push(chunk);
  }
  return { bytes: Buffer.concat(chunks), tooLarge: false };
}

/**
 * An app's annotations in the console: the list with search and hit counts, create (also from a
 * message: "improve this answer"), edit, delete, hit history, CSV import and export, and the
 * annotation-reply setting with its job's progress. Viewers read; editors change.
 */
export const consoleAnnotationRoutes: FastifyPluginAsync<{ runtime: ConsoleAnnotationDeps }> = async (app, { runtime }) => {
  const { annotations } = runtime;

  /** The member's app, or 404 (another workspace's app is as if it did not exist). */
  async function appOf(request: FastifyRequest<{ Params: { app_id: string } }>): Promise<App> {
    const a = await runtime.apps.findIn(consoleMember(request).workspaceId, request.params.app_id);
    if (!a) throw notFound('App not found.');
    return a;
  }
  const editor = { preHandler: requireRole('editor') };

  app.get<{ Params: Static<typeof AppParams>; Querystring: Static<typeof ListQuery> }>(
    '/apps/:app_id/annotations',
    { schema: { params: AppParams, querystring: ListQuery } },
    async (request) => {
      const { page, limit, keyword } = request.query;
      const r = await annotations.list(await appOf(request), { page, limit, keyword: keyword.trim() });
      return { data: r.items.map(annotationItem), has_more: (page - 1) * r.perPage + r.items.length < r.total, limit: r.perPage, total: r.total, page };
    },
  );

  app.post<{ Params: Static<typeof AppParams>; Body: Static<typeof CreateBody> }>(
    '/apps/:app_id/annotations',
    { ...editor, schema: { params: AppParams, body: CreateBody } },
    async (request, reply) => {
      const a = await appOf(request);
      const b = request.body;
      const account = consoleMember(request).id;
      if (b.message_id !== undefined) {
        const made = await annotations.createFromMessage(a, { messageId: b.message_id, answer: b.answer, ...(b.question !== undefined ? { question: b.question } : {}) }, account);
        return reply.code(201).send({ ...annotationItem(made), message_id: made.messageId });
      }
      if (!b.question?.trim()) throw invalidParam('question is required');
      if (!b.answer.trim()) throw invalidParam('answer is required');
      return reply.code(201).send(annotationItem(await annotations.create(a, { question: b.question, answer: b.answer }, account)));
    },
  );

  app.get<{ Params: Static<typeof MessageParams> }>('/apps/:app_id/messages/:message_id/annotation', { schema: { params: MessageParams } }, async (request) => {
    const m = await annotations.messageToImprove(await appOf(request), request.params.message_id);
    return { message: { id: request.params.message_id, query: m.query, answer: m.answer }, annotation: m.annotation ? annotationItem(m.annotation) : null };
  });

  app.put<{ Params: Static<typeof AnnotationParams>; Body: Static<typeof UpdateBody> }>(
    '/apps/:app_id/annotations/:annotation_id',
    { ...editor, schema: { params: AnnotationParams, body: UpdateBody } },
    async (request) => {
      const b = request.body;
      if (!b.question.trim()) throw invalidParam('question is required');
      if (!b.answer.trim()) throw invalidParam('answer is required');
      return annotationItem(await annotations.update(await appOf(request), request.params.annotation_id, { question: b.question, answer: b.answer }));
    },
  );

  app.delete<{ Params: Static<typeof AnnotationParams> }>('/apps/:app_id/annotations/:annotation_id', { ...editor, schema: { params: AnnotationParams } }, async (request, reply) => {
    await annotations.delete(await appOf(request), request.params.annotation_id);
    return reply.code(204).send();
  });

  app.get<{ Params: Static<typeof AnnotationParams>; Querystring: Static<typeof PageQuery> }>(
    '/apps/:app_id/annotations/:annotation_id/hit-histories',
    { schema: { params: AnnotationParams, querystring: PageQuery } },
    async (request) => {
      const { page, limit } = request.query;
      const r = await annotations.hitHistories(await appOf(request), request.params.annotation_id, { page, limit });
      return { data: r.items.map(hitItem), has_more: (page - 1) * r.perPage + r.items.length < r.total, limit: r.perPage, total: r.total, page };
    },
  );

  // A link the browser follows (the session cookie, no CSRF token: it changes nothing).
  app.get<{ Params: Static<typeof AppParams> }>('/apps/:app_id/annotations/export', { schema: { params: AppParams } }, async (request, reply) => {
    const a = await appOf(request);
    const out = await annotations.exportCsv(a);
    return reply
      .type('text/csv; charset=utf-8')
      .header('content-disposition', `attachment; filename="annotations-${a.id}.csv"`)
      .header('x-annotations-exported', String(out.count))
      .header('x-annotations-total', String(out.total))
      .send(out.csv);
  });

  await multipartRoutes(app, (mp) => {
    mp.post<{ Params: Static<typeof AppParams> }>('/apps/:app_id/annotations/import', { ...editor, schema: { params: AppParams } }, async (request) => {
      const a = await appOf(request);
      const max = runtime.annotations.importMaxBytes;
      const form = await readFileForm(request, (f) => readCapped(f.body, max));
      if (!form.file) throw invalidParam('file is required (a CSV file, multipart field "file")');
      if (form.file.tooLarge) throw invalidParam(`file must be at most ${max / 1024 / 1024} MB (ANNOTATION_IMPORT_FILE_SIZE_LIMIT)`);
      return annotations.importCsv(a, form.file.bytes, consoleMember(request).id);
    });
  });

  app.get<{ Params: Static<typeof AppParams> }>('/apps/:app_id/annotation-setting', { schema: { params: AppParams } }, async (request) => {
    return statusItem(await annotations.replyStatus(await appOf(request)), annotations.embeddingModels());
  });

  app.post<{ Params: Static<typeof ActionParams>; Body: Static<typeof ReplyBody> }>(
    '/apps/:app_id/annotation-reply/:action',
    { ...editor, schema: { params: ActionParams, body: ReplyBody } },
    async (request) => {
      const b = request.body;
      const r = await annotations.startReplyJob(await appOf(request), request.params.action, { scoreThreshold: b.score_threshold, provider: b.embedding_provider_name, model: b.embedding_model_name });
      return { job_id: r.jobId, job_status: r.status };
    },
  );
};
