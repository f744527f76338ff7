import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { Runtime } from '../../runtime.js';
import { parseChildContent, parseNewSegments, parseSegmentPatch } from '../../knowledge/documents/segment-input.js';
import { childChunkToWire, segmentToWire } from '../../knowledge/documents/segment-wire.js';
import { requireKey } from '../auth.js';
import { loadDataset, requireDataset } from '../request-dataset.js';
import { requireJson } from '../json-body.js';
import { jsonBody, pageParams } from './knowledge-params.js';
import { ChildChunkBody, ChildChunkListQuery, SegmentListQuery, SegmentUpdateBody, SegmentsCreateBody } from '../knowledge-schemas.js';

/** The runtime members these routes use (server.ts hands them nothing else). */
export type SegmentRouteDeps = Pick<Runtime, 'config' | 'datasets' | 'documents' | 'segments'>;
export type ChildChunkRouteDeps = Pick<Runtime, 'config' | 'datasets' | 'documents' | 'childChunks'>;

type PD = { dataset_id: string; document_id: string };
type PS = PD & { segment_id: string };

/** `status` of the query string: one value or several (`?status=a&status=b`), as Dify's `getlist`. */
function statusList(request: FastifyRequest): string[] {
  const v = ((request.query ?? {}) as Record<string, unknown>).status;
  if (v === undefined || v === '') return [];
  return (Array.isArray(v) ? v : [v]).filter((x): x is string => typeof x === 'string' && x !== '');
}

/** Segments of a document (knowledge keys): list, create, get, update, delete. */
export const segmentRoutes: FastifyPluginAsync<{ runtime: SegmentRouteDeps }> = async (app, { runtime }) => {
  const { documents, segments } = runtime;
  // every route here is under /datasets/:dataset_id
  app.addHook('preHandler', loadDataset(runtime));
  const k = runtime.config.knowledge;

  /** Dataset, then document, as Dify checks them (404 "Dataset not found." / "Document not found."). */
  async function target(request: FastifyRequest<{ Params: PD }>) {
    const ds = requireDataset(request);
    const doc = await documents.get(ds.id, request.params.document_id);
    return { ds, doc };
  }

  app.get<{ Params: PD }>('/datasets/:dataset_id/documents/:document_id/segments', { schema: { querystring: SegmentListQuery } }, async (request) => {
    const { doc } = await target(request);
    const { page, limit, keyword } = pageParams(request, k.pageLimitMax);
    const { items, total } = await segments.list(doc, { page, limit, keyword, status: statusList(request) });
    return { data: items.map((c) => segmentToWire(c, doc)), doc_form: doc.doc_form, has_more: page * limit < total, limit, total, page };
  });

  app.post<{ Params: PD }>('/datasets/:dataset_id/documents/:document_id/segments', { preValidation: requireJson, schema: { body: SegmentsCreateBody } }, async (request) => {
    const key = requireKey(request);
    const { ds, doc } = await target(request);
    const items = parseNewSegments(jsonBody(request), k.segmentsPerRequestMax, k.segmentMaxChars);
    const created = await segments.create(ds, doc, items, key.id);
    return { data: created.map((c) => segmentToWire(c, doc)), doc_form: doc.doc_form };
  });

  app.get<{ Params: PS }>('/datasets/:dataset_id/documents/:document_id/segments/:segment_id', async (request) => {
    const { doc } = await target(request);
    return { data: segmentToWire(await segments.get(doc, request.params.segment_id), doc), doc_form: doc.doc_form };
  });

  app.post<{ Params: PS }>('/datasets/:dataset_id/documents/:document_id/segments/:segment_id', { preValidation: requireJson, schema: { body: SegmentUpdateBody } }, async (request) => {
    const key = requireKey(request);
    const { ds, doc } = await target(request);
    const patch = parseSegmentPatch(jsonBody(request), k.segmentMaxChars);
    const updated = await segments.update(ds, doc, request.params.segment_id, patch, key.id);
    return { data: segmentToWire(updated, doc), doc_form: doc.doc_form };
  });

  app.delete<{ Params: PS }>('/datasets/:dataset_id/documents/:document_id/segments/:segment_id', async (request, reply) => {
    const { doc } = await target(request);
    await segments.delete(doc, request.params.segment_id);
    return reply.code(204).send();
  });
};

type PC = PS & { child_chunk_id: string };

/** Child chunks of a parent chunk (knowledge keys): list, create, update (PATCH), delete. */
export const childChunkRoutes: FastifyPluginAsync<{ runtime: ChildChunkRouteDeps }> = async (app, { runtime }) => {
  const { documents, childChunks } = runtime;
  app.addHook('preHandler', loadDataset(runtime));
  const k = runtime.config.knowledge;
  const base = '/datasets/:dataset_id/documents/:document_id/segments/:segment_id/child_chunks';

  async function target(request: FastifyRequest<{ Params: PS }>) {
    const ds = requireDataset(request);
    const doc = await documents.get(ds.id, request.params.document_id);
    return { ds, doc };
  }

  app.get<{ Params: PS }>(base, { schema: { querystring: ChildChunkListQuery } }, async (request) => {
    const { doc } = await target(request);
    const { page, limit, keyword } = pageParams(request, k.pageLimitMax);
    const { rows, total } = await childChunks.list(doc, request.params.segment_id, { page, limit, keyword });
    return { data: rows.map(childChunkToWire), total, total_pages: Math.ceil(total / limit), page, limit };
  });

  app.post<{ Params: PS }>(base, { preValidation: requireJson, schema: { body: ChildChunkBody } }, async (request) => {
    const key = requireKey(request);
    const { ds, doc } = await target(request);
    const content = parseChildContent(jsonBody(request), k.segmentMaxChars);
    return { data: childChunkToWire(await childChunks.create(ds, doc, request.params.segment_id, content, key.id)) };
  });

  app.patch<{ Params: PC }>(`${base}/:child_chunk_id`, { preValidation: requireJson, schema: { body: ChildChunkBody } }, async (request) => {
    const key = requireKey(request);
    const { ds, doc } = await target(request);
    const content = parseChildContent(jsonBody(request), k.segmentMaxChars);
    return { data: childChunkToWire(await childChunks.update(ds, doc, request.params.segment_id, request.params.child_chunk_id, content, key.id)) };
  });

  app.delete<{ Params: PC }>(`${base}/:child_chunk_id`, async (request, reply) => {
    const { doc } = await target(request);
    await childChunks.delete(doc, request.params.segment_id, request.params.child_chunk_id);
    return reply.code(204).send();
  });
};
