import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { Runtime } from '../../runtime.js';
import type { DatasetTable, DocumentTable } from '../../store/schema.js';
import { invalidParam } from '../../infra/errors.js';
import { pyQuote } from '../../files/file-preview.js';
import { requestOrigin } from '../file-reply.js';
import { multipartRoutes } from '../multipart-upload.js';
import type { UploadedFile } from '../../files/upload-service.js';
import type { Accepted } from '../../knowledge/documents/documents.js';
import { createDocumentFromForm, options, readForm, type DocumentForm } from '../document-form.js';
import { documentToWire, runToWire } from '../../knowledge/documents/document-wire.js';
import { notFound } from '../../infra/errors.js';
import { requireKey } from '../auth.js';
import { refuseExternal } from '../../knowledge/external/external-knowledge.js';
import { loadDataset, requireDataset } from '../request-dataset.js';
import { requireJson } from '../json-body.js';
import { jsonBody, pageParams } from './knowledge-params.js';
import { CreateByTextBody, DocumentFileForm, DocumentIdsBody, DocumentListQuery, DocumentQuery, UpdateByTextBody } from '../knowledge-schemas.js';

/** The runtime members these routes use (server.ts hands them nothing else). */
export type DocumentRouteDeps = Pick<Runtime, 'config' | 'datasets' | 'documentDownloads' | 'documents' | 'documentStatus' | 'metadata' | 'uploads'>;

type P = { dataset_id: string };
type PD = { dataset_id: string; document_id: string };

/** Documents of a knowledge base (knowledge keys): create, update, list, get, delete, progress. */
export const documentRoutes: FastifyPluginAsync<{ runtime: DocumentRouteDeps }> = async (app, { runtime }) => {
  const { documents } = runtime;
  // every route here is under /datasets/:dataset_id
  app.addHook('preHandler', loadDataset(runtime));

  /** Document objects with their file, hit count and `doc_metadata`. */
  async function toWire(ds: DatasetTable, rows: readonly DocumentTable[]): Promise<Record<string, unknown>[]> {
    const [files, hits, meta] = await Promise.all([
      documents.files(rows.map((r) => r.upload_file_id)),
      documents.hitCounts(rows.map((r) => r.id)),
      runtime.metadata.forDocuments(ds, rows),
    ]);
    return rows.map((r) => documentToWire(r, files.get(r.upload_file_id), hits.get(r.id), meta.get(r.id)));
  }

  async function answer(ds: DatasetTable, accepted: Accepted): Promise<Record<string, unknown>> {
    return { document: (await toWire(ds, [accepted.document]))[0], batch: accepted.batch };
  }

  /** Commits the received file, runs `fn`, and drops the file if `fn` fails. */
  async function withFile<T>(ds: DatasetTable, form: DocumentForm, createdBy: string, fn: (f: UploadedFile | undefined) => Promise<T>): Promise<T> {
    const file = form.pending
      ? await runtime.uploads.commit(form.pending, { workspaceId: ds.workspace_id, appId: null, createdBy, createdByRole: 'account' })
      : undefined;
    return fn(file);
  }

  async function createByText(request: FastifyRequest<{ Params: P }>) {
    const key = requireKey(request);
    const ds = requireDataset(request);
    const b = jsonBody(request);
    if (typeof b.name !== 'string' || b.name.trim() === '') throw invalidParam('name is required.');
    if (typeof b.text !== 'string' || b.text.trim() === '') throw invalidParam('text is required.');
    const opts = options(b);
    await documents.checkOptions(ds, opts);
    const file = await documents.storeText(ds.workspace_id, b.name.trim(), b.text, key.id);
    return answer(ds, await documents.create(ds, file, opts, key.id));
  }

  async function createByFile(request: FastifyRequest<{ Params: P }>) {
    const key = requireKey(request);
    const ds = requireDataset(request);
    refuseExternal(ds);
    return answer(ds, await createDocumentFromForm(runtime, ds, request, key.id));
  }

  async function updateByFile(request: FastifyRequest<{ Params: PD }>) {
    const key = requireKey(request);
    const ds = requireDataset(request);
    refuseExternal(ds);
    const current = await documents.checkUpdatable(ds, request.params.document_id);
    const form = await readForm(runtime, request);
    try {
      await documents.checkOptions(ds, { ...options(form.data), indexingTechnique: ds.indexing_technique }, current);
    } catch (err) {
      if (form.pending) await runtime.uploads.abandon(form.pending);
      throw err;
    }
    return withFile(ds, form, key.id, async (file) => answer(ds, await documents.update(ds, request.params.document_id, file, options(form.data))));
  }

  async function updateByText(request: FastifyRequest<{ Params: PD }>) {
    const key = requireKey(request);
    const ds = requireDataset(request);
    const b = jsonBody(request);
    const hasText = b.text !== undefined && b.text !== null;
    if (hasText && (typeof b.name !== 'string' || b.name.trim() === '')) throw invalidParam('name is required when text is provided.');
    if (hasText && (typeof b.text !== 'string' || b.text.trim() === '')) throw invalidParam('text must be a non-empty string.');
    const current = await documents.checkUpdatable(ds, request.params.document_id);
    const opts = options(b);
    await documents.checkOptions(ds, { ...opts, indexingTechnique: ds.indexing_technique }, current);
    const file = hasText ? await documents.storeText(ds.workspace_id, String(b.name).trim(), b.text as string, key.id) : undefined;
    return answer(ds, await documents.update(ds, request.params.document_id, file, opts));
  }

  for (const path of ['create-by-text', 'create_by_text']) app.post<{ Params: P }>(`/datasets/:dataset_id/document/${path}`, { preValidation: requireJson, schema: { body: CreateByTextBody } }, createByText);
  await multipartRoutes(app, (mp) => {
    for (const path of ['create-by-file', 'create_by_file']) mp.post<{ Params: P }>(`/datasets/:dataset_id/document/${path}`, { schema: { consumes: ['multipart/form-data'], body: DocumentFileForm } }, createByFile);
    mp.patch<{ Params: PD }>('/datasets/:dataset_id/documents/:document_id', { schema: { consumes: ['multipart/form-data'], body: DocumentFileForm } }, updateByFile);
    for (const path of ['update-by-file', 'update_by_file']) mp.post<{ Params: PD }>(`/datasets/:dataset_id/documents/:document_id/${path}`, { schema: { consumes: ['multipart/form-data'], body: DocumentFileForm } }, updateByFile);
  });
  for (const path of ['update-by-text', 'update_by_text']) app.post<{ Params: PD }>(`/datasets/:dataset_id/documents/:document_id/${path}`, { preValidation: requireJson, schema: { body: UpdateByTextBody } }, updateByText);

  app.get<{ Params: P }>('/datasets/:dataset_id/documents', { schema: { querystring: DocumentListQuery } }, async (request) => {
    const ds = requireDataset(request);
    const { page, limit, keyword } = pageParams(request, runtime.config.knowledge.pageLimitMax);
    const { rows, total } = await documents.list(ds.id, page, limit, keyword);
    return { data: await toWire(ds, rows), has_more: page * limit < total, limit, total, page };
  });

  app.get<{ Params: PD }>('/datasets/:dataset_id/documents/:document_id/download', async (request) => {
    const ds = requireDataset(request);
    return { url: await runtime.documentDownloads.url(ds, request.params.document_id, requestOrigin(request, runtime.config.httpServer.trustProxy)) };
  });

  app.post<{ Params: P; Body: { document_ids?: unknown } | null }>('/datasets/:dataset_id/documents/download-zip', { preValidation: requireJson, schema: { body: DocumentIdsBody } }, async (request, reply) => {
    const ds = requireDataset(request);
    const zip = await runtime.documentDownloads.zip(ds, request.body?.document_ids);
    return reply.type('application/zip').header('content-disposition', `attachment; filename*=UTF-8''${pyQuote(zip.name)}`).send(zip.body);
  });

  app.get<{ Params: PD }>('/datasets/:dataset_id/documents/:document_id', { schema: { querystring: DocumentQuery } }, async (request) => {
    const ds = requireDataset(request);
    const doc = await documents.get(ds.id, request.params.document_id);
    return (await toWire(ds, [doc]))[0];
  });

  app.delete<{ Params: PD }>('/datasets/:dataset_id/documents/:document_id', async (request, reply) => {
    const ds = requireDataset(request);
    await documents.delete(ds.id, request.params.document_id);
    return reply.code(204).send();
  });

  app.patch<{ Params: P & { action: string } }>('/datasets/:dataset_id/documents/status/:action', { preValidation: requireJson, schema: { body: DocumentIdsBody } }, async (request) => {
    const key = requireKey(request);
    const ds = requireDataset(request);
    await runtime.documentStatus.changeStatus(ds.id, request.params.action, jsonBody(request).document_ids, key.id);
    return { result: 'success' };
  });

  // Dify has these on its console API only; Dovetail serves them to knowledge keys (docs/compatibility.md).
  app.patch<{ Params: PD }>('/datasets/:dataset_id/documents/:document_id/processing/pause', async (request, reply) => {
    const ds = requireDataset(request);
    await runtime.documentStatus.pause(ds.id, request.params.document_id);
    return reply.code(204).send();
  });
  app.patch<{ Params: PD }>('/datasets/:dataset_id/documents/:document_id/processing/resume', async (request, reply) => {
    const ds = requireDataset(request);
    await runtime.documentStatus.resume(ds.id, request.params.document_id);
    return reply.code(204).send();
  });

  app.get<{ Params: P & { batch: string } }>('/datasets/:dataset_id/documents/:batch/indexing-status', async (request) => {
    const ds = requireDataset(request);
    const runs = await documents.batchStatus(ds.id, request.params.batch);
    if (runs.length === 0) throw notFound('Documents not found.');
    return { data: runs.map(runToWire) };
  });
};
