import { Type, type Static } from '@sinclair/typebox';
import type { FastifyPluginAsync } from 'fastify';
import { annotationItem } from '../../annotations/annotation-service.js';
import type { Runtime } from '../../runtime.js';
import { requireApp } from '../auth.js';
import { PAGE_MAX } from './knowledge-params.js';
import { requireJson } from '../json-body.js';

/** The runtime members these routes use (server.ts hands them nothing else). */
export type AnnotationRouteDeps = Pick<Runtime, 'annotations'>;

const AnnotationItem = Type.Object({
  id: Type.String(),
  question: Type.Union([Type.String(), Type.Null()]),
  answer: Type.Union([Type.String(), Type.Null()]),
  hit_count: Type.Union([Type.Integer(), Type.Null()]),
  created_at: Type.Union([Type.Integer(), Type.Null()]),
});
const AnnotationBody = Type.Object({ question: Type.String(), answer: Type.String(), user: Type.Optional(Type.Unknown()) });
const ListQuery = Type.Object({
  page: Type.Integer({ minimum: 1, maximum: PAGE_MAX, default: 1 }),
  limit: Type.Integer({ minimum: 1, default: 20 }),
  keyword: Type.String({ default: '' }),
});
const ListResponse = Type.Object({ data: Type.Array(AnnotationItem), has_more: Type.Boolean(), limit: Type.Integer(), total: Type.Integer(), page: Type.Integer() });
const IdParams = Type.Object({ annotation_id: Type.String() });
const ActionParams = Type.Object({ action: Type.String() });
const StatusParams = Type.Object({ action: Type.String(), job_id: Type.String() });
const ReplyBody = Type.Object({
  score_threshold: Type.Number(),
  embedding_provider_name: Type.String(),
  embedding_model_name: Type.String(),
  user: Type.Optional(Type.Unknown()),
});
const JobResponse = Type.Object({ job_id: Type.String(), job_status: Type.String() });
const JobStatusResponse = Type.Object({ job_id: Type.String(), job_status: Type.String(), error_msg: Type.String() });

/** `/apps/annotations[/{annotation_id}]` and `/apps/annotation-reply/{action}[/status/{job_id}]`. */
export const annotationRoutes: FastifyPluginAsync<{ runtime: AnnotationRouteDeps }> = async (app, { runtime }) => {
  app.get<{ Querystring: Static<typeof ListQuery> }>('/apps/annotations', { schema: { querystring: ListQuery, response: { 200: ListResponse } } }, async (request) => {
    const { page, limit, keyword } = request.query;
    const r = await runtime.annotations.list(requireApp(request), { page, limit, keyword });
    // `limit` echoes the request, as Dify; `has_more` says whether rows lie beyond this page.
    return { data: r.items.map(annotationItem), has_more: (page - 1) * r.perPage + r.items.length < r.total, limit, total: r.total, page };
  });

  app.post<{ Body: Static<typeof AnnotationBody> }>(
    '/apps/annotations',
    { preValidation: requireJson, schema: { body: AnnotationBody, response: { 201: AnnotationItem } } },
    async (request, reply) => {
      const a = await runtime.annotations.create(requireApp(request), { question: request.body.question, answer: request.body.answer });
      return reply.code(201).send(annotationItem(a));
    },
  );

  app.put<{ Params: Static<typeof IdParams>; Body: Static<typeof AnnotationBody> }>(
    '/apps/annotations/:annotation_id',
    { preValidation: requireJson, schema: { params: IdParams, body: AnnotationBody, response: { 200: AnnotationItem } } },
    async (request) => {
      const a = await runtime.annotations.update(requireApp(request), request.params.annotation_id, { question: request.body.question, answer: request.body.answer });
      return annotationItem(a);
    },
  );

  // Dify's SDKs send DELETE with `Content-Type: application/json` and no body; Dify reads nothing from it.
  await app.register(async (scope) => {
    scope.removeContentTypeParser('application/json');
    scope.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => done(null, undefined));
    scope.delete<{ Params: Static<typeof IdParams> }>('/apps/annotations/:annotation_id', { schema: { params: IdParams } }, async (request, reply) => {
      await runtime.annotations.delete(requireApp(request), request.params.annotation_id);
      return reply.code(204).send();
    });
  });

  app.post<{ Params: Static<typeof ActionParams>; Body: Static<typeof ReplyBody> }>(
    '/apps/annotation-reply/:action',
    { preValidation: requireJson, schema: { params: ActionParams, body: ReplyBody, response: { 200: JobResponse } } },
    async (request) => {
      const b = request.body;
      const r = await runtime.annotations.startReplyJob(requireApp(request), request.params.action, {
        scoreThreshold: b.score_threshold,
        provider: b.embedding_provider_name,
        model: b.embedding_model_name,
      });
      return { job_id: r.jobId, job_status: r.status };
    },
  );

  app.get<{ Params: Static<typeof StatusParams> }>(
    '/apps/annotation-reply/:action/status/:job_id',
    { schema: { params: StatusParams, response: { 200: JobStatusResponse } } },
    async (request) => {
      const r = await runtime.annotations.jobStatus(requireApp(request), request.params.action, request.params.job_id);
      return { job_id: r.jobId, job_status: r.status, error_msg: r.errorMsg };
    },
  );
};
