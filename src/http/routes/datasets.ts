import type { FastifyPluginAsync } from 'fastify';
import type { Runtime } from '../../runtime.js';
import { datasetToWire } from '../../knowledge/datasets.js';
import { parseRetrievalModel } from '../../knowledge/retrieval/retrieval-model.js';
import { toSeconds } from '../../infra/clock.js';
import { countHits } from '../../knowledge/retrieval/hit-counter.js';
import { requireKey } from '../auth.js';
import { loadDataset, requireDataset } from '../request-dataset.js';
import { requireJson } from '../json-body.js';
import { jsonBody, pageParams, queryList } from './knowledge-params.js';
import type { DatasetTable } from '../../store/schema.js';
import { externalOf } from '../../knowledge/external/external-knowledge.js';
import { externalRetrieve } from '../../knowledge/external/external-retrieve.js';
import { DatasetCreateBody, DatasetListQuery, DatasetUpdateBody, RetrieveBody } from '../knowledge-schemas.js';

/** The runtime members these routes use (server.ts hands them nothing else). */
export type DatasetRouteDeps = Pick<Runtime, 'config' | 'datasets' | 'documents' | 'hits' | 'metadata' | 'retrieval' | 'tags' | 'external'>;

type P = { dataset_id: string };

/** `/datasets` CRUD and `POST /datasets/{id}/retrieve` (knowledge keys). */
export const datasetRoutes: FastifyPluginAsync<{ runtime: DatasetRouteDeps }> = async (app, { runtime }) => {
  const { datasets, documents, retrieval, tags, metadata } = runtime;
  const max = runtime.config.knowledge.pageLimitMax;

  /** Dataset objects with their stats, tags and metadata fields. */
  async function toWire(rows: readonly DatasetTable[]): Promise<Record<string, unknown>[]> {
    const ids = rows.map((r) => r.id);
    const [stats, tagMap, fields] = await Promise.all([datasets.stats(ids), tags.forDatasets(ids), metadata.forDatasets(rows)]);
    return rows.map((r) => datasetToWire(r, stats.get(r.id), { tags: tagMap.get(r.id) ?? [], docMetadata: fields.get(r.id) ?? [] }));
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
    const ds = requireDataset(request);
    const b = jsonBody(request);
    const ext = externalOf(ds);
    if (ext) return externalRetrieve(runtime.external, ext, typeof b.query === 'string' ? b.query : '', b.external_retrieval_model, request.log);
    const model = b.retrieval_model === undefined || b.retrieval_model === null ? datasets.retrievalModel(ds) : parseRetrievalModel(b.retrieval_model, runtime.config.knowledge.retrievalTopKMax, ds.indexing_technique === 'high_quality' ? 'semantic_search' : 'keyword_search');
    const query = typeof b.query === 'string' ? b.query : '';
    const retrieved = await retrieval.retrieve([ds.id], query, model);
    // Dify's hit testing does not count hits (dify#24077); Dovetail does unless RETRIEVE_COUNTS_HITS=false.
    const found = runtime.config.knowledge.retrieveCountsHits ? countHits(runtime.hits, retrieved) : retrieved;
    const docMetadata = await metadata.docMetadataColumns(ds, found.map((s) => s.documentId));
    return {
      query: { content: query },
      records: found.map((s) => ({
        segment: {
          id: s.segmentId,
          position: s.position,
          document_id: s.documentId,
          content: s.content,
          sign_content: s.content,
          answer: s.answer ?? null,
          word_count: s.wordCount,
          tokens: s.tokens,
          keywords: [],
          index_node_id: s.segmentId,
          index_node_hash: s.hash,
          hit_count: s.hitCount,
          enabled: true,
          disabled_at: null,
          disabled_by: null,
          status: 'completed',
          created_by: ds.created_by,
          created_at: toSeconds(s.createdAt),
          indexing_at: toSeconds(s.createdAt),
          completed_at: s.completedAt === null ? null : toSeconds(s.completedAt),
          error: null,
          stopped_at: null,
          document: { id: s.documentId, data_source_type: 'upload_file', name: s.documentName, doc_type: null, doc_metadata: docMetadata.get(s.documentId) ?? null },
        },
        child_chunks: (s.childChunks ?? []).map((c) => ({ id: c.id, content: c.content, position: c.position, score: c.score })),
        score: s.score,
        tsne_position: null,
        files: [],
        summary: null,
      })),
    };
  });
};
