import type { FastifyPluginAsync } from 'fastify';
import type { Runtime } from '../../runtime.js';
import { requireKey } from '../auth.js';
import { loadDataset, requireDataset } from '../request-dataset.js';
import { requireJson } from '../json-body.js';
import { jsonBody } from './knowledge-params.js';
import { TagBindingBody, TagCreateBody, TagDeleteBody, TagRenameBody, TagUnbindingBody } from '../knowledge-schemas.js';

/** The runtime members these routes use (server.ts hands them nothing else). */
export type DatasetTagRouteDeps = Pick<Runtime, 'datasets' | 'tags'>;

type P = { dataset_id: string };

/** Knowledge tags (`/datasets/tags…`) and the tags of one dataset (knowledge keys). */
export const datasetTagRoutes: FastifyPluginAsync<{ runtime: DatasetTagRouteDeps }> = async (app, { runtime }) => {
  const { tags } = runtime;

  app.get('/datasets/tags', async (request) => tags.list(requireKey(request).workspaceId));

  app.post('/datasets/tags', { preValidation: requireJson, schema: { body: TagCreateBody } }, async (request) => {
    const key = requireKey(request);
    return tags.create(key.workspaceId, jsonBody(request).name, key.id);
  });

  app.patch('/datasets/tags', { preValidation: requireJson, schema: { body: TagRenameBody } }, async (request) => {
    const b = jsonBody(request);
    return tags.rename(requireKey(request).workspaceId, b.tag_id, b.name);
  });

  app.delete('/datasets/tags', { preValidation: requireJson, schema: { body: TagDeleteBody } }, async (request, reply) => {
    await tags.delete(requireKey(request).workspaceId, jsonBody(request).tag_id);
    return reply.code(204).send();
  });

  app.post('/datasets/tags/binding', { preValidation: requireJson, schema: { body: TagBindingBody } }, async (request, reply) => {
    const key = requireKey(request);
    const b = jsonBody(request);
    await tags.bind(key.workspaceId, b.tag_ids, b.target_id, key.id);
    return reply.code(204).send();
  });

  app.post('/datasets/tags/unbinding', { preValidation: requireJson, schema: { body: TagUnbindingBody } }, async (request, reply) => {
    const b = jsonBody(request);
    await tags.unbind(requireKey(request).workspaceId, b.tag_ids, b.tag_id, b.target_id);
    return reply.code(204).send();
  });

  app.get<{ Params: P }>('/datasets/:dataset_id/tags', { preHandler: loadDataset(runtime) }, async (request) => {
    const ds = requireDataset(request);
    const bound = (await tags.forDatasets([ds.id])).get(ds.id) ?? [];
    return { data: bound.map((t) => ({ id: t.id, name: t.name })), total: bound.length };
  });
};
