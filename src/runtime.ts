import type { Config } from './config.js';
import { openStore, type Store } from './store/db.js';
import { AppStats } from './console/app-stats.js';
import { AppService } from './apps/app-service.js';
import { AppStore } from './apps/app-store.js';
import { KeyService } from './apps/key-service.js';
import { EndUserService } from './apps/end-users.js';
import { openBlobs } from './files/blobs/open-blobs.js';
import type { Blobs } from './files/blobs/blobs.js';
import { FilePreviewService } from './files/file-preview.js';
import { FileUrls } from './files/file-urls.js';
import { ServerKeys } from './infra/server-keys.js';
import { SiteService } from './apps/site-service.js';
import { SavedMessages } from './messages/saved-messages.js';
import { PassportService, PASSPORT_KEY } from './apps/passport-service.js';
import { SecretBox } from './infra/secret-box.js';
import { DocumentDownloads } from './knowledge/documents/document-downloads.js';
import { UploadService } from './files/upload-service.js';
import { systemClock, type Clock } from './infra/clock.js';
import { createLogger, type Logger } from './infra/logger.js';
import type { Bus } from './infra/bus/bus.js';
import { MemoryBus } from './infra/bus/memory-bus.js';
import { RunService } from './runs/run-service.js';
import { TriggerService, scheduleGraphValidator } from './triggers/triggers.js';
import { TriggerStore } from './triggers/trigger-store.js';
import { ChatflowService } from './runs/chatflow-service.js';
import { WorkflowLogs } from './runs/workflow-logs.js';
import { TraceService } from './runs/run-trace.js';
import { MessageLogs } from './messages/message-logs.js';
import { engineGraphValidator } from './apps/engine-graph-validator.js';
import type { ModelProviders } from './llm/model-provider.js';
import { ProviderRegistry } from './llm/provider-registry.js';
import { MessageStore } from './messages/message-store.js';
import { TaskRegistry } from './messages/task-registry.js';
import { CompletionService } from './messages/completion-service.js';
import { AppDatasetRetrieval } from './messages/dataset-retrieval.js';
import { rerankHits } from './knowledge/retrieval/rerank.js';
import { MessageLeases } from './messages/message-leases.js';
import { ConversationStore } from './messages/conversation-store.js';
import { AgentThoughtStore } from './messages/agent-thoughts.js';
import { AudioService } from './audio/audio-service.js';
import { SuggestedQuestionsService } from './messages/suggested-questions-service.js';
import { ActiveRequests, type ActiveRequestLimiter } from './infra/active-requests.js';
import { MemoryRateLimiter, type RateLimiter } from './infra/rate-limit.js';
import { AccountService } from './accounts/account-service.js';
import { ConsoleAuthService } from './console/console-auth-service.js';
import { FeedbackStore } from './feedback/feedback-store.js';
import { FeedbackService } from './feedback/feedback-service.js';
import type { FormService } from './forms/form-service.js';
import type { FormRecipients } from './forms/form-recipients.js';
import type { HumanInputGateway, RunResumer } from './forms/human-input-port.js';
import type { Queue } from './infra/queue/queue.js';
import { createQueue } from './infra/queue/create-queue.js';
import { WorkerPresence } from './infra/worker-presence.js';
import { TextOffload } from './text/offload.js';
import { newId } from './infra/ids.js';
import { DocumentParser } from './knowledge/ingest/parse/document-parser.js';
import { GuardedHttpRequester } from './outbound/http-requester.js';
import { builtinToolRegistry } from './tools/tool-registry.js';
import { WorkflowTools } from './tools/workflow/workflow-tools.js';
import { runWorkflowForTool } from './runs/workflow-tool-runner.js';
import { UploadToolFiles } from './files/tool-files.js';
import type { AnnotationService } from './annotations/annotation-service.js';
import { appModelProviders, importWarnings, type AppProviderStatus } from './apps/import-check.js';
import { ModerationService } from './moderation/moderation-service.js';
import { createPublish, type Publish } from './composition/publish.js';
import { ApiExtensionClient } from './moderation/api-extension-client.js';
import { missingPythonModules, processModuleAdvice } from './code/python-modules.js';
import { UploadRunFiles } from './files/run-files.js';
import type { App } from './apps/app-service.js';
import type { ImportWarning } from './engine/types.js';
import { Metrics } from './infra/metrics.js';
import { NO_TRACING, otlpTracing, type Tracing } from './infra/tracing.js';
import { RunStore } from './runs/run-store.js';
import { createCodeSandbox } from './composition/code-sandbox.js';
import { createForms } from './composition/forms.js';
import { createKnowledge, type Knowledge } from './composition/knowledge.js';

/** Everything the HTTP layer and the CLI use, built once from config. */
export interface Runtime extends Omit<Knowledge, 'retriever'> {
  readonly config: Config;
  /** Prometheus metrics of this process (`GET /metrics`). */
  readonly metrics: Metrics;
  /** Spans per request, run, node and model call when `OTEL_EXPORTER_OTLP_ENDPOINT` is set. */
  readonly tracing: Tracing;
  readonly logger: Logger;
  /** CPU-bound text work (token counting, chunking), off the event loop when large. */
  readonly offload: TextOffload;
  readonly clock: Clock;
  /**
   * Reads the apps in the background, starting the code sandboxes their code nodes need, and warns
   * about unsafe code execution (`serve` calls it once it listens; one-shot commands and in-process
   * servers start a worker on first use).
   */
  warmWorkers(): void;
  /** Starts the code sandbox's workers and resolves when they are up (benchmarks, tests). */
  codeSandboxReady(): Promise<void>;
  readonly store: Store;
  readonly blobs: Blobs;
  readonly apps: AppService;
  /** What an imported app names that this server cannot serve yet (`app import` / `app check` warnings). */
  appWarnings(app: App): Promise<ImportWarning[]>;
  /** The model providers an app names and whether each can be called here (the console's app page). */
  appProviders(app: App): AppProviderStatus[];
  /** Sensitive-word moderation and Dify's API-based extensions (the chat generators use it for chatflows). */
  readonly moderation: ModerationService;
  readonly keys: KeyService;
  readonly endUsers: EndUserService;
  /** Every app's web app: its code, on/off, settings and share link. */
  readonly sites: SiteService;
  /** Web-app passports (`GET /api/passport`): signed end-user tokens. */
  readonly passports: PassportService;
  /** The web app's saved messages (completion answers an end user keeps). */
  readonly savedMessages: SavedMessages;
  readonly uploads: UploadService;
  /** `GET /files/{id}/preview`: uploads read back through the app whose messages carry them. */
  readonly filePreviews: FilePreviewService;
  /** Signed, key-less file URLs and the files behind them. */
  readonly fileUrls: FileUrls;
  /** Model providers by DSL provider name, alias or plugin id (the table in `src/llm/provider-table.ts`, `providers:` of dovetail.yaml). */
  readonly providers: ModelProviders;
  /** Messages of completion, chat and chatflow apps. */
  readonly messages: MessageStore;
  /** Generations in flight, for stop. */
  readonly tasks: TaskRegistry;
  /** Per-app concurrent generation slots. */
  readonly activeRequests: ActiveRequestLimiter;
  readonly completions: CompletionService;
  /** One query of a chat-type or completion app answered for the OpenAI-compatible endpoint and MCP. */
  readonly appAnswers: Publish['appAnswers'];
  /** Apps published as MCP servers (`/mcp/server/{code}/mcp`). */
  readonly mcpServers: Publish['mcpServers'];
  /** Follow-up questions after an answer (`GET /messages/{id}/suggested`). */
  readonly suggestedQuestions: SuggestedQuestionsService;
  /** `POST /audio-to-text`, `POST /text-to-audio`. */
  readonly audio: AudioService;
  readonly feedback: FeedbackService;
  /** The console's monitoring figures per day (`src/console/app-stats.ts`). */
  readonly appStats: AppStats;
  /** Human Input forms; also the engine's HumanInputGateway. */
  readonly forms: FormService;
  /** Workspace members (feedback accounts, Human Input email recipients, console log-ins). */
  readonly accounts: AccountService;
  /** Console log-in, sessions and their CSRF tokens (`/console/api`). */
  readonly consoleAuth: ConsoleAuthService;
  /** Email recipients of forms and their sending state. */
  readonly formRecipients: FormRecipients;
  /** Per-client-address counters of the web form API and pages (Redis when `REDIS_URL` is set). */
  readonly rateLimiter: RateLimiter;
  /** Binds the run side that forms resume (done by the composition root once runs exist). */
  bindRunResumer(r: RunResumer): void;
  /** Run events doorbell and stop signals (in-process, or Redis when `REDIS_URL` is set). */
  readonly bus: Bus;
  /** Workflow / chatflow runs; also the `RunResumer` the Human Input form store calls. */
  readonly runs: RunService;
  /** Chatflow messages and conversations. */
  readonly chatflow: ChatflowService;
  /** Workflow triggers: webhook ids and URLs, schedules and their poller, pause and resume. */
  readonly triggers: TriggerService;
  /** `GET /workflows/logs`: a workflow app's API runs, newest first, by page. */
  readonly workflowLogs: WorkflowLogs;
  /** The console's logs of chat-type and completion apps: conversations, messages, feedback (issue #44). */
  readonly messageLogs: MessageLogs;
  /** The console's run trace: a run's node executions on a timeline, from its event log (issue #44). */
  readonly runTraces: TraceService;
  /**
   * The Human Input gateway the `human-input` node asks (src/forms plugs itself in here, or passes
   * `humanInput` to `createRuntime`). Unset: runs reaching a human-input node fail with a clear error.
   */
  humanInput: HumanInputGateway | undefined;
  /** Durable background jobs (see src/infra/queue/queue.ts). */
  readonly queue: Queue;
  /** The deployment's job workers, from their heartbeats (`/ready`, `/metrics`). */
  readonly workers: WorkerPresence;
  readonly documentDownloads: DocumentDownloads;
  /** Stops background work and closes connections. */
  close(): Promise<void>;
}

export interface RuntimeOptions {
  readonly logger?: Logger;
  readonly clock?: Clock;
  /** Replaces the provider registry built from config (tests point it at a local upstream). */
  readonly providers?: ModelProviders;
  /** Replaces the Human Input gateway (default: the form service, `runtime.forms`); also settable as `runtime.humanInput`. */
  readonly humanInput?: HumanInputGateway;
  /** Overrides the bus chosen from config (tests). */
  readonly bus?: Bus;
}

/** Composition root: picks implementations from config and wires the services. */
export async function createRuntime(config: Config, opts: RuntimeOptions = {}): Promise<Runtime> {
  const logger = opts.logger ?? createLogger(config.logLevel);
  const clock = opts.clock ?? systemClock;
  // A Redis that cannot be reached is a start-up error (the clients below would retry for ever)
  if (config.redisUrl) await (await import('./infra/redis-check.js')).checkRedis(config.redisUrl, config.redisConnectTimeoutSeconds);
  const storage = await openBlobs(config.storage, config.dataDir);
  const blobs = storage.blobs;
  const store = await openStore(config).catch(async (err: unknown) => {
    await storage.close();
    throw err;
  });
  const serverKeys = new ServerKeys({ db: store.db, clock, secretKey: config.fileUrls.secretKey });
  const secretBox = new SecretBox(serverKeys);
  const appStore = new AppStore(store.db);
  const apps = new AppService(appStore, clock, secretBox, { changeStamp: store.caps.changeStamp });
  const endUsers = new EndUserService(store.db, clock);
  const uploads = new UploadService(store.db, blobs, config.upload, clock);
  const fileUrls = new FileUrls({ keys: serverKeys, config: config.fileUrls, clock, uploads, blobs });
  const closers: (() => Promise<void>)[] = [];
  const offload = new TextOffload(config.text, logger);
  closers.push(() => offload.close());
  // knowledge documents and document-extractor nodes are parsed on worker threads, within limits
  const parser = new DocumentParser(config.parse, logger);
  closers.push(() => parser.close());
  const tracing = config.otelEndpoint ? await otlpTracing({ endpoint: config.otelEndpoint, serviceName: config.otelServiceName }) : NO_TRACING;
  const workers = new WorkerPresence({ db: store.db, clock, logger, heartbeatMs: config.workers.heartbeatMs, runsWorker: config.queue.worker, role: config.role });
  const metrics = new Metrics({
    runsByStatus: () => new RunStore(store.db).countByStatus(),
    jobsByStatus: () => queue.counts(),
    // read at scrape time, once the sandboxes below exist
    codeSandboxWorkers: () => code.workers(),
    workers: () => workers.status(),
  });
  const providers = metrics.instrumentProviders(new ProviderRegistry(config.providers), tracing);
  const modelProviders = opts.providers ? metrics.instrumentProviders(opts.providers, tracing) : providers;
  const conversationStore = new ConversationStore(store.db);
  const messages = new MessageStore(store.db, conversationStore);
  const feedbackStore = new FeedbackStore(store.db);
  // The Redis parts (ioredis) are loaded only when REDIS_URL is set.
  const redis = config.redisUrl
    ? await Promise.all([import('./infra/bus/redis-bus.js'), import('./infra/redis-active-requests.js'), import('./infra/redis-rate-limit.js')]).then(([bus, active, rate]) => ({ url: config.redisUrl!, ...bus, ...active, ...rate }))
    : undefined;
  const bus: Bus = opts.bus ?? (redis ? new redis.RedisBus(redis.url, config.redisKeyPrefix, logger) : new MemoryBus());
  closers.push(() => bus.close());
  // Found keys are cached only where every instance hears a revocation (see KeyService).
  const keys = new KeyService(appStore, clock, { cacheFound: bus.shared, changeStamp: store.caps.changeStamp });
  closers.push(await keys.listen(bus));
  const tasks = new TaskRegistry(bus);
  await tasks.listen();
  closers.push(() => tasks.close());
  const activeRequests: ActiveRequestLimiter = redis ? new redis.RedisActiveRequests(redis.url, logger, { prefix: `${config.redisKeyPrefix}active:` }) : new ActiveRequests();
  closers.push(() => activeRequests.close());
  // Chat apps find conversations the way chatflows do (the chatflow service is built below).
  const conversations = { conversation: (appId: string, endUserId: string, id: string) => chatflow.conversation(appId, endUserId, id) };
  // Annotation reply is built with the knowledge side below; chat apps reach it through this holder.
  const annotationPort: { current: AnnotationService | undefined } = { current: undefined };
  const annotationReplier = {
    match: async (appId: string, query: string) => annotationPort.current?.match(appId, query),
    recordHit: async (h: Parameters<AnnotationService['recordHit']>[0]) => annotationPort.current?.recordHit(h),
  };
  // workflow tools run apps through the run service, which is built below with the registry
  let workflowTools: WorkflowTools | undefined;
  const toolRuntime = builtinToolRegistry(config.tools, config.ssrfAllowHosts, config.tools.mcpServers, {
    files: new UploadToolFiles({ uploads, urls: fileUrls, workspaceId: () => apps.workspaceId() }),
    workflows: () => workflowTools,
  });
  closers.push(() => toolRuntime.close());
  const agentThoughts = new AgentThoughtStore(store.db);
  const leases = new MessageLeases({ messages, clock, logger, config: config.messages, activeRequests, observeCleanUp: (s) => metrics.takeoverDelay.observe({ what: 'message' }, s) });
  closers.push(async () => leases.close());
  const moderation = new ModerationService({
    config: config.moderation,
    providers: modelProviders,
    extensions: new ApiExtensionClient(config.moderation, config.ssrfAllowHosts),
    logger,
  });
  const completions = new CompletionService({
    moderation,
    leases,
    config,
    clock,
    logger,
    providers: modelProviders,
    messages,
    endUsers,
    uploads,
    tasks,
    activeRequests,
    conversations,
    annotations: annotationReplier,
    offload,
    tools: toolRuntime,
    thoughts: agentThoughts,
    // the apps' datasets are searched through the knowledge port the workflow engine uses (made below)
    datasets: new AppDatasetRetrieval({
      knowledge: () => knowledge?.retriever,
      providers: modelProviders,
      // `reranking_mode: reranking_model` of dataset_configs: the rerank model the knowledge-retrieval node uses
      rerank: async (query, hits, settings, topK, signal) => {
        if (knowledge === undefined) return hits;
        const model = { provider: settings.model.provider, model: settings.model.name };
        const out = await rerankHits(hits, query, { enabled: true, mode: 'reranking_model', model, weights: null }, { reranker: knowledge.reranker, signal }, { topK, scoreThreshold: null });
        if (out.note !== null) logger.warn({ provider: model.provider, model: model.model }, `dataset_configs: ${out.note}`);
        return out.hits;
      },
    }),
  });
  const feedback = new FeedbackService(feedbackStore, messages, endUsers, clock);
  // Forms resume runs and runs ask forms for decisions: the run side is bound once it exists.
  const resumer: { current: RunResumer | undefined } = { current: undefined };
  // Made here because forms enqueue their mail jobs; closed where it always was (after the run side, below).
  const queue = await createQueue(store.db, clock, logger, config.queue, { url: config.redisUrl, keyPrefix: config.redisKeyPrefix });
  const { forms, formRecipients, close: closeMail } = await createForms({
    db: store.db,
    apps: appStore,
    queue,
    clock,
    logger,
    config,
    uploads,
    endUsers,
    box: secretBox,
    resumer: () => {
      if (!resumer.current) throw new Error('no run resumer is bound to the form service');
      return resumer.current;
    },
  }, appStore);
  closers.push(closeMail);
  await leases.scheduleSweep(queue);
  const rateLimiter: RateLimiter = redis ? new redis.RedisRateLimiter(redis.url, `${config.redisKeyPrefix}ratelimit:`, logger) : new MemoryRateLimiter(() => clock.now());
  closers.push(() => rateLimiter.close());
  apps.addGraphValidator(engineGraphValidator);
  const code = createCodeSandbox(config, apps, logger);
  closers.push(() => code.close());
  let knowledge: Knowledge | undefined;
  // http-request nodes of workflow runs and of knowledge pipelines, behind the SSRF guard
  const guardedHttp = new GuardedHttpRequester({ allowHosts: config.ssrfAllowHosts, ...config.httpRequest });
  const runs = new RunService({
    db: store.db,
    outputModeration: (app, onReplace) => moderation.outputModeration(app, onReplace),
    messages,
    conversations: conversationStore,
    endUsers,
    bus,
    clock,
    logger,
    config: { ...config.runs, codeOutputs: config.code },
    providers: () => modelProviders,
    findApp: (id) => apps.find(id),
    findAppVersion: (id, version) => apps.findVersion(id, version),
    humanInput: opts.humanInput ?? forms,
    knowledge: () => knowledge?.retriever,
    code: code.executor,
    templates: code.templates,
    http: guardedHttp,
    priceOf: (model) => config.prices[model],
    observeTakeover: (s) => metrics.takeoverDelay.observe({ what: 'run' }, s),
    files: new UploadRunFiles({ uploads, limits: config.upload, allowHosts: config.ssrfAllowHosts, parser }),
    tools: toolRuntime,
    tracing,
    queue,
    flushHoldLimitMs: store.caps.rowLocks ? config.runs.leaseMs : undefined,
    // an api-only process leaves every run to the workers; a process that runs everything but no
    // job worker (QUEUE_WORKER=false) executes the runs it starts itself
    executesJobs: config.queue.worker || config.role === 'api',
  });
  workflowTools = new WorkflowTools({
    findApp: (id) => apps.find(id),
    // the inner run belongs to the inner app's end user of the same `user` (end users are per app)
    run: async (app, inputs, caller, depth, signal) => runWorkflowForTool(runs, app, inputs, { ...caller, endUserId: (await endUsers.getOrCreate(app.id, caller.user)).id }, depth, signal),
    maxDepth: config.tools.workflowCallMaxDepth,
  });
  await runs.startBackground();
  closers.push(() => runs.close());
  const triggers = new TriggerService({ store: new TriggerStore(store.db), apps, runs, endUsers, clock, logger, config: config.triggers });
  apps.addGraphValidator(scheduleGraphValidator);
  apps.addStoredListener((app) => triggers.sync(app));
  await triggers.schedulePoller(queue);
  const chatflow = new ChatflowService(
    {
      db: store.db,
      messages,
      conversations: conversationStore,
      feedback: feedbackStore,
      variables: runs.conversationVariables,
      thoughts: agentThoughts,
      files: { find: (id) => uploads.find(id), sign: (id, origin) => fileUrls.sign(id, origin, false) },
    },
    clock,
    runs,
    annotationReplier,
  );
  resumer.current = runs;
  closers.push(() => queue.close());
  knowledge = await createKnowledge({
    config,
    store,
    apps: appStore,
    clock,
    logger,
    metrics,
    queue,
    uploads,
    offload,
    parser,
    providers: () => modelProviders,
    box: secretBox,
    findMessage: (id) => messages.find(id),
    // a pipeline reads its workspace's app-less uploads (`POST /datasets/pipeline/file-upload`)
    pipelineFiles: new UploadRunFiles({ uploads, limits: config.upload, allowHosts: config.ssrfAllowHosts, parser, owns: (f, workspaceId) => f.appId === null && f.workspaceId === workspaceId }),
    pipelineTools: () => toolRuntime,
    pipelinePorts: () => ({
      providers: modelProviders,
      code: code.executor,
      templates: code.templates,
      http: guardedHttp,
      priceOf: (model) => config.prices[model],
      limits: { loopMaxCount: config.runs.loopMaxCount, iterationMaxItems: config.runs.iterationMaxItems, iterationMaxParallel: config.runs.iterationMaxParallel, code: config.code, agentMaxIterations: config.runs.agentMaxIterations },
      now: () => clock.now(),
      newId,
      sleep: (ms, signal) =>
        new Promise<void>((resolve) => {
          const t = setTimeout(resolve, ms);
          signal.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
        }),
    }),
  });
  // the retriever serves the workflow engine (above), not the runtime's callers
  const { retriever: _retriever, ...knowledgeServices } = knowledge;
  const { hits, annotations } = knowledge;
  closers.push(() => hits.flush());
  annotationPort.current = annotations;
  queue.start();
  await workers.start();
  closers.push(() => workers.close());
  const importDeps = {
    providers: () => modelProviders,
    rerankProblem: (provider: string) => knowledge.reranker.problem(provider),
    missingDatasets: (ids: readonly string[], workspaceId: string) => knowledge.datasets.missing(workspaceId, ids),
    missingPythonModules: (names: readonly string[]) => missingPythonModules(code.executor, names),
    pythonSetting: config.code.mode === 'sandbox' ? 'CODE_PYTHON_PACKAGES_DIR' : 'CODE_PYTHON_COMMAND',
    missingModuleAdvice: (m: string) => code.executor.missingModuleAdvice?.(m) ?? processModuleAdvice(m),
    tools: () => toolRuntime,
    apiBasedExtensions: config.moderation.extensions,
  };
  const publish = createPublish({ config, store, clock, apps, completions, chatflow, moderation, runs, messages, endUsers });
  return {
    ...knowledgeServices,
    ...publish,
    // The text worker is not started here: it starts with the first text large enough for it
    // (`TOKENIZER_WORKER_MIN_CHARS`), so an idle server holds no second V8 heap (docs/speed.md).
    warmWorkers: () => code.warm(),
    codeSandboxReady: () => code.ready(),
    config,
    logger,
    clock,
    metrics,
    tracing,
    store,
    blobs,
    apps,
    appWarnings: (app) => importWarnings(app.dsl, app.workspaceId, importDeps),
    appProviders: (app) => appModelProviders(app.dsl, importDeps),
    moderation,
    keys,
    endUsers,
    sites: new SiteService(store.db, clock, config.webForms.appWebUrl, config.webApp.siteSettingMaxChars),
    savedMessages: new SavedMessages({ db: store.db, clock, messages, ratings: (ids) => feedbackStore.userRatings(ids), files: { find: (id) => uploads.find(id), sign: (id, origin) => fileUrls.sign(id, origin, false) } }),
    passports: new PassportService({ key: () => serverKeys.key(PASSPORT_KEY), clock, ttlSeconds: config.webApp.passportTtlSeconds }),
    uploads,
    filePreviews: new FilePreviewService(uploads, blobs, messages),
    fileUrls,
    providers,
    messages,
    tasks,
    activeRequests,
    completions,
    suggestedQuestions: new SuggestedQuestionsService({ config: config.suggestedQuestions, logger, providers: modelProviders, messages, endUsers, offload }),
    audio: new AudioService({ config: config.audio, providers: modelProviders, messages, endUsers }),
    feedback,
    appStats: new AppStats(store.db),
    forms,
    offload,
    formRecipients,
    accounts: new AccountService(store.db, clock, { minLength: config.console.passwordMinLength, maxLength: config.console.passwordMaxLength }),
    consoleAuth: new ConsoleAuthService({ db: store.db, apps, clock, rateLimiter, settings: config.console }),
    rateLimiter,
    bindRunResumer(r) {
      resumer.current = r;
    },
    bus,
    runs,
    chatflow,
    triggers,
    workflowLogs: new WorkflowLogs(store.db),
    messageLogs: new MessageLogs(store.db, config.consoleLogs),
    runTraces: new TraceService(store.db, { maxEvents: config.consoleLogs.traceMaxEvents }),
    get humanInput() {
      return runs.humanInput;
    },
    set humanInput(gateway: HumanInputGateway | undefined) {
      runs.setHumanInputGateway(gateway);
    },
    queue,
    workers,
    documentDownloads: new DocumentDownloads({ documents: knowledge.documents, urls: fileUrls, blobs, zipMaxDocuments: config.knowledge.downloadZipMaxDocuments }),
    async close() {
      for (const c of closers.reverse()) await c();
      await store.destroy();
      await storage.close();
      await tracing.close();
    },
  };
}
