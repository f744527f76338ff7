import type { FastifyPluginAsync } from 'fastify';
import type { Runtime } from '../../runtime.js';
import type { DatasetMetadataTable } from '../../store/schema.js';
import { BUILT_IN_FIELDS } from '../../knowledge/documents/metadata.js';
import { invalidAction } from '../../knowledge/errors.js';
import { requireKey } from '../auth.js';
import { loadDataset, requireDataset } from '../request-dataset.js';
import { requireJson } from '../json-body.js';
import { jsonBody } from './knowledge-params.js';
import { DocumentMetadataBody, MetadataCreateBody, MetadataRenameBody } from '../knowledge-schemas.js';

/** The runtime members these routes use (server.ts hands them nothing else). */
export type DatasetMetadataRouteDeps = Pick<Runtime, 'datasets' | 'metadata'>;

type P = { dataset_id: string };
type PM = { dataset_id: string; metadata_id: string };
type PA = { dataset_id: string; action: string };

const toWire = (m: DatasetMetadataTable) => ({ id: m.id, name: m.name, type: m.type });

/** Metadata fields of a dataset, the built-in fields, and document values (knowledge keys). */
export const datasetMetadataRoutes: FastifyPluginAsync<{ runtime: DatasetMetadataRouteDeps }> = async (app, { runtime }) => {
  const { metadata } = runtime;
  // every route here is under /datasets/:dataset_id
  app.addHook('preHandler', loadDataset(runtime));

  app.get<{ Params: P }>('/datasets/:dataset_id/metadata', async (request) => metadata.list(requireDataset(request)));

  app.post<{ Params: P }>('/datasets/:dataset_id/metadata', { preValidation: requireJson, schema: { body: MetadataCreateBody } }, async (request, reply) => {
    const ds = requireDataset(request);
    const b = jsonBody(request);
    const row = await metadata.create(ds, { type: b.type, name: b.name, createdBy: requireKey(request).id });
    return reply.code(201).send(toWire(row));
  });

  app.get<{ Params: P }>('/datasets/:dataset_id/metadata/built-in', async (request) => {
    requireDataset(request);
    return { fields: BUILT_IN_FIELDS.map((f) => ({ name: f.name, type: f.type })) };
  });

  app.post<{ Params: PA }>('/datasets/:dataset_id/metadata/built-in/:action', async (request) => {
    const ds = requireDataset(request);
    const { action } = request.params;
    if (action !== 'enable' && action !== 'disable') throw invalidAction('Invalid action.');
    await metadata.setBuiltIn(ds, action === 'enable');
    return { result: 'success' };
  });

  app.patch<{ Params: PM }>('/datasets/:dataset_id/metadata/:metadata_id', { preValidation: requireJson, schema: { body: MetadataRenameBody } }, async (request) => {
    const ds = requireDataset(request);
    return toWire(await metadata.rename(ds, request.params.metadata_id, jsonBody(request).name, requireKey(request).id));
  });

  app.delete<{ Params: PM }>('/datasets/:dataset_id/metadata/:metadata_id', async (request, reply) => {
    await metadata.delete(requireDataset(request), request.params.metadata_id);
    return reply.code(204).send();
  });

  app.post<{ Params: P }>('/datasets/:dataset_id/documents/metadata', { preValidation: requireJson, schema: { body: DocumentMetadataBody } }, async (request) => {
    const ds = requireDataset(request);
    await metadata.updateDocuments(ds, jsonBody(request), requireKey(request).id);
    return { result: 'success' };
  });
};
