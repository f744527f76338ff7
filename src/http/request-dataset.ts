import type { FastifyInstance, FastifyRequest, preHandlerAsyncHookHandler } from 'fastify';
import type { Runtime } from '../runtime.js';
import type { DatasetTable } from '../store/schema.js';
import { requireKey } from './auth.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The knowledge base of a `/datasets/:dataset_id…` route (set by `loadDataset`; null before it runs). */
    dataset: DatasetTable | null;
  }
}

/** Declares the `dataset` request decoration; call once on the root instance. */
export function declareDatasetDecoration(app: FastifyInstance): void {
  app.decorateRequest('dataset', null);
}

/**
 * preHandler for knowledge routes under `/datasets/:dataset_id`: looks the dataset up once, in the
 * key's workspace (404 "Dataset not found." as Dify), after the body checks Fastify runs
 * (`requireJson`) and before the handler, which reads it with `requireDataset`.
 */
export function loadDataset(runtime: Pick<Runtime, 'datasets'>): preHandlerAsyncHookHandler {
  return async (request) => {
    const id = (request.params as { dataset_id?: string }).dataset_id;
    if (id === undefined) return;
    request.dataset = await runtime.datasets.get(requireKey(request).workspaceId, id);
  };
}

/** The dataset of a route behind `loadDataset`; the hook guarantees it is set. */
export function requireDataset(request: FastifyRequest): DatasetTable {
  if (!request.dataset) throw new Error('dataset route reached without the loadDataset hook');
  return request.dataset;
}
