import path from 'node:path';
import { ConfigError } from './config-error.js';
import os from 'node:os';
import { DEFAULT_DATABASE_POOL_SIZE, DEFAULT_PARSE_LIMITS, DEFAULT_SSE_MAX_BUFFERED_BYTES, DEFAULT_SSE_PING_INTERVAL_MS, DEFAULT_TOKENIZER_MAX_PIECE_CHARS, defaultSqliteMmapMb } from './config/defaults.js';
import type { ModelPrice } from './lib/usage.js';
import { readToolsConfig } from './tools/tool-config.js';
import { readModerationConfig } from './moderation/moderation-config.js';
import { MB, int, positiveNumber, queueRunner, concurrencyByKind, codeMode, pathOrUndefined, snapshotDir, str, messageLeasesOf, list, trustProxy, modelRef, readFileConfig, readPrices, providersOf, storageOf, mailOf, configFile, type Env } from './config/env-config.js';
import { parseRole, type Config } from './config/config-types.js';
import { DEFAULT_VECTOR_SEARCH, type VectorSearchOptions } from './knowledge/index/vector-index.js';

export { ConfigError };
export type { ModelPrice };
export { configFile } from './config/env-config.js';
export { PROCESS_ROLES, parseRole } from './config/config-types.js';
export type { UploadLimits, FileUrlConfig, HttpServerConfig, ProcessRole, Config, CodeConfig, SuggestedQuestionsConfig, AudioConfig, KnowledgeConfig } from './config/config-types.js';

/** A true/false setting; anything else is refused naming it. */
function flag(raw: string | undefined, key: string, fallback: boolean): boolean {
  if (raw === undefined || raw.trim() === '') return fallback;
  const v = raw.trim().toLowerCase();
  if (v !== 'true' && v !== 'false') throw new ConfigError(`${key} must be true or false, got "${raw}"`);
  return v === 'true';
}

/** Builds the one typed config from env (and an optional `dovetail.yaml`); throws ConfigError naming a bad key. */
export function loadConfig(env: Env = process.env, overrides: Partial<Config> = {}): Config {
  const file = readFileConfig(env);
  const dataDir = path.resolve(str(env, file, 'DOVETAIL_DATA_DIR') ?? './data');
  const databaseUrl = str(env, file, 'DATABASE_URL');
  if (databaseUrl && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError(`DATABASE_URL must be a postgres:// URL (leave it unset for the embedded SQLite), got "${databaseUrl.replace(/\/\/[^@]*@/, '//***@')}"`);
  }
  const role = overrides.role ?? parseRole(str(env, file, 'DOVETAIL_ROLE'), 'DOVETAIL_ROLE');
  const queueWorker = (str(env, file, 'QUEUE_WORKER') ?? 'true') !== 'false';
  if (role === 'worker' && !queueWorker) throw new ConfigError('QUEUE_WORKER=false contradicts DOVETAIL_ROLE=worker (a worker process runs the job worker); unset one of them');
  const config: Config = {
    role,
    port: int(env, file, 'PORT', 5001),
    host: str(env, file, 'HOST') ?? '0.0.0.0',
    dataDir,
    databaseUrl,
    databaseSchema: str(env, file, 'DATABASE_SCHEMA'),
    databasePoolSize: int(env, file, 'DATABASE_POOL_SIZE', DEFAULT_DATABASE_POOL_SIZE, 1),
    sqliteMmapMb: int(env, file, 'SQLITE_MMAP_MB', defaultSqliteMmapMb(os.totalmem()), 0),
    redisUrl: str(env, file, 'REDIS_URL'),
    redisKeyPrefix: str(env, file, 'REDIS_KEY_PREFIX') ?? 'dovetail:',
    redisConnectTimeoutSeconds: int(env, file, 'REDIS_CONNECT_TIMEOUT_SECONDS', 5, 1),
    storage: storageOf(env, file),
    logLevel: str(env, file, 'LOG_LEVEL') ?? 'info',
    metricsToken: str(env, file, 'METRICS_TOKEN'),
    otelEndpoint: str(env, file, 'OTEL_EXPORTER_OTLP_ENDPOINT'),
    otelServiceName: str(env, file, 'OTEL_SERVICE_NAME') ?? 'dovetail',
    upload: {
      fileBytes: int(env, file, 'UPLOAD_FILE_SIZE_LIMIT', 15, 1) * MB,
      imageBytes: int(env, file, 'UPLOAD_IMAGE_FILE_SIZE_LIMIT', 10, 1) * MB,
      videoBytes: int(env, file, 'UPLOAD_VIDEO_FILE_SIZE_LIMIT', 100, 1) * MB,
      audioBytes: int(env, file, 'UPLOAD_AUDIO_FILE_SIZE_LIMIT', 50, 1) * MB,
      extensionBlacklist: list(str(env, file, 'UPLOAD_FILE_EXTENSION_BLACKLIST'), [
        'exe', 'bat', 'cmd', 'com', 'scr', 'vbs', 'ps1', 'msi', 'dll', 'sh', 'jar',
      ]),
      workflowFileUploadLimit: int(env, file, 'WORKFLOW_FILE_UPLOAD_LIMIT', 10, 1),
    },
    fileUrls: {
      baseUrl: str(env, file, 'FILES_URL')?.replace(/\/+$/, ''),
      accessTimeoutSeconds: int(env, file, 'FILES_ACCESS_TIMEOUT', 300, 1),
      secretKey: str(env, file, 'SECRET_KEY'),
    },
    httpServer: {
      maxParamLength: int(env, file, 'HTTP_MAX_PARAM_LENGTH', 100, 1),
      maxHeaderBytes: int(env, file, 'HTTP_MAX_HEADER_SIZE', 16384, 1024),
      admissionSliceMs: int(env, file, 'HTTP_ADMISSION_SLICE_MS', 5),
      trustProxy: trustProxy(str(env, file, 'TRUST_PROXY')),
      maxJsonDepth: int(env, file, 'REQUEST_MAX_JSON_DEPTH', 100, 2),
      sseMaxBufferedBytes: int(env, file, 'SSE_MAX_BUFFERED_BYTES', DEFAULT_SSE_MAX_BUFFERED_BYTES, 1024),
    },
    maxActiveRequests: int(env, file, 'APP_MAX_ACTIVE_REQUESTS', 0),
    httpBodyTimeoutSeconds: int(env, file, 'HTTP_BODY_TIMEOUT_SECONDS', 30, 1),
    chatMemoryMaxTokens: int(env, file, 'CHAT_MEMORY_MAX_TOKENS', 2000),
    ssrfAllowHosts: list(str(env, file, 'SSRF_ALLOW_HOSTS'), []),
    providers: providersOf(env, file),
    moderation: readModerationConfig(env, file),
    appMaxExecutionSeconds: int(env, file, 'APP_MAX_EXECUTION_TIME', 1200, 1),
    ssePingIntervalMs: int(env, file, 'SSE_PING_INTERVAL_MS', DEFAULT_SSE_PING_INTERVAL_MS, 10),
    feedbackListMaxLimit: int(env, file, 'FEEDBACK_LIST_MAX_LIMIT', 101, 1),
    annotationListMaxLimit: int(env, file, 'ANNOTATION_LIST_MAX_LIMIT', 100, 1),
    consoleLogs: {
      searchMessages: int(env, file, 'CONSOLE_LOG_SEARCH_MESSAGES', 10_000, 1),
      keywordMaxChars: int(env, file, 'CONSOLE_LOG_KEYWORD_MAX_CHARS', 200, 1),
      countLimit: int(env, file, 'CONSOLE_LOG_COUNT_LIMIT', 10_000, 1),
      maxLimit: int(env, file, 'CONSOLE_LOG_MAX_LIMIT', 100, 1),
      traceMaxEvents: int(env, file, 'CONSOLE_TRACE_MAX_EVENTS', 5000, 10),
    },
    annotationQuestionMaxChars: int(env, file, 'ANNOTATION_QUESTION_MAX_CHARS', 1000, 1),
    annotationMatchTimeoutMs: int(env, file, 'ANNOTATION_MATCH_TIMEOUT_MS', 5000, 1),
    annotationImportMaxRecords: int(env, file, 'ANNOTATION_IMPORT_MAX_RECORDS', 10_000, 1),
    annotationImportMaxBytes: int(env, file, 'ANNOTATION_IMPORT_FILE_SIZE_LIMIT', 2, 1) * MB,
    prices: readPrices(file),
    humanInputGlobalTimeoutSeconds: int(env, file, 'HUMAN_INPUT_GLOBAL_TIMEOUT_SECONDS', 604_800, -1),
    humanInputScanIntervalMs: int(env, file, 'HUMAN_INPUT_TIMEOUT_SCAN_MS', 5000, 100),
    consoleStatsMaxDays: int(env, file, 'CONSOLE_STATS_MAX_DAYS', 366, 1),
    humanInputUploadSweepSeconds: int(env, file, 'HUMAN_INPUT_UPLOAD_SWEEP_SECONDS', 300, 1),
    seedExamples: (str(env, file, 'DOVETAIL_SEED_EXAMPLES') ?? 'true') !== 'false',
    shutdownTimeoutSeconds: int(env, file, 'SHUTDOWN_TIMEOUT_SECONDS', 8, 0),
    runs: {
      maxSteps: int(env, file, 'WORKFLOW_MAX_EXECUTION_STEPS', 500, 1),
      maxTimeMs: int(env, file, 'WORKFLOW_MAX_EXECUTION_TIME', 1200, 1) * 1000,
      concurrency: int(env, file, 'RUN_CONCURRENCY', 1000, 1),
      leaseMs: int(env, file, 'RUN_LEASE_SECONDS', 5, 1) * 1000,
      loopMaxCount: int(env, file, 'LOOP_NODE_MAX_COUNT', 100, 1),
      iterationMaxItems: int(env, file, 'MAX_ITERATIONS_NUM', 99, 1),
      iterationMaxParallel: int(env, file, 'ITERATION_MAX_PARALLEL', 10, 1),
      agentMaxIterations: int(env, file, 'AGENT_MAX_ITERATIONS', 50, 1),
      queueWaitSeconds: int(env, file, 'RUN_QUEUE_WAIT_SECONDS', 120, 0),
    },
    workers: {
      heartbeatMs: int(env, file, 'WORKER_HEARTBEAT_SECONDS', 5, 1) * 1000,
      readyRequiresWorker: flag(str(env, file, 'READY_REQUIRES_WORKER'), 'READY_REQUIRES_WORKER', false),
    },
    suggestedQuestions: {
      model: modelRef(str(env, file, 'SUGGESTED_QUESTIONS_MODEL'), 'SUGGESTED_QUESTIONS_MODEL'),
      maxTokens: int(env, file, 'SUGGESTED_QUESTIONS_MAX_TOKENS', 256, 1),
      timeoutSeconds: int(env, file, 'SUGGESTED_QUESTIONS_TIMEOUT', 30, 1),
      historyMessages: int(env, file, 'SUGGESTED_QUESTIONS_HISTORY_MESSAGES', 3, 1),
      historyMaxTokens: int(env, file, 'SUGGESTED_QUESTIONS_HISTORY_MAX_TOKENS', 3000, 1),
    },
    openaiCompatible: {
      conversationMatchWindow: int(env, file, 'OPENAI_CONVERSATION_MATCH_WINDOW', 20, 1),
    },
    triggers: {
      triggerUrl: (str(env, file, 'TRIGGER_URL') ?? str(env, file, 'APP_WEB_URL') ?? `http://localhost:${int(env, file, 'PORT', 5001)}`).replace(/\/+$/, ''),
      webhookRateLimitMax: int(env, file, 'WEBHOOK_RATE_LIMIT_MAX_REQUESTS', 60, 1),
      webhookRateLimitWindowSeconds: int(env, file, 'WEBHOOK_RATE_LIMIT_WINDOW_SECONDS', 60, 1),
      schedulePollMs: int(env, file, 'SCHEDULE_POLL_SECONDS', 5, 1) * 1000,
    },
    audio: {
      speechToTextModel: modelRef(str(env, file, 'SPEECH_TO_TEXT_MODEL'), 'SPEECH_TO_TEXT_MODEL') ?? 'openai/whisper-1',
      textToSpeechModel: modelRef(str(env, file, 'TEXT_TO_SPEECH_MODEL'), 'TEXT_TO_SPEECH_MODEL') ?? 'openai/tts-1',
      maxAudioBytes: int(env, file, 'AUDIO_TO_TEXT_FILE_SIZE_LIMIT', 30, 1) * MB,
      defaultVoice: str(env, file, 'TEXT_TO_SPEECH_DEFAULT_VOICE') ?? 'alloy',
      maxTextChars: int(env, file, 'TEXT_TO_SPEECH_MAX_CHARS', 4096, 1),
      timeoutSeconds: int(env, file, 'AUDIO_REQUEST_TIMEOUT', 300, 1),
    },
    queue: {
      runner: queueRunner(str(env, file, 'QUEUE'), str(env, file, 'REDIS_URL')),
      concurrencyByKind: concurrencyByKind(env, file),
      // an api-only process never runs jobs
      worker: queueWorker && role !== 'api',
      concurrency: int(env, file, 'QUEUE_CONCURRENCY', 2, 1),
      leaseMs: int(env, file, 'QUEUE_LEASE_MS', 30_000, 100),
      pollMs: int(env, file, 'QUEUE_POLL_MS', 500, 10),
      maxAttempts: int(env, file, 'QUEUE_MAX_ATTEMPTS', 3, 1),
      retryDelayMs: int(env, file, 'QUEUE_RETRY_DELAY_MS', 1000, 0),
    },
    messages: messageLeasesOf(env, file),
    tools: readToolsConfig(env, file, path.dirname(configFile(env) ?? 'dovetail.yaml')),
    mail: mailOf(env, file),
    webForms: {
      appWebUrl: (str(env, file, 'APP_WEB_URL') ?? `http://localhost:${int(env, file, 'PORT', 5001)}`).replace(/\/+$/, ''),
      rateLimitMaxAttempts: int(env, file, 'WEB_FORM_SUBMIT_RATE_LIMIT_MAX_ATTEMPTS', 30, 1),
      rateLimitWindowSeconds: int(env, file, 'WEB_FORM_SUBMIT_RATE_LIMIT_WINDOW_SECONDS', 60, 1),
    },
    webApp: {
      passportTtlSeconds: int(env, file, 'WEB_APP_PASSPORT_EXPIRE_HOURS', 720, 1) * 3600,
      passportRateLimitPerMinute: int(env, file, 'WEB_APP_PASSPORT_RATE_LIMIT_PER_MINUTE', 60, 1),
      siteSettingMaxChars: int(env, file, 'SITE_SETTING_MAX_CHARS', 2000, 1),
    },
    console: {
      sessionHours: positiveNumber(env, file, 'CONSOLE_SESSION_HOURS', 24),
      loginMaxAttemptsPerAccount: int(env, file, 'CONSOLE_LOGIN_RATE_LIMIT_MAX_ATTEMPTS', 10, 1),
      loginMaxAttemptsPerAddress: int(env, file, 'CONSOLE_LOGIN_RATE_LIMIT_MAX_ATTEMPTS_PER_ADDRESS', 30, 1),
      loginWindowSeconds: int(env, file, 'CONSOLE_LOGIN_RATE_LIMIT_WINDOW_SECONDS', 900, 1),
      passwordMinLength: int(env, file, 'CONSOLE_PASSWORD_MIN_LENGTH', 8, 1),
      passwordMaxLength: int(env, file, 'CONSOLE_PASSWORD_MAX_LENGTH', 1024, 1),
      dslMaxBytes: int(env, file, 'CONSOLE_DSL_MAX_MB', 10, 1) * MB,
      listMax: int(env, file, 'CONSOLE_LIST_MAX', 100, 1),
    },
    httpRequest: {
      maxResponseBytes: int(env, file, 'HTTP_REQUEST_NODE_MAX_TEXT_SIZE', MB, 1),
      maxConnectTimeout: int(env, file, 'HTTP_REQUEST_MAX_CONNECT_TIMEOUT', 10, 1),
      maxReadTimeout: int(env, file, 'HTTP_REQUEST_MAX_READ_TIMEOUT', 600, 1),
      maxWriteTimeout: int(env, file, 'HTTP_REQUEST_MAX_WRITE_TIMEOUT', 600, 1),
    },
    code: {
      mode: codeMode(str(env, file, 'CODE_EXECUTION_MODE')),
      maxMemoryMb: int(env, file, 'CODE_MAX_MEMORY_MB', 128, 16),
      jsWorkers: int(env, file, 'CODE_SANDBOX_JS_WORKERS', 2, 0),
      pythonWorkers: int(env, file, 'CODE_SANDBOX_PYTHON_WORKERS', 1, 0),
      pythonPackagesDir: pathOrUndefined(str(env, file, 'CODE_PYTHON_PACKAGES_DIR')),
      pythonSnapshotDir: snapshotDir(str(env, file, 'CODE_PYTHON_SNAPSHOT_DIR'), dataDir),
      recycleAfterRuns: int(env, file, 'CODE_SANDBOX_RECYCLE_AFTER', 1000, 1),
      maxQueuedPerApp: int(env, file, 'CODE_MAX_QUEUED_PER_APP', 50, 1),
      maxWorkersPerApp: int(env, file, 'CODE_MAX_WORKERS_PER_APP', 0, 0),
      templateMaxLength: int(env, file, 'TEMPLATE_TRANSFORM_MAX_LENGTH', 400_000, 1),
      templateMaxSteps: int(env, file, 'TEMPLATE_MAX_STEPS', 1_000_000, 1000),
      templateTimeoutMs: int(env, file, 'TEMPLATE_RENDER_TIMEOUT_MS', 1000, 10),
      pythonCommand: str(env, file, 'CODE_PYTHON_COMMAND') ?? 'python3',
      timeoutSeconds: int(env, file, 'CODE_EXECUTION_TIMEOUT', 15, 1),
      maxOutputBytes: int(env, file, 'CODE_MAX_OUTPUT_BYTES', MB, 1024),
      maxStringLength: int(env, file, 'CODE_MAX_STRING_LENGTH', 400_000, 1),
      maxStringArrayLength: int(env, file, 'CODE_MAX_STRING_ARRAY_LENGTH', 30, 1),
      maxObjectArrayLength: int(env, file, 'CODE_MAX_OBJECT_ARRAY_LENGTH', 30, 1),
      maxNumberArrayLength: int(env, file, 'CODE_MAX_NUMBER_ARRAY_LENGTH', 1000, 1),
      maxDepth: int(env, file, 'CODE_MAX_DEPTH', 5, 1),
      maxPrecision: int(env, file, 'CODE_MAX_PRECISION', 20, 1),
    },
    text: {
      maxPieceChars: int(env, file, 'TOKENIZER_MAX_PIECE_CHARS', DEFAULT_TOKENIZER_MAX_PIECE_CHARS, 1),
      workerMinChars: int(env, file, 'TOKENIZER_WORKER_MIN_CHARS', 20_000, 0),
    },
    parse: {
      timeoutMs: int(env, file, 'PARSE_TIMEOUT_MS', 120_000, 100),
      maxHeapMb: int(env, file, 'PARSE_MAX_HEAP_MB', 512, 16),
      workers: int(env, file, 'PARSE_WORKERS', 2, 1),
      maxUncompressedBytes: int(env, file, 'PARSE_MAX_UNCOMPRESSED_BYTES', DEFAULT_PARSE_LIMITS.maxUncompressedBytes, 1),
      maxTextChars: int(env, file, 'PARSE_MAX_TEXT_CHARS', DEFAULT_PARSE_LIMITS.maxTextChars, 1),
      maxPages: int(env, file, 'PARSE_MAX_PAGES', DEFAULT_PARSE_LIMITS.maxPages, 1),
      maxRows: int(env, file, 'PARSE_MAX_ROWS', DEFAULT_PARSE_LIMITS.maxRows, 1),
      maxCells: int(env, file, 'PARSE_MAX_CELLS', DEFAULT_PARSE_LIMITS.maxCells, 1),
      maxSections: int(env, file, 'PARSE_MAX_SECTIONS', DEFAULT_PARSE_LIMITS.maxSections, 1),
      maxHtmlDepth: int(env, file, 'PARSE_MAX_HTML_DEPTH', DEFAULT_PARSE_LIMITS.maxHtmlDepth, 1),
    },
    knowledge: {
      embeddingsBaseUrl: str(env, file, 'EMBEDDINGS_BASE_URL'),
      embeddingsApiKey: str(env, file, 'EMBEDDINGS_API_KEY'),
      embeddingsModel: str(env, file, 'EMBEDDINGS_MODEL') ?? 'text-embedding-3-small',
      embeddingsBatchSize: int(env, file, 'EMBEDDINGS_BATCH_SIZE', 32, 1),
      maxSegmentationTokens: int(env, file, 'INDEXING_MAX_SEGMENTATION_TOKENS_LENGTH', 4000, 50),
      retrievalTopKMax: int(env, file, 'RETRIEVAL_TOP_K_MAX', 100, 1),
      vectorSearch: vectorSearchConfig(env, file),
      downloadZipMaxDocuments: int(env, file, 'KNOWLEDGE_DOWNLOAD_ZIP_MAX_DOCUMENTS', 100, 1),
      pageLimitMax: int(env, file, 'KNOWLEDGE_PAGE_LIMIT_MAX', 100, 1),
      retrievalQueryMaxChars: int(env, file, 'RETRIEVAL_QUERY_MAX_CHARS', 250, 1),
      retrieveCountsHits: (str(env, file, 'RETRIEVE_COUNTS_HITS') ?? 'true') !== 'false',
      hitCountFlushMs: int(env, file, 'HIT_COUNT_FLUSH_MS', 100, 0),
      fullDocMaxTokens: int(env, file, 'KNOWLEDGE_FULL_DOC_MAX_TOKENS', 10_000, 50),
      statusBatchMax: int(env, file, 'KNOWLEDGE_STATUS_BATCH_MAX', 100, 1),
      qaModel: str(env, file, 'KNOWLEDGE_QA_MODEL'),
      qaConcurrency: int(env, file, 'KNOWLEDGE_QA_CONCURRENCY', 4, 1),
      segmentsPerRequestMax: int(env, file, 'KNOWLEDGE_SEGMENTS_PER_REQUEST_MAX', 1000, 1),
      segmentMaxChars: int(env, file, 'KNOWLEDGE_SEGMENT_MAX_CHARS', 100_000, 1),
      tagNameMaxLength: int(env, file, 'KNOWLEDGE_TAG_NAME_MAX_LENGTH', 50, 1),
      metadataNameMaxLength: int(env, file, 'KNOWLEDGE_METADATA_NAME_MAX_LENGTH', 255, 1),
      rerankTimeoutSeconds: int(env, file, 'RERANK_TIMEOUT_SECONDS', 60, 1),
      externalTimeoutSeconds: int(env, file, 'EXTERNAL_KNOWLEDGE_TIMEOUT_SECONDS', 30, 1),
      externalMaxResponseBytes: int(env, file, 'EXTERNAL_KNOWLEDGE_MAX_RESPONSE_BYTES', 10 * MB, 1),
      pipelineRunMaxItems: int(env, file, 'PIPELINE_RUN_MAX_ITEMS', 20, 1),
      pipelineCrawlMaxPages: int(env, file, 'PIPELINE_CRAWL_MAX_PAGES', 50, 1),
      pipelineChunkInputMaxChars: int(env, file, 'PIPELINE_CHUNK_INPUT_MAX_CHARS', 5_000_000, 1),
    },
    ...overrides,
  };
  return Object.freeze(config);
}

/** The vector index settings, within the ranges pgvector accepts (it refuses an index otherwise). */
function vectorSearchConfig(env: Env, file: Record<string, unknown>): VectorSearchOptions {
  const d = DEFAULT_VECTOR_SEARCH;
  const out = {
    hnswM: int(env, file, 'PGVECTOR_HNSW_M', d.hnswM, 2),
    hnswEfConstruction: int(env, file, 'PGVECTOR_HNSW_EF_CONSTRUCTION', d.hnswEfConstruction, 4),
    efSearch: int(env, file, 'PGVECTOR_EF_SEARCH', d.efSearch, 1),
  };
  if (out.hnswM > 100) throw new ConfigError(`PGVECTOR_HNSW_M must be at most 100, got ${out.hnswM}`);
  if (out.hnswEfConstruction > 1000) throw new ConfigError(`PGVECTOR_HNSW_EF_CONSTRUCTION must be at most 1000, got ${out.hnswEfConstruction}`);
  if (out.hnswEfConstruction < 2 * out.hnswM) throw new ConfigError(`PGVECTOR_HNSW_EF_CONSTRUCTION must be at least twice PGVECTOR_HNSW_M (${2 * out.hnswM}), got ${out.hnswEfConstruction}`);
  if (out.efSearch > 1000) throw new ConfigError(`PGVECTOR_EF_SEARCH must be at most 1000, got ${out.efSearch}`);
  return out;
}
