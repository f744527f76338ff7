import { Type, type Static } from '@sinclair/typebox';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { toSeconds } from '../../infra/clock.js';
import { invalidParam, notFound } from '../../infra/errors.js';
import { datasetToWire } from '../../knowledge/datasets.js';
import { documentToWire, runToWire } from '../../knowledge/documents/document-wire.js';
import { childChunkToWire, segmentToWire } from '../../knowledge/documents/segment-wire.js';
import { parseChildContent, parseSegmentPatch } from '../../knowledge/documents/segment-input.js';
import { SUPPORTED_EXTENSIONS } from '../../knowledge/ingest/parse/index.js';
import type { Runtime } from '../../runtime.js';
import type { DatasetTable, DocumentTable } from '../../store/schema.js';
import { createDocumentFromForm } from '../document-form.js';
import { multipartRoutes } from '../multipart-upload.js';
import { consoleMember, requireRole } from './console-auth.js';

/** The runtime members these routes use. */
export type ConsoleKnowledgeDeps = Pick<Runtime, 'config' | 'datasets' | 'documents' | 'segments' | 'childChunks' | 'hitTesting' | 'metadata' | 'pipelines' | 'tags' | 'uploads' | 'keys'>;

const Id = Type.String({ maxLength: 64 });
const DatasetParams = Type.Object({ dataset_id: Id });
const DocumentParams = Type.Object({ dataset_id: Id, document_id: Id });
const SegmentParams = Type.Object({ dataset_id: Id, document_id: Id, segment_id: Id });
const ChildParams = Type.Object({ dataset_id: Id, document_id: Id, segment_id: Id, child_chunk_id: Id });
const KeyParams = Type.Object({ key_id: Id });
const ListQuery = Type.Object({
  page: Type.Integer({ minimum: 1, maximum: 100_000, default: 1 }),
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 20 }),
  keyword: Type.String({ maxLength: 255, default: '' }),
});
const SegmentQuery = Type.Object({
  page: Type.Integer({ minimum: 1, maximum: 100_000, default: 1 }),
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 20 }),
  keyword: Type.String({ maxLength: 255, default: '' }),
  enabled: Type.Union([Type.Literal('all'), Type.Literal('true'), Type.Literal('false')], { default: 'all' }),
});
const SegmentBody = Type.Object({
  content: Type.Optional(Type.String()),
  answer: Type.Optional(Type.String()),
  enabled: Type.Optional(Type.Boolean()),
});
const ChildBody = Type.Object({ content: Type.String() });
const HitTestBody = Type.Object({ query: Type.String(), retrieval_model: Type.Optional(Type.Unknown()) });

/**
 * The console's knowledge pages: datasets, a dataset's documents with their indexing progress,
 * upload (the Service API's create-by-file form and checks), segments and child chunks (read,
 * search, edit, disable / enable), hit testing, and the workspace's knowledge API keys.
 * Viewers read; editors change documents and segments; admins manage keys.
 */
export const consoleKnowledgeRoutes: FastifyPluginAsync<{ runtime: ConsoleKnowledgeDeps }> = async (app, { runtime }) => {
  const { datasets, documents, segments, childChunks } = runtime;
  const k = runtime.config.knowledge;
  const editor = { preHandler: requireRole('editor') };
  const admin = { preHandler: requireRole('admin') };

  /** The member's dataset, or 404 `Dataset not found.` (another workspace's is as if it did not exist). */
  const datasetOf = (request: FastifyRequest<{ Params: { dataset_id: string } }>): Promise<DatasetTable> => datasets.get(consoleMember(request).workspaceId, request.params.dataset_id);
  const documentOf = async (request: FastifyRequest<{ Params: { dataset_id: string; document_id: string } }>) => {
    const ds = await datasetOf(request);
    return { ds, doc: await documents.get(ds.id, request.params.document_id) };
  };

  async function datasetsToWire(rows: readonly DatasetTable[]): Promise<Record<string, unknown>[]> {
    const ids = rows.map((r) => r.id);
    const [stats, tagMap, fields, pipelines] = await Promise.all([datasets.stats(ids), runtime.tags.forDatasets(ids), runtime.metadata.forDatasets(rows), runtime.pipelines.idsOf(ids)]);
    return rows.map((r) => datasetToWire(r, stats.get(r.id), { tags: tagMap.get(r.id) ?? [], docMetadata: fields.get(r.id) ?? [], pipelineId: pipelines.get(r.id) }));
  }

  async function documentsToWire(ds: DatasetTable, rows: readonly DocumentTable[]): Promise<Record<string, unknown>[]> {
    const [files, hits, meta] = await Promise.all([documents.files(rows.map((r) => r.upload_file_id)), documents.hitCounts(rows.map((r) => r.id)), runtime.metadata.forDocuments(ds, rows)]);
    return rows.map((r) => documentToWire(r, files.get(r.upload_file_id), hits.get(r.id), meta.get(r.id)));
  }

  app.get<{ Querystring: Static<typeof ListQuery> }>('/datasets', { schema: { querystring: ListQuery } }, async (request) => {
    const { page, limit, keyword } = request.query;
    const { rows, total } = await datasets.list(consoleMember(request).workspaceId, page, limit, keyword.trim() || undefined);
    return { data: await datasetsToWire(rows), has_more: page * limit < total, limit, total, page };
  });

  app.get<{ Params: Static<typeof DatasetParams> }>('/datasets/:dataset_id', { schema: { params: DatasetParams } }, async (request) => {
    return { ...(await datasetsToWire([await datasetOf(request)]))[0], supported_extensions: SUPPORTED_EXTENSIONS };
  });

  // one call per poll: the page of documents, each with its latest version's indexing run
  app.get<{ Params: Static<typeof DatasetParams>; Querystring: Static<typeof ListQuery> }>('/datasets/:dataset_id/documents', { schema: { params: DatasetParams, querystring: ListQuery } }, async (request) => {
    const ds = await datasetOf(request);
    const { page, limit, keyword } = request.query;
    const { rows, total } = await documents.listWithProgress(ds.id, page, limit, keyword.trim() || undefined);
    const wire = await documentsToWire(ds, rows.map((r) => r.doc));
    return { data: wire.map((d, i) => ({ ...d, indexing: rows[i]!.run ? runToWire(rows[i]!.run!) : null })), has_more: page * limit < total, limit, total, page };
  });

  await multipartRoutes(app, (mp) => {
    mp.post<{ Params: Static<typeof DatasetParams> }>('/datasets/:dataset_id/documents', { ...editor, schema: { params: DatasetParams } }, async (request) => {
      const ds = await datasetOf(request);
      const accepted = await createDocumentFromForm(runtime, ds, request, consoleMember(request).id);
      return { document: (await documentsToWire(ds, [accepted.document]))[0], batch: accepted.batch };
    });
  });

  app.get<{ Params: Static<typeof DocumentParams>; Querystring: Static<typeof SegmentQuery> }>(
    '/datasets/:dataset_id/documents/:document_id/segments',
    { schema: { params: DocumentParams, querystring: SegmentQuery } },
    async (request) => {
      const { ds, doc } = await documentOf(request);
      const { page, limit, keyword, enabled } = request.query;
      const { items, total } = await segments.list(doc, { page, limit, keyword: keyword.trim() || undefined, status: [], ...(enabled === 'all' ? {} : { enabled: enabled === 'true' }) });
      return {
        document: (await documentsToWire(ds, [doc]))[0],
        data: items.map((c) => segmentToWire(c, doc)),
        doc_form: doc.doc_form,
        has_more: page * limit < total,
        limit,
        total,
        page,
      };
    },
  );

  app.patch<{ Params: Static<typeof SegmentParams>; Body: Static<typeof SegmentBody> }>(
    '/datasets/:dataset_id/documents/:document_id/segments/:segment_id',
    { ...editor, schema: { params: SegmentParams, body: SegmentBody } },
    async (request) => {
      const { ds, doc } = await documentOf(request);
      const patch = parseSegmentPatch({ segment: request.body }, k.segmentMaxChars);
      const updated = await segments.update(ds, doc, request.params.segment_id, patch, consoleMember(request).id);
      return { data: segmentToWire(updated, doc), doc_form: doc.doc_form };
    },
  );

  app.get<{ Params: Static<typeof SegmentParams>; Querystring: Static<typeof ListQuery> }>(
    '/datasets/:dataset_id/documents/:document_id/segments/:segment_id/child_chunks',
    { schema: { params: SegmentParams, querystring: ListQuery } },
    async (request) => {
      const { doc } = await documentOf(request);
      const { page, limit, keyword } = request.query;
      const { rows, total } = await childChunks.list(doc, request.params.segment_id, { page, limit, keyword: keyword.trim() || undefined });
      return { data: rows.map(childChunkToWire), has_more: page * limit < total, limit, total, page };
    },
  );

  app.patch<{ Params: Static<typeof ChildParams>; Body: Static<typeof ChildBody> }>(
    '/datasets/:dataset_id/documents/:document_id/segments/:segment_id/child_chunks/:child_chunk_id',
    { ...editor, schema: { params: ChildParams, body: ChildBody } },
    async (request) => {
      const { ds, doc } = await documentOf(request);
      const content = parseChildContent(request.body, k.segmentMaxChars);
      return { data: childChunkToWire(await childChunks.update(ds, doc, request.params.segment_id, request.params.child_chunk_id, content, consoleMember(request).id)) };
    },
  );

  app.post<{ Params: Static<typeof DatasetParams>; Body: Static<typeof HitTestBody> }>('/datasets/:dataset_id/hit-testing', { schema: { params: DatasetParams, body: HitTestBody } }, async (request) => {
    if (!request.body.query.trim()) throw invalidParam('query is required');
    return runtime.hitTesting.test(await datasetOf(request), request.body, request.log);
  });

  // The workspace's knowledge API keys (Dify's dataset API keys): admins only, as app keys.
  const datasetKeys = async (workspaceId: string) => (await runtime.keys.list()).filter((key) => key.type === 'dataset' && key.workspaceId === workspaceId);

  app.get('/dataset-keys', admin, async (request) => {
    const data = (await datasetKeys(consoleMember(request).workspaceId)).map((key) => ({ id: key.id, token: key.hint, created_at: toSeconds(key.createdAt), last_used_at: key.lastUsedAt === null ? null : toSeconds(key.lastUsedAt) }));
    return { data, has_more: false, limit: data.length, page: 1, total: data.length };
  });

  app.post('/dataset-keys', admin, async (request, reply) => {
    const made = await runtime.keys.create('dataset', consoleMember(request).workspaceId, null);
    return reply.code(201).send({ id: made.id, token: made.apiKey });
  });

  app.delete<{ Params: Static<typeof KeyParams> }>('/dataset-keys/:key_id', { ...admin, schema: { params: KeyParams } }, async (request, reply) => {
    const mine = (await datasetKeys(consoleMember(request).workspaceId)).some((key) => key.id === request.params.key_id);
    if (!mine || !(await runtime.keys.revoke(request.params.key_id))) throw notFound('API key not found.');
    return reply.code(204).send();
  });
};
