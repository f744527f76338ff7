import type { FastifyPluginAsync } from 'fastify';
import type { Runtime } from '../../runtime.js';
import { datasetToWire } from '../../knowledge/datasets.js';
import { requireKey } from '../auth.js';
import { loadDataset, requireDataset } from '../request-dataset.js';
import { requireJson } from '../json-body.js';
import { jsonBody, pageParams, queryList } from './knowledge-params.js';
import type { DatasetTable } from '../../store/schema.js';
import { DatasetCreateBody, DatasetListQuery, DatasetUpdateBody, RetrieveBody } from '../knowledge-schemas.js';

/** The runtime members these routes use (server.ts hands them nothing else). */
export type DatasetRouteDeps = Pick<Runtime, 'config' | 'datasets' | 'documents' | 'metadata' | 'tags' | 'hitTesting' | 'pipelines'>;

type P = { dataset_id: string };

/** `/datasets` CRUD and `POST /datasets/{id}/retrieve` (knowledge keys). */
export const datasetRoutes: FastifyPluginAsync<{ runtime: DatasetRouteDeps }> = async (app, { runtime }) => {
  const { datasets, documents, tags, metadata } = runtime;
  const max = runtime.config.knowledge.pageLimitMax;

  /** Dataset objects with their stats, tags and metadata fields. */
  async function toWire(rows: readonly DatasetTable[]): Promise<Record<string, unknown>[]> {
    const ids = rows.map((r) => r.id);
    const [stats, tagMap, fields, pipelines] = await Promise.all([datasets.stats(ids), tags.forDatasets(ids), metadata.forDatasets(rows), runtime.pipelines.idsOf(ids)]);
    return rows.map((r) => datasetToWire(r, stats.get(r.id), { tags: tagMap.get(r.id) ?? [], docMetadata: fields.get(r.id) ?? [], pipelineId: pipelines.get(r.id) }));
  }
  const oneToWire = async (ds: DatasetTable) => (await toWire([ds]))[0];
  const withDataset = loadDataset(runtime);

  app.post('/datasets', { preValidation: requireJson, schema: { body: DatasetCreateBody } }, async (request) => {
    const key = requireKey(request);
    const b = jsonBody(request);
    const ds = await datasets.create(key.workspaceId, {
      name: b.name,
      description: b.description,
      indexingTechnique: b.indexing_technique,
      permission: b.permission,
      retrievalModel: b.retrieval_model,
      createdBy: key.id,
    });
    return oneToWire(ds);
  });

  app.get('/datasets', { schema: { querystring: DatasetListQuery } }, async (request) => {
    const key = requireKey(request);
    const { page, limit, keyword } = pageParams(request, max);
    const { rows, total } = await datasets.list(key.workspaceId, page, limit, keyword, queryList(request, 'tag_ids'));
    return { data: await toWire(rows), has_more: page * limit < total, limit, total, page };
  });

  app.get<{ Params: P }>('/datasets/:dataset_id', { preHandler: withDataset }, async (request) => {
    return oneToWire(requireDataset(request));
  });

  app.patch<{ Params: P }>('/datasets/:dataset_id', { preValidation: requireJson, schema: { body: DatasetUpdateBody } }, async (request) => {
    return oneToWire(await datasets.update(requireKey(request).workspaceId, request.params.dataset_id, jsonBody(request)));
  });

  app.delete<{ Params: P }>('/datasets/:dataset_id', async (request, reply) => {
    await documents.deleteDataset(requireKey(request).workspaceId, request.params.dataset_id);
    return reply.code(204).send();
  });

  app.post<{ Params: P }>('/datasets/:dataset_id/retrieve', { preValidation: requireJson, preHandler: withDataset, schema: { body: RetrieveBody } }, async (request) => {
    return runtime.hitTesting.test(requireDataset(request), jsonBody(request), request.log);
  });
};
