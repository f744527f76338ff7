import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsync } from 'fastify';
import type { Runtime } from '../../runtime.js';
import { requireKey } from '../auth.js';
import { loadDataset, requireDataset } from '../request-dataset.js';
import { requireJson } from '../json-body.js';
import { jsonBody } from './knowledge-params.js';
import { handlerValidated, multipartForm } from '../described.js';
import { multipartRoutes, readUploadForm } from '../multipart-upload.js';
import { noFileUploaded, unsupportedFileType } from '../../files/errors.js';
import { extensionOf } from '../../files/file-types.js';
import { SUPPORTED_EXTENSIONS } from '../../knowledge/ingest/parse/index.js';
import { invalidParam } from '../../infra/errors.js';
import { openSse } from '../sse.js';

/** The runtime members these routes use (server.ts hands them nothing else). */
export type PipelineRouteDeps = Pick<Runtime, 'config' | 'datasets' | 'pipelines' | 'uploads'>;

type P = { dataset_id: string };
type PN = { dataset_id: string; node_id: string };

const O = Type.Optional;
const DatasourceTypes = Type.String({ enum: ['local_file', 'online_document', 'website_crawl', 'online_drive'] });
const PluginsQuery = Type.Object({ is_published: O(Type.String({ description: 'Accepted and ignored: a Dovetail pipeline has one version.' })) });
const DatasourceNodeRunBody = handlerValidated({
  inputs: Type.Object({}, { additionalProperties: true }),
  datasource_type: DatasourceTypes,
  credential_id: O(Type.Union([Type.String(), Type.Null()])),
  is_published: Type.Boolean(),
});
const PipelineRunBody = handlerValidated({
  inputs: Type.Object({}, { additionalProperties: true }),
  datasource_type: DatasourceTypes,
  datasource_info_list: Type.Array(Type.Object({}, { additionalProperties: true })),
  start_node_id: Type.String(),
  is_published: Type.Boolean(),
  response_mode: Type.String({ enum: ['streaming', 'blocking'] }),
});
const PipelineUploadForm = multipartForm({});

/** Dify's `created_at` of an upload: naive ISO 8601 (UTC, seconds). */
const isoSeconds = (ms: number) => new Date(ms).toISOString().slice(0, 19);

/**
 * The knowledge pipeline operations (knowledge keys): uploading a file for a run, the pipeline's
 * datasource nodes, running one datasource node (a website crawl) and running the pipeline,
 * streaming (`text/event-stream`) or blocking.
 */
export const pipelineRoutes: FastifyPluginAsync<{ runtime: PipelineRouteDeps }> = async (app, { runtime }) => {
  const { pipelines } = runtime;
  const withDataset = loadDataset(runtime);

  await multipartRoutes(app, (mp) =>
    mp.post('/datasets/pipeline/file-upload', { schema: { consumes: ['multipart/form-data'], body: PipelineUploadForm } }, async (request, reply) => {
      const key = requireKey(request);
      const { pending } = await readUploadForm(request, runtime.uploads, (filename) => {
        if (!SUPPORTED_EXTENSIONS.includes(extensionOf(filename))) throw unsupportedFileType(`Pipeline files must be one of: ${SUPPORTED_EXTENSIONS.join(', ')}.`);
      });
      if (!pending) throw noFileUploaded();
      const f = await runtime.uploads.commit(pending, { workspaceId: key.workspaceId, appId: null, createdBy: key.id, createdByRole: 'account' });
      return reply.code(201).send({ id: f.id, name: f.name, size: f.size, extension: f.extension, mime_type: f.mimeType || null, created_by: f.createdBy, created_at: isoSeconds(f.createdAt) });
    }),
  );

  app.get<{ Params: P }>('/datasets/:dataset_id/pipeline/datasource-plugins', { preHandler: withDataset, schema: { querystring: PluginsQuery } }, async (request) => {
    return pipelines.datasourcePlugins(requireDataset(request));
  });

  app.post<{ Params: PN }>('/datasets/:dataset_id/pipeline/datasource/nodes/:node_id/run', { preValidation: requireJson, preHandler: withDataset, schema: { body: DatasourceNodeRunBody } }, async (request, reply) => {
    const ds = requireDataset(request);
    const b = jsonBody(request);
    if (typeof b.is_published !== 'boolean') throw invalidParam('is_published is required (true or false).');
    // checked before the stream opens: a bad request is a 400, not an event
    const run = await pipelines.datasourceNodeRun(ds, request.params.node_id, { inputs: b.inputs ?? {}, datasource_type: b.datasource_type });
    const sse = openSse(reply, { pingIntervalMs: runtime.config.ssePingIntervalMs });
    try {
      await run((f) => sse.send(f), sse.signal);
    } finally {
      sse.end();
    }
  });

  app.post<{ Params: P }>('/datasets/:dataset_id/pipeline/run', { preValidation: requireJson, preHandler: withDataset, schema: { body: PipelineRunBody } }, async (request, reply) => {
    const key = requireKey(request);
    const ds = requireDataset(request);
    const b = jsonBody(request);
    const mode = b.response_mode;
    if (mode !== 'streaming' && mode !== 'blocking') throw invalidParam('response_mode must be streaming or blocking.');
    if (typeof b.is_published !== 'boolean') throw invalidParam('is_published is required (true or false).');
    const req = { inputs: b.inputs ?? {}, datasource_type: b.datasource_type, datasource_info_list: b.datasource_info_list, start_node_id: b.start_node_id };
    // every named 400 before a run starts (or a stream opens)
    await pipelines.checkRun(ds, req);
    if (mode === 'blocking') {
      // a blocking run goes on if the client leaves (as Dify's)
      const results = await pipelines.run(ds, req, key.id, () => undefined, new AbortController().signal);
      // several items: the first that did not succeed, else the last
      const r = results.find((x) => x.status !== 'succeeded') ?? results[results.length - 1]!;
      return { task_id: r.id, workflow_run_id: r.id, data: r };
    }
    const sse = openSse(reply, { pingIntervalMs: runtime.config.ssePingIntervalMs, maxBufferedBytes: runtime.config.httpServer.sseMaxBufferedBytes });
    try {
      await pipelines.run(ds, req, key.id, (f) => sse.send(f), sse.signal);
    } finally {
      sse.end();
    }
  });
};
