import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyPluginAsync } from 'fastify';
import cors from '@fastify/cors';
import FindMyWay from 'find-my-way';
import { modelRoutes } from './routes/models.js';
import { signedFileRoutes } from './routes/signed-files.js';
import type { Runtime } from '../runtime.js';
import { newId } from '../infra/ids.js';
import { methodNotAllowed, notFound } from '../infra/errors.js';
import type { Metrics } from '../infra/metrics.js';
import { limitJsonDepth } from './json-depth.js';
import { appAuth, datasetAuth, declareAuthDecorations } from './auth.js';
import { declareDatasetDecoration } from './request-dataset.js';
import { declareUserDecorations } from './request-user.js';
import { errorHandler } from './errors.js';
import { listenerErrors } from './listener-errors.js';
import { redactUrl } from '../infra/logger.js';
import { lazyChildLogger } from './request-logger.js';
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
import { pipelineRoutes } from './routes/knowledge-pipeline.js';
import { documentRoutes } from './routes/documents.js';
import { childChunkRoutes, segmentRoutes } from './routes/segments.js';
import { annotationRoutes } from './routes/annotations.js';
import { audioRoutes } from './routes/audio.js';
import { openAiCompatibleRoutes } from './routes/openai-compatible.js';
import { mcpServerRoutes } from './routes/mcp-server.js';
import { webhookTriggerRoutes } from './routes/webhook-triggers.js';
import { registerApiDescription } from './api-description.js';
import { handlerValidatedCompiler } from './described.js';
import { lazySerializers, lazyValidators } from './schema-compilers.js';
import { webFormRoutes } from './routes/web-forms.js';
import { formPageRoutes } from './routes/form-pages.js';
import { webAppPageRoutes } from './routes/web-app-pages.js';
import { registerProbes } from './probes.js';
import { admissionWaitMs, admitRequests, requestAdmission } from './admission.js';
import { releaseConnectionsOnClose } from './closing-connections.js';
import { declarePassportDecoration, webAuth } from './web-auth.js';
import { passportRoutes, webAppInfoRoutes } from './routes/web-app.js';
import { webCompletionRoutes } from './routes/web-completion.js';
import { consolePageRoutes } from './routes/console-pages.js';
import { registerConsoleApi } from './console/index.js';
import { declareConsoleDecorations } from './console/console-auth.js';

/** Registers one route plugin in a scope, handing it only the runtime members it declares. */
type RouteRegistration = (scope: FastifyInstance, runtime: Runtime) => Promise<void>;

/**
 * Gives a plugin its name for Fastify. Without one Fastify looks for the function among the exports
 * of every loaded CommonJS module at each registration (`getPluginName`), a cost that grows with
 * the modules the process has loaded.
 */
function named<F extends (...args: never[]) => unknown>(fn: F, name = fn.name): F {
  if (!Object.hasOwn(fn, PLUGIN_NAME)) Object.defineProperty(fn, PLUGIN_NAME, { value: name || 'anonymous' });
  return fn;
}
const PLUGIN_NAME = Symbol.for('fastify.display-name');

/**
 * A route plugin that declares its dependencies as `Pick<Runtime, …>`: it gets an object with
 * just those members (the compiler checks `deps` covers the plugin's type), nothing else.
 */
function narrowed<K extends keyof Runtime>(plugin: FastifyPluginAsync<{ runtime: Pick<Runtime, K> }>, deps: readonly K[]): RouteRegistration {
  return async (scope, runtime) => {
    const slice = Object.fromEntries(deps.map((k) => [k, runtime[k]])) as Pick<Runtime, K>;
    await scope.register(named(plugin), { runtime: slice });
  };
}

/** Route plugins that take an app key (`Authorization: Bearer app-…`). */
const APP_ROUTES: readonly RouteRegistration[] = [
  narrowed(appInfoRoutes, ['config', 'endUsers', 'sites']),
  narrowed(fileRoutes, ['config', 'endUsers', 'filePreviews', 'fileUrls', 'uploads']),
  narrowed(completionRoutes, ['completions', 'config']),
  narrowed(feedbackRoutes, ['config', 'feedback']),
  narrowed(suggestedQuestionRoutes, ['suggestedQuestions']),
  narrowed(humanInputFormRoutes, ['forms']),
  narrowed(workflowRoutes, ['config', 'endUsers', 'runs']),
  narrowed(workflowEventRoutes, ['config', 'endUsers', 'runs']),
  narrowed(workflowLogRoutes, ['workflowLogs']),
  narrowed(chatMessageRoutes, ['chatflow', 'completions', 'config', 'endUsers', 'moderation', 'runs']),
  narrowed(conversationRoutes, ['chatflow', 'config', 'endUsers', 'runs']),
  narrowed(annotationRoutes, ['annotations']),
  narrowed(audioRoutes, ['audio']),
  // Dovetail's own extension, in OpenAI's wire format (its own error envelope)
  narrowed(openAiCompatibleRoutes, ['appAnswers', 'config']),
];
/** A route plugin shared with the Service API, registered with `web: true` (its web app's variant). */
function webVariant<K extends keyof Runtime>(plugin: FastifyPluginAsync<{ runtime: Pick<Runtime, K>; web?: boolean }>, deps: readonly K[]): RouteRegistration {
  return async (scope, runtime) => {
    const slice = Object.fromEntries(deps.map((k) => [k, runtime[k]])) as Pick<Runtime, K>;
    await scope.register(named(plugin), { runtime: slice, web: true });
  };
}

/**
 * Route plugins of the web app's API (`/api`, behind a passport): the Service API's own routes,
 * the end user taken from the passport instead of a `user` field.
 */
const WEB_ROUTES: readonly RouteRegistration[] = [
  narrowed(webAppInfoRoutes, ['config', 'sites']),
  webVariant(fileRoutes, ['config', 'endUsers', 'filePreviews', 'fileUrls', 'uploads']),
  narrowed(completionRoutes, ['completions', 'config']),
  narrowed(webCompletionRoutes, ['completions', 'config', 'messages', 'savedMessages']),
  webVariant(feedbackRoutes, ['config', 'feedback']),
  webVariant(suggestedQuestionRoutes, ['suggestedQuestions']),
  narrowed(workflowRoutes, ['config', 'endUsers', 'runs']),
  narrowed(workflowEventRoutes, ['config', 'endUsers', 'runs']),
  narrowed(chatMessageRoutes, ['chatflow', 'completions', 'config', 'endUsers', 'moderation', 'runs']),
  webVariant(conversationRoutes, ['chatflow', 'config', 'endUsers', 'runs']),
  narrowed(audioRoutes, ['audio']),
];
/** Route plugins that take a knowledge key (`Authorization: Bearer dataset-…`). */
const DATASET_ROUTES: readonly RouteRegistration[] = [
  narrowed(datasetRoutes, ['config', 'datasets', 'documents', 'hitTesting', 'metadata', 'pipelines', 'tags']),
  narrowed(datasetTagRoutes, ['datasets', 'tags']),
  narrowed(datasetMetadataRoutes, ['datasets', 'metadata']),
  narrowed(documentRoutes, ['config', 'datasets', 'documentDownloads', 'documents', 'documentStatus', 'metadata', 'uploads']),
  narrowed(segmentRoutes, ['config', 'datasets', 'documents', 'segments']),
  narrowed(childChunkRoutes, ['config', 'datasets', 'documents', 'childChunks']),
  narrowed(modelRoutes, ['apps', 'config', 'embedder', 'providers']),
  narrowed(pipelineRoutes, ['config', 'datasets', 'pipelines', 'uploads']),
];

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

/** How long a client may go on sending a body after an error answered it, ms. */
const UNREAD_BODY_GRACE_MS = 500;

/**
 * Fastify's own Ajv compiler, except for schema parts the handler validates (src/http/described.ts);
 * each validator is compiled on its route's first request (src/http/schema-compilers.ts).
 */
const VALIDATORS = handlerValidatedCompiler(lazyValidators());
const SERIALIZERS = lazySerializers();

/** Builds the Fastify app (not listening). Everything is registered before the first request. */
export async function buildServer(runtime: Runtime): Promise<FastifyInstance> {
  // A request must arrive whole (headers and body) within HTTP_BODY_TIMEOUT_SECONDS; Node checks
  // its connections every second (its default of 30 s would let a slow client hold one far longer).
  const bodyTimeoutMs = runtime.config.httpBodyTimeoutSeconds * 1000;
  const limits = runtime.config.httpServer;
  const { frameworkErrors, clientErrorHandler } = listenerErrors(limits, runtime.config.httpBodyTimeoutSeconds);
  const app = Fastify({
    requestTimeout: bodyTimeoutMs,
    routerOptions: { maxParamLength: limits.maxParamLength },
    http: { maxHeaderSize: limits.maxHeaderBytes, headersTimeout: bodyTimeoutMs, connectionsCheckingInterval: Math.min(1000, bodyTimeoutMs) },
    trustProxy: typeof limits.trustProxy === 'boolean' ? limits.trustProxy : [...limits.trustProxy],
    frameworkErrors,
    clientErrorHandler,
    loggerInstance: runtime.logger as unknown as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true }),
    childLoggerFactory: lazyChildLogger,
    requestIdHeader: 'x-request-id',
    genReqId: () => newId(),
    bodyLimit: 16 * 1024 * 1024,
    ajv: { customOptions: { coerceTypes: 'array', removeAdditional: true, useDefaults: true, allErrors: false } },
    schemaController: { compilersFactory: { buildValidator: VALIDATORS, buildSerializer: SERIALIZERS as never } },
  });
  releaseConnectionsOnClose(app);
  limitJsonDepth(app, limits.maxJsonDepth);
  // requests go on in slices of event-loop time, in arrival order, before they are routed (src/http/admission.ts)
  admitRequests(app.server, requestAdmission(limits.admissionSliceMs, () => runtime.metrics.httpRequestsHeld.inc()));
  declareAuthDecorations(app);
  declareDatasetDecoration(app);
  declareUserDecorations(app);
  declarePassportDecoration(app);
  declareConsoleDecorations(app);
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
    if (!runtime.tracing.enabled) return;
    // a span per request, ended when the response closes (streams included); named by route pattern
    const route = request.routeOptions.url ?? 'unmatched';
    // begun when the request arrived: a wait for its slice of the event loop included
    const startTime = performance.timeOrigin + performance.now() - admissionWaitMs(request.raw);
    const span = runtime.tracing.start(`${request.method} ${route}`, { 'http.request.method': request.method, 'http.route': route, 'dovetail.request_id': request.id }, undefined, startTime);
    reply.raw.once('close', () => {
      span.setAttributes({ 'http.response.status_code': reply.statusCode });
      if (reply.statusCode >= 500) span.fail(`HTTP ${reply.statusCode}`);
      span.end();
    });
  });
  // An error answered before the request body arrived (a bad key on an upload, a slow client):
  // the rest of the body is read and dropped as usual, but a client that has not finished sending
  // it shortly after the answer is cut off, rather than holding the connection. The grace lets a
  // normal client finish its upload and read the answer instead of a reset.
  app.addHook('onResponse', async (request, reply) => {
    if (reply.statusCode < 400 || request.raw.complete) return;
    setTimeout(() => {
      if (!request.raw.complete) request.raw.socket?.destroy();
    }, UNREAD_BODY_GRACE_MS).unref();
  });
  app.decorate('metrics', runtime.metrics);
  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url ?? 'unmatched';
    // from the request's arrival: a wait for its slice of the event loop included
    const ms = reply.elapsedTime + admissionWaitMs(request.raw);
    runtime.metrics.httpRequests.inc({ method: request.method, route, status: String(reply.statusCode) });
    runtime.metrics.httpDuration.observe({ method: request.method, route }, ms / 1000);
    // the server's logger with the request's id, as the request's own logger would write it (without making it)
    runtime.logger.info({ reqId: request.id, method: request.method, url: redactUrl(request.url), status: reply.statusCode, ms: Math.round(ms) }, 'request');
  });

  // Any origin may call the Service API and the web app's API (as Dify's); the console's own API is
  // same-origin only: no CORS headers, and a cross-origin preflight is refused (404 or 405) without an allow header.
  const openCors = { origin: '*', methods: ['GET', 'PUT', 'POST', 'DELETE', 'OPTIONS', 'PATCH'], allowedHeaders: ['Content-Type', 'Authorization', 'X-App-Code', 'X-App-Passport', 'X-Dovetail-User'] };
  const sameOriginOnly = { origin: false };
  await app.register(cors, {
    delegator: (request, callback) => callback(null, isConsoleApiPath(request.url) ? sameOriginOnly : openCors),
  });

  // Outside the upload routes a multipart body is not read: routes without a body take it as none
  // (as Dify), JSON routes answer their 415 (`requireJson`). `multipartRoutes` parses it.
  app.addContentTypeParser('multipart/form-data', (_request, _payload, done) => done(null, undefined));

  // A worker process serves only its probes and metrics; every other path is a 404 (Dify's shape).
  const servesApi = runtime.config.role !== 'worker';
  if (servesApi) await registerApiDescription(app);
  registerProbes(app, { config: runtime.config, metrics: runtime.metrics, store: runtime.store, workers: runtime.workers });
  if (!servesApi) {
    await app.ready();
    return app;
  }
  await narrowed(signedFileRoutes, ['fileUrls'])(app, runtime);
  // People-facing: no API key (the form token is the credential), limited per client address.
  await narrowed(webFormRoutes, ['apps', 'config', 'endUsers', 'forms', 'rateLimiter', 'sites', 'uploads'])(app, runtime);
  await narrowed(formPageRoutes, ['apps', 'config', 'endUsers', 'forms', 'rateLimiter', 'uploads'])(app, runtime);
  // The web app pages (a static shell and its bundle; each page reads its site through /api).
  await narrowed(webAppPageRoutes, ['logger', 'sites'])(app, runtime);
  // The console (issue #44): its page, and its JSON API behind a log-in (src/http/console/).
  await narrowed(consolePageRoutes, ['logger'])(app, runtime);
  await registerConsoleApi(app, runtime);

  // The web app's API (Dify's `/api`): a passport from the site's code, then requests for its end user.
  await app.register(
    named(async (web) => {
      await narrowed(passportRoutes, ['apps', 'config', 'endUsers', 'passports', 'rateLimiter', 'sites'])(web, runtime);
      await web.register(named(async (scope) => {
        scope.addHook('onRequest', webAuth({ apps: runtime.apps, endUsers: runtime.endUsers, passports: runtime.passports, sites: runtime.sites }));
        // Dify's web app sends stop, delete and pin without a body: taken as an empty JSON object
        limitJsonDepth(scope, limits.maxJsonDepth, { emptyIsNone: true });
        scope.addHook('preValidation', async (request) => {
          if (request.body !== undefined || request.method === 'GET' || request.headers['content-type']?.startsWith('multipart/')) return;
          request.body = {};
          request.headers['content-type'] = 'application/json';
        });
        for (const register of WEB_ROUTES) await register(scope, runtime);
      }, 'web-app-api-auth'));
    }, 'web-app-api'),
    { prefix: '/api' },
  );
  // Apps published as MCP servers: no API key (the server code in the path is the credential), as Dify.
  await narrowed(mcpServerRoutes, ['mcpServers'])(app, runtime);
  // Webhook triggers: no API key (the webhook id in the path is the credential), as Dify.
  await narrowed(webhookTriggerRoutes, ['apps', 'config', 'endUsers', 'rateLimiter', 'runs', 'triggers', 'uploads'])(app, runtime);

  await app.register(
    named(async (v1) => {
      await v1.register(named(async (scope) => {
        scope.addHook('onRequest', appAuth({ apps: runtime.apps, keys: runtime.keys }));
        for (const register of APP_ROUTES) await register(scope, runtime);
      }, 'service-api-apps'));
      await v1.register(named(async (scope) => {
        scope.addHook('onRequest', datasetAuth({ keys: runtime.keys }));
        for (const register of DATASET_ROUTES) await register(scope, runtime);
      }, 'service-api-datasets'));
    }, 'service-api'),
    { prefix: '/v1' },
  );
  await app.ready();
  return app;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** The runtime's Prometheus metrics (SSE streams count themselves in). */
    metrics: Metrics;
  }
}

/** Whether a request path is under `/console/api` (the console's same-origin JSON API). */
export function isConsoleApiPath(url: string): boolean {
  const path = url.split('?', 1)[0]!;
  return path === '/console/api' || path.startsWith('/console/api/');
}
