import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyPluginAsync } from 'fastify';
import cors from '@fastify/cors';
import FindMyWay from 'find-my-way';
import { modelRoutes } from './routes/models.js';
import { signedFileRoutes } from './routes/signed-files.js';
import type { Runtime } from '../runtime.js';
import { newId } from '../infra/ids.js';
import { methodNotAllowed, notFound } from '../infra/errors.js';
import { appAuth, datasetAuth, declareAuthDecorations } from './auth.js';
import { errorHandler } from './errors.js';
import { appInfoRoutes } from './routes/app-info.js';
import { fileRoutes } from './routes/files.js';
import { completionRoutes } from './routes/completion.js';
import { feedbackRoutes } from './routes/feedbacks.js';
import { suggestedQuestionRoutes } from './routes/suggested-questions.js';
import { humanInputFormRoutes } from './routes/human-input-forms.js';
import { workflowRoutes } from './routes/workflows.js';
import { workflowEventRoutes } from './routes/workflow-events.js';
import { workflowLogRoutes } from './routes/workflow-logs.js';
import { chatMessageRoutes } from './routes/chat-messages.js';
import { conversationRoutes } from './routes/conversations.js';
import { datasetTagRoutes } from './routes/dataset-tags.js';
import { datasetMetadataRoutes } from './routes/dataset-metadata.js';
import { datasetRoutes } from './routes/datasets.js';
import { documentRoutes } from './routes/documents.js';
import { childChunkRoutes, segmentRoutes } from './routes/segments.js';
import { annotationRoutes } from './routes/annotations.js';
import { audioRoutes } from './routes/audio.js';
import { webFormRoutes } from './routes/web-forms.js';
import { formPageRoutes } from './routes/form-pages.js';

type RoutePlugin = FastifyPluginAsync<{ runtime: Runtime }>;

/** Route plugins that take an app key (`Authorization: Bearer app-…`). */
const APP_ROUTES: readonly RoutePlugin[] = [
  appInfoRoutes,
  fileRoutes,
  completionRoutes,
  feedbackRoutes,
  suggestedQuestionRoutes,
  humanInputFormRoutes,
  workflowRoutes,
  workflowEventRoutes,
  workflowLogRoutes,
  chatMessageRoutes,
  conversationRoutes,
  annotationRoutes,
  audioRoutes,
];
/** Route plugins that take a knowledge key (`Authorization: Bearer dataset-…`). */
const DATASET_ROUTES: readonly RoutePlugin[] = [datasetRoutes, datasetTagRoutes, datasetMetadataRoutes, documentRoutes, segmentRoutes, childChunkRoutes, modelRoutes];

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

/** Builds the Fastify app (not listening). Everything is registered before the first request. */
export async function buildServer(runtime: Runtime): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: runtime.logger as unknown as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true }),
    requestIdHeader: 'x-request-id',
    genReqId: () => newId(),
    bodyLimit: 16 * 1024 * 1024,
    ajv: { customOptions: { coerceTypes: 'array', removeAdditional: true, useDefaults: true, allErrors: false } },
  });
  declareAuthDecorations(app);
  app.setErrorHandler(errorHandler);

  // A second router that only knows paths, to answer 405 instead of 404 for a known path.
  const paths = FindMyWay();
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    for (const m of methods) {
      if (m === 'HEAD' || m === 'OPTIONS') continue;
      try {
        paths.on(m as 'GET', route.url, () => undefined);
      } catch {
        // the same path registered twice by Fastify for a trailing slash
      }
    }
  });
  app.setNotFoundHandler(async (request) => {
    const url = request.url.split('?')[0]!;
    if (METHODS.some((m) => m !== request.method && paths.find(m, url))) throw methodNotAllowed();
    throw notFound('The requested URL was not found on the server. If you entered the URL manually please check your spelling and try again.');
  });

  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });
  app.addHook('onResponse', async (request, reply) => {
    request.log.info({ method: request.method, url: redactUrl(request.url), status: reply.statusCode, ms: Math.round(reply.elapsedTime) }, 'request');
  });

  await app.register(cors, {
    origin: '*',
    methods: ['GET', 'PUT', 'POST', 'DELETE', 'OPTIONS', 'PATCH'],
    allowedHeaders: ['Content-Type', 'Authorization', 'X-App-Code'],
  });

  // Outside the upload routes a multipart body is not read: routes without a body take it as none
  // (as Dify), JSON routes answer their 415 (`requireJson`). `multipartRoutes` parses it.
  app.addContentTypeParser('multipart/form-data', (_request, _payload, done) => done(null, undefined));

  app.get('/health', async () => ({ status: 'ok' }));
  await app.register(signedFileRoutes, { runtime });
  // People-facing: no API key (the form token is the credential), limited per client address.
  await app.register(webFormRoutes, { runtime });
  await app.register(formPageRoutes, { runtime });

  await app.register(
    async (v1) => {
      await v1.register(async (scope) => {
        scope.addHook('onRequest', appAuth(runtime));
        for (const plugin of APP_ROUTES) await scope.register(plugin, { runtime });
      });
      await v1.register(async (scope) => {
        scope.addHook('onRequest', datasetAuth(runtime));
        for (const plugin of DATASET_ROUTES) await scope.register(plugin, { runtime });
      });
    },
    { prefix: '/v1' },
  );
  await app.ready();
  return app;
}

/** Form tokens are credentials: request logs show `[redacted]` in their place. */
export function redactUrl(url: string): string {
  return url.replace(/(\/form\/human_input\/)[^/?]+/, '$1[redacted]').replace(/^(\/form\/)(?!-\/)[^/?]+/, '$1[redacted]');
}
