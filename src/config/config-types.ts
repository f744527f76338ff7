import { ConfigError } from '../config-error.js';
import type { CodeOutputLimits } from '../engine/types.js';
import type { ModelPrice } from '../lib/usage.js';
import type { QueueConfig } from '../infra/queue/queue.js';
import type { MessageLeaseConfig } from '../messages/message-leases.js';
import type { ProvidersConfig } from '../llm/provider-settings.js';
import type { ToolsConfig } from '../tools/tool-config.js';
import type { TextOffloadConfig } from '../text/offload.js';
import type { ParseConfig } from '../knowledge/ingest/parse/document-parser.js';
import type { VectorSearchOptions } from '../knowledge/index/vector-index.js';
import type { MailConfig } from '../mail/mail-config.js';
import type { StorageConfig } from '../files/blobs/storage-config.js';
import type { WebFormConfig } from '../web/web-form-config.js';
import type { ModerationConfig } from '../moderation/moderation-config.js';
import type { ConsoleSettings } from '../console/console-settings.js';
import type { TriggerConfig } from '../triggers/trigger-config.js';

/** The shape of the loaded settings (src/config.ts `loadConfig`); each field names its setting. */

export interface UploadLimits {
  /** Bytes; default 15 MB (`UPLOAD_FILE_SIZE_LIMIT`, in MB). */
  readonly fileBytes: number;
  /** Bytes; default 10 MB (`UPLOAD_IMAGE_FILE_SIZE_LIMIT`). */
  readonly imageBytes: number;
  /** Bytes; default 100 MB (`UPLOAD_VIDEO_FILE_SIZE_LIMIT`). */
  readonly videoBytes: number;
  /** Bytes; default 50 MB (`UPLOAD_AUDIO_FILE_SIZE_LIMIT`). */
  readonly audioBytes: number;
  /** Lower-case extensions without the dot (`UPLOAD_FILE_EXTENSION_BLACKLIST`, comma separated). */
  readonly extensionBlacklist: readonly string[];
  /**
   * Most files one request may name in `files` (and in a `file-list` input) when the app sets no
   * number (`WORKFLOW_FILE_UPLOAD_LIMIT`, default 10 as Dify; `/parameters` reports it).
   */
  readonly workflowFileUploadLimit: number;
}

/** Signed, key-less file URLs (Dify's `/files/{id}/file-preview?timestamp&nonce&sign`), as document downloads hand out. */
export interface FileUrlConfig {
  /** Public base URL the signed URLs start with (`FILES_URL`); unset = the origin the request came to. */
  readonly baseUrl: string | undefined;
  /** How long a signed URL works, seconds (`FILES_ACCESS_TIMEOUT`, default 300 as Dify). */
  readonly accessTimeoutSeconds: number;
  /** Signing key (`SECRET_KEY`); unset = a random key made on first use and kept in the database. */
  readonly secretKey: string | undefined;
}

/** The HTTP listener's own bounds and proxy trust. */
export interface HttpServerConfig {
  /** Longest path parameter, characters (`HTTP_MAX_PARAM_LENGTH`, default 100); longer answers 414. */
  readonly maxParamLength: number;
  /** Largest request line + headers, bytes (`HTTP_MAX_HEADER_SIZE`, default 16384 as Node); larger answers 431. */
  readonly maxHeaderBytes: number;
  /**
   * Event-loop time a turn gives to starting requests before the rest wait for its check phase, ms
   * (`HTTP_ADMISSION_SLICE_MS`, default 5; 0 = no slices): see src/http/admission.ts.
   */
  readonly admissionSliceMs: number;
  /**
   * `TRUST_PROXY`: `true` (any proxy) or comma-separated proxy addresses/CIDRs whose
   * `X-Forwarded-*` headers are believed (Fastify's `trustProxy`); unset/`false` = none, and the
   * client's `Host` header never reaches a URL the server hands out.
   */
  readonly trustProxy: boolean | readonly string[];
  /**
   * Deepest nesting of arrays and objects a JSON request body may have (`REQUEST_MAX_JSON_DEPTH`,
   * default 100); deeper answers 400 `invalid_param` naming the top-level field.
   */
  readonly maxJsonDepth: number;
  /**
   * Most bytes a server-sent event stream may hold unsent for a client that does not read
   * (`SSE_MAX_BUFFERED_BYTES`, default 1048576, at least 1024): a run stream stops reading the run's event log
   * until the client has taken them; a generation stream drops the client.
   */
  readonly sseMaxBufferedBytes: number;
}

/** What a process does (`DOVETAIL_ROLE`, `serve --role`): see docs/deployment.md, "Roles". */
export type ProcessRole = 'api' | 'worker' | 'all';
export const PROCESS_ROLES: readonly ProcessRole[] = ['api', 'worker', 'all'];

/** The role named by `raw`, or a ConfigError naming `setting` and the choices. */
export function parseRole(raw: string | undefined, setting: string): ProcessRole {
  if (raw === undefined) return 'all';
  const v = raw.trim().toLowerCase();
  if ((PROCESS_ROLES as readonly string[]).includes(v)) return v as ProcessRole;
  throw new ConfigError(`${setting} must be one of ${PROCESS_ROLES.join(', ')}, got "${raw}"`);
}

export interface Config {
  /**
   * `all` (default): one process serves the API and runs the background jobs. `api`: serves the
   * API and runs no job worker and no background scanner. `worker`: runs the job worker and the
   * scanners and serves only `/health`, `/ready` and `/metrics` (`DOVETAIL_ROLE`, `serve --role`).
   */
  readonly role: ProcessRole;
  /** Bearer token `GET /metrics` requires (`METRICS_TOKEN`); unset: the endpoint is open. */
  readonly metricsToken: string | undefined;
  /** OTLP/HTTP collector base URL (`OTEL_EXPORTER_OTLP_ENDPOINT`); set: spans are exported to `<it>/v1/traces`. */
  readonly otelEndpoint: string | undefined;
  /** `service.name` of the exported spans (`OTEL_SERVICE_NAME`, default `dovetail`). */
  readonly otelServiceName: string;
  readonly port: number;
  readonly host: string;
  readonly dataDir: string;
  /** `postgres://…` switches storage to PostgreSQL; otherwise SQLite at `<dataDir>/dovetail.db`. */
  readonly databaseUrl: string | undefined;
  /** PostgreSQL schema to use (tests give each run its own); default `public`. */
  readonly databaseSchema: string | undefined;
  /** Connections each process keeps to PostgreSQL at most (`DATABASE_POOL_SIZE`, default 10). */
  readonly databasePoolSize: number;
  /** SQLite: MB of the database file read through a memory map (`SQLITE_MMAP_MB`; 0: none; default sized to the machine, see defaultSqliteMmapMb). */
  readonly sqliteMmapMb: number;
  readonly redisUrl: string | undefined;
  /** Prepended to every Redis key and pub/sub channel (`REDIS_KEY_PREFIX`, default `dovetail:`), so several deployments can share one Redis. */
  readonly redisKeyPrefix: string;
  /** How long a process waits at start-up for Redis to answer a PING before it exits naming `REDIS_URL` (`REDIS_CONNECT_TIMEOUT_SECONDS`, default 5). */
  readonly redisConnectTimeoutSeconds: number;
  /** Where uploaded files live (`STORAGE_TYPE`, `S3_*`; see src/files/blobs/storage-config.ts). */
  readonly storage: StorageConfig;
  readonly logLevel: string;
  readonly upload: UploadLimits;
  readonly fileUrls: FileUrlConfig;
  readonly httpServer: HttpServerConfig;
  /** Per-app concurrent generation limit; 0 = unlimited (`APP_MAX_ACTIVE_REQUESTS`). */
  readonly maxActiveRequests: number;
  /** A request's headers and body must arrive within this many seconds, else 408 and the connection
   * is closed (`HTTP_BODY_TIMEOUT_SECONDS`, default 30). */
  readonly httpBodyTimeoutSeconds: number;
  /** Chat apps: the conversation history sent to the model is cut to this many tokens (Dify: 2000). */
  readonly chatMemoryMaxTokens: number;
  /** Remote-URL fetches may reach these hosts even when they resolve to private addresses. */
  readonly ssrfAllowHosts: readonly string[];
  /** Sensitive-word moderation and Dify's API-based extensions (`api_based_extensions` of dovetail.yaml; see src/moderation/moderation-config.ts). */
  readonly moderation: ModerationConfig;
  /** Model providers: `NAME_API_KEY` / `NAME_BASE_URL` (and extras) per provider, `providers:` of `dovetail.yaml` (see `src/llm/provider-table.ts`). */
  readonly providers: ProvidersConfig;
  /** Longest a generation may run before it is aborted, in seconds (`APP_MAX_EXECUTION_TIME`, default 1200). */
  readonly appMaxExecutionSeconds: number;
  /** Keep-alive interval of generation streams, ms (`SSE_PING_INTERVAL_MS`, default 10000 as Dify). */
  readonly ssePingIntervalMs: number;
  /** Largest `limit` of `GET /app/feedbacks` (`FEEDBACK_LIST_MAX_LIMIT`, default 101 as Dify). */
  readonly feedbackListMaxLimit: number;
  /** The console's logs and run traces (issue #44): see `src/messages/message-logs.ts` and `src/runs/run-trace.ts`. */
  readonly consoleLogs: {
    /** A log's keyword searches the app's newest this many messages (`CONSOLE_LOG_SEARCH_MESSAGES`, default 10000). */
    readonly searchMessages: number;
    /** Longest log keyword, in characters (`CONSOLE_LOG_KEYWORD_MAX_CHARS`, default 200). */
    readonly keywordMaxChars: number;
    /** A log's total is counted up to this many rows (`CONSOLE_LOG_COUNT_LIMIT`, default 10000). */
    readonly countLimit: number;
    /** Largest page of a log (`CONSOLE_LOG_MAX_LIMIT`, default 100). */
    readonly maxLimit: number;
    /** Events of a run's log one trace request reads (`CONSOLE_TRACE_MAX_EVENTS`, default 5000). */
    readonly traceMaxEvents: number;
  };
  /** Page size cap of `GET /apps/annotations`: larger `limit`s are served this many (`ANNOTATION_LIST_MAX_LIMIT`, default 100 as Dify). */
  readonly annotationListMaxLimit: number;
  /** Longest annotation question, and longest chat query matched against annotations, in characters (`ANNOTATION_QUESTION_MAX_CHARS`, default 1000). */
  readonly annotationQuestionMaxChars: number;
  /** How long a chat request waits for the annotation match before the model answers, ms (`ANNOTATION_MATCH_TIMEOUT_MS`, default 5000). */
  readonly annotationMatchTimeoutMs: number;
  /** Most annotations one CSV import takes; an export writes at most this many (`ANNOTATION_IMPORT_MAX_RECORDS`, default 10000 as Dify). */
  readonly annotationImportMaxRecords: number;
  /** Largest annotation CSV file one import takes, bytes (`ANNOTATION_IMPORT_FILE_SIZE_LIMIT`, in MB, default 2 as Dify). */
  readonly annotationImportMaxBytes: number;
  /** Price table keyed by model name. */
  readonly prices: Readonly<Record<string, ModelPrice>>;
  /** Human Input global timeout in seconds; ≤ 0 disables it (`HUMAN_INPUT_GLOBAL_TIMEOUT_SECONDS`, default 7 days). */
  readonly humanInputGlobalTimeoutSeconds: number;
  /** The most local days one console statistics request covers (`CONSOLE_STATS_MAX_DAYS`, default 366). */
  readonly consoleStatsMaxDays: number;
  /** How often waiting forms are checked for deadlines (`HUMAN_INPUT_TIMEOUT_SCAN_MS`, default 5000). */
  readonly humanInputScanIntervalMs: number;
  /**
   * How often files uploaded through a form's web surface and not submitted are deleted once their
   * form has ended, seconds (`HUMAN_INPUT_UPLOAD_SWEEP_SECONDS`, default 300).
   */
  readonly humanInputUploadSweepSeconds: number;
  /** Import `examples/*.yml` and print their keys when the database has no apps. */
  readonly seedExamples: boolean;
  /** On SIGTERM / SIGINT, how long blocking requests and streams may still take before runs are handed back and streams ended, seconds (`SHUTDOWN_TIMEOUT_SECONDS`, default 8: inside Docker's 10 s stop grace). */
  readonly shutdownTimeoutSeconds: number;
  /** Workflow run limits and recovery. */
  readonly runs: {
    /** Nodes one run may execute (`WORKFLOW_MAX_EXECUTION_STEPS`, default 500). */
    readonly maxSteps: number;
    /** Wall time of one run in ms (`WORKFLOW_MAX_EXECUTION_TIME`, seconds, default 1200). */
    readonly maxTimeMs: number;
    /** Runs one worker executes at once (`RUN_CONCURRENCY`, default 1000). */
    readonly concurrency: number;
    /** The lease of a run's job in ms: a dead or stalled worker's run is taken over after it (`RUN_LEASE_SECONDS`, default 5). */
    readonly leaseMs: number;
    /** Largest `loop_count` of a loop node (`LOOP_NODE_MAX_COUNT`, default 100 as Dify). */
    readonly loopMaxCount: number;
    /** Most items an iteration node accepts (`MAX_ITERATIONS_NUM`, default 99 as Dify). */
    readonly iterationMaxItems: number;
    /** Most items a parallel iteration runs at once; `parallel_nums` is clamped to it (`ITERATION_MAX_PARALLEL`, default 10). */
    readonly iterationMaxParallel: number;
    /** Largest `maximum_iterations` of an agent node (`AGENT_MAX_ITERATIONS`, default 50). */
    readonly agentMaxIterations: number;
    /**
     * How long a run queued for the workers may wait for one to take it, in seconds; then it ends
     * `failed` and a blocking request answers 503 `run_not_picked_up` (`RUN_QUEUE_WAIT_SECONDS`,
     * default 120; 0: no bound).
     */
    readonly queueWaitSeconds: number;
  };
  /** Worker presence: heartbeats of the processes that run the job worker (src/infra/worker-presence.ts). */
  readonly workers: {
    /** How often a worker writes its heartbeat, in ms; one not seen for three of these is gone (`WORKER_HEARTBEAT_SECONDS`, default 5). */
    readonly heartbeatMs: number;
    /** `/ready` of a process without a worker answers 503 while no worker is seen (`READY_REQUIRES_WORKER`, default false: 200 with the warning in the body). */
    readonly readyRequiresWorker: boolean;
  };
  /** `GET /messages/{id}/suggested` (see `SuggestedQuestionsConfig`). */
  readonly suggestedQuestions: SuggestedQuestionsConfig;
  /** `POST /v1/chat/completions`, Dovetail's OpenAI-compatible endpoint (docs/openai-compatible.md). */
  readonly openaiCompatible: {
    /**
     * A request without `conversation_id` continues the conversation whose newest exchange is the
     * request's last user/assistant pair, among the end user's this many most recently updated
     * conversations (`OPENAI_CONVERSATION_MATCH_WINDOW`, default 20).
     */
    readonly conversationMatchWindow: number;
  };
  /** Webhook and schedule triggers (`TRIGGER_URL`, `WEBHOOK_RATE_LIMIT_*`, `SCHEDULE_POLL_SECONDS`). */
  readonly triggers: TriggerConfig;
  /** `POST /audio-to-text` and `POST /text-to-audio` (see `AudioConfig`). */
  readonly audio: AudioConfig;
  /** Durable background jobs (indexing, resume, timeouts). */
  readonly queue: QueueConfig;
  /** Chat and completion messages while they generate (src/messages/message-leases.ts). */
  readonly messages: MessageLeaseConfig;
  readonly knowledge: KnowledgeConfig;
  /** Code nodes (see src/code). */
  readonly code: CodeConfig;
  /** http-request nodes: `HTTP_REQUEST_NODE_MAX_TEXT_SIZE` (bytes, default 1 MiB), `HTTP_REQUEST_MAX_CONNECT_TIMEOUT`
   * (s, default 10), `HTTP_REQUEST_MAX_READ_TIMEOUT` (s, default 600), `HTTP_REQUEST_MAX_WRITE_TIMEOUT` (s, default 600);
   * node timeouts are capped to them, and their sum bounds a request's total time. */
  readonly httpRequest: { readonly maxResponseBytes: number; readonly maxConnectTimeout: number; readonly maxReadTimeout: number; readonly maxWriteTimeout: number };
  /** Tool node and agent tools: timeouts, size limit, provider credentials (`src/tools/tool-config.ts`). */
  readonly tools: ToolsConfig;
  /** Token counting and chunking (see `TextOffloadConfig`): `TOKENIZER_MAX_PIECE_CHARS` (default 128),
   * `TOKENIZER_WORKER_MIN_CHARS` (default 20000). */
  readonly text: TextOffloadConfig;
  /** Document parsing, for knowledge indexing and document-extractor nodes (see `ParseConfig`): `PARSE_TIMEOUT_MS`,
   * `PARSE_MAX_HEAP_MB`, `PARSE_WORKERS` and the `PARSE_MAX_*` caps of `ParseLimits`. */
  readonly parse: ParseConfig;
  /** Human Input email delivery (`MAIL_TYPE`, `SMTP_*`, `MAIL_DEFAULT_SEND_FROM`; see src/mail/mail-config.ts). */
  readonly mail: MailConfig;
  /** Form pages and the web form API (`APP_WEB_URL`, `WEB_FORM_SUBMIT_RATE_LIMIT_*`). */
  readonly webForms: WebFormConfig;
  /** The web app's API under `/api` (`WEB_APP_PASSPORT_EXPIRE_HOURS`); its share links start with `webForms.appWebUrl`. */
  readonly webApp: WebAppConfig;
  /** The console (`/console`): sessions, log-in limits, passwords (`CONSOLE_*`; see src/console/console-settings.ts). */
  readonly console: ConsoleSettings;
}

/** The web app's API (`/api`, Dify's web app's). */
export interface WebAppConfig {
  /** `WEB_APP_PASSPORT_EXPIRE_HOURS`: how long a passport (`GET /api/passport`) is good for, hours (default 720: 30 days; Dify's never expire). */
  readonly passportTtlSeconds: number;
  /** `WEB_APP_PASSPORT_RATE_LIMIT_PER_MINUTE`: passports one client address may ask for a minute (default 60; each may add an end user). */
  readonly passportRateLimitPerMinute: number;
  /** `SITE_SETTING_MAX_CHARS`: the longest text a web app setting (title, description, disclaimer, …) may hold (default 2000). */
  readonly siteSettingMaxChars: number;
}

/**
 * Code nodes. The output checks are the engine's `CodeOutputLimits`, as Dify:
 * `CODE_MAX_STRING_LENGTH` 400000, `CODE_MAX_STRING_ARRAY_LENGTH` 30, `CODE_MAX_OBJECT_ARRAY_LENGTH` 30,
 * `CODE_MAX_NUMBER_ARRAY_LENGTH` 1000, `CODE_MAX_DEPTH` 5, `CODE_MAX_PRECISION` 20.
 */
export interface CodeConfig extends CodeOutputLimits {
  /**
   * `CODE_EXECUTION_MODE`: `sandbox` (default: javascript in QuickJS, python3 in Pyodide, both
   * WebAssembly in worker threads) or `process` (child processes with the server's rights: unsafe).
   */
  readonly mode: 'sandbox' | 'process';
  /** Memory of one sandboxed run, MB (`CODE_MAX_MEMORY_MB`, default 128). */
  readonly maxMemoryMb: number;
  /** Worker threads kept warm for javascript code nodes (`CODE_SANDBOX_JS_WORKERS`, default 2; 0 starts one per run). */
  readonly jsWorkers: number;
  /** Worker threads with a warm Pyodide interpreter for python3 code nodes (`CODE_SANDBOX_PYTHON_WORKERS`, default 1; 0 starts one per run). */
  readonly pythonWorkers: number;
  /** Folder of pure-Python wheels (`*-none-any.whl`) preinstalled in the Python sandbox (`CODE_PYTHON_PACKAGES_DIR`, unset = none). */
  readonly pythonPackagesDir: string | undefined;
  /**
   * Where the Python sandbox keeps the memory snapshot of a freshly booted interpreter, restored by
   * every later worker instead of booting CPython again (`CODE_PYTHON_SNAPSHOT_DIR`, default
   * `<DOVETAIL_DATA_DIR>/cache`; `off`: every worker boots).
   */
  readonly pythonSnapshotDir: string | undefined;
  /** A sandbox worker is replaced after this many runs (`CODE_SANDBOX_RECYCLE_AFTER`, default 1000). */
  readonly recycleAfterRuns: number;
  /**
   * Code runs of one app that may wait for a sandbox worker of one language;
   * one more fails at once naming the setting (`CODE_MAX_QUEUED_PER_APP`, default 50).
   */
  readonly maxQueuedPerApp: number;
  /**
   * Workers of one language's pool one app's runs may hold at once (`CODE_MAX_WORKERS_PER_APP`,
   * default 0: all but one of the pool's workers, at least one; a pool of size 0 is then unbounded).
   */
  readonly maxWorkersPerApp: number;
  /** Longest template-transform output, characters (`TEMPLATE_TRANSFORM_MAX_LENGTH`, default 400000 as Dify). */
  readonly templateMaxLength: number;
  /** Evaluation steps of one template render (`TEMPLATE_MAX_STEPS`, default 1000000). */
  readonly templateMaxSteps: number;
  /** Wall time of one template render, ms (`TEMPLATE_RENDER_TIMEOUT_MS`, default 1000): renders run in the server's thread. */
  readonly templateTimeoutMs: number;
  /** Program run for `python3` code nodes (`CODE_PYTHON_COMMAND`, default `python3` on the PATH). */
  readonly pythonCommand: string;
  /** Wall time of one code node run, seconds (`CODE_EXECUTION_TIMEOUT`, default 15 as Dify's sandbox). */
  readonly timeoutSeconds: number;
  /** Largest result (JSON) and stderr a program may write, bytes (`CODE_MAX_OUTPUT_BYTES`, default 1 MiB). */
  readonly maxOutputBytes: number;
}

/**
 * Follow-up questions after an answer (Dify's `generate_suggested_questions_after_answer`). A
 * model named in the app's `suggested_questions_after_answer.model` wins; otherwise `model`
 * stands in for Dify's workspace default model, and without it the app's own model is asked.
 */
export interface SuggestedQuestionsConfig {
  /** `provider/model` (`SUGGESTED_QUESTIONS_MODEL`); unset = the app's own model. */
  readonly model: string | undefined;
  /** `max_tokens` of the default-model call (`SUGGESTED_QUESTIONS_MAX_TOKENS`, default 256 as Dify). */
  readonly maxTokens: number;
  /** Longest the model call may take, seconds (`SUGGESTED_QUESTIONS_TIMEOUT`, default 30 as Dify); then `[]`. */
  readonly timeoutSeconds: number;
  /** Messages of the conversation shown to the model (`SUGGESTED_QUESTIONS_HISTORY_MESSAGES`, default 3 as Dify). */
  readonly historyMessages: number;
  /** Tokens those messages are cut to, oldest turns first (`SUGGESTED_QUESTIONS_HISTORY_MAX_TOKENS`, default 3000 as Dify). */
  readonly historyMaxTokens: number;
}

/**
 * Speech to text and text to speech. Dify uses the workspace's default speech2text / TTS model;
 * Dovetail has no workspace model settings, so the models are named here.
 */
export interface AudioConfig {
  /** `provider/model` that transcribes (`SPEECH_TO_TEXT_MODEL`, default `openai/whisper-1`). */
  readonly speechToTextModel: string;
  /** `provider/model` that speaks (`TEXT_TO_SPEECH_MODEL`, default `openai/tts-1`). */
  readonly textToSpeechModel: string;
  /** Largest audio `POST /audio-to-text` takes, bytes (`AUDIO_TO_TEXT_FILE_SIZE_LIMIT`, in MB, default 30 as Dify). */
  readonly maxAudioBytes: number;
  /** Voice when neither the request nor the app names one (`TEXT_TO_SPEECH_DEFAULT_VOICE`, default `alloy`). */
  readonly defaultVoice: string;
  /** Longest text spoken in one request, characters (`TEXT_TO_SPEECH_MAX_CHARS`, default 4096: OpenAI's `input` limit). */
  readonly maxTextChars: number;
  /** Longest an upstream audio call may take, seconds (`AUDIO_REQUEST_TIMEOUT`, default 300). */
  readonly timeoutSeconds: number;
}

export interface KnowledgeConfig {
  /** `EMBEDDINGS_BASE_URL` (OpenAI-compatible, e.g. `http://host/v1`); unset = the built-in offline model. */
  readonly embeddingsBaseUrl: string | undefined;
  readonly embeddingsApiKey: string | undefined;
  /** `EMBEDDINGS_MODEL`, default `text-embedding-3-small` for the endpoint. */
  readonly embeddingsModel: string;
  /** Texts per embeddings call (`EMBEDDINGS_BATCH_SIZE`, default 32). */
  readonly embeddingsBatchSize: number;
  /** Upper bound of a custom `max_tokens` (`INDEXING_MAX_SEGMENTATION_TOKENS_LENGTH`, default 4000). */
  readonly maxSegmentationTokens: number;
  /** Largest `top_k` accepted by retrieval (`RETRIEVAL_TOP_K_MAX`, default 100). */
  readonly retrievalTopKMax: number;
  /** How the vector index searches (`PGVECTOR_HNSW_M`, `PGVECTOR_HNSW_EF_CONSTRUCTION`, `PGVECTOR_EF_SEARCH`). */
  readonly vectorSearch: VectorSearchOptions;
  /** Most documents in one `POST …/documents/download-zip` (`KNOWLEDGE_DOWNLOAD_ZIP_MAX_DOCUMENTS`, default 100 as Dify). */
  readonly downloadZipMaxDocuments: number;
  /** Longest retrieval query in characters (`RETRIEVAL_QUERY_MAX_CHARS`, default 250). */
  readonly retrievalQueryMaxChars: number;
  /** Whether `POST /datasets/{id}/retrieve` counts hits like app retrieval does (`RETRIEVE_COUNTS_HITS`, default true; Dify: false). */
  readonly retrieveCountsHits: boolean;
  /** How long retrieval hits gather before one write (`HIT_COUNT_FLUSH_MS`, default 100; 0 = after each retrieval). */
  readonly hitCountFlushMs: number;
  /** Tokens a `full-doc` parent chunk keeps (`KNOWLEDGE_FULL_DOC_MAX_TOKENS`, default 10000, as Dify). */
  readonly fullDocMaxTokens: number;
  /** Most `document_ids` in one `PATCH …/documents/status/{action}` (`KNOWLEDGE_STATUS_BATCH_MAX`, default 100). */
  readonly statusBatchMax: number;
  /** `provider/model` that writes the Q&A pairs of `doc_form: qa_model` (`KNOWLEDGE_QA_MODEL`; unset refuses qa_model). */
  readonly qaModel: string | undefined;
  /** Most segments in one `POST …/documents/{id}/segments` (`KNOWLEDGE_SEGMENTS_PER_REQUEST_MAX`, default 1000). */
  readonly segmentsPerRequestMax: number;
  /** Longest segment or child chunk content (and Q&A answer) in characters (`KNOWLEDGE_SEGMENT_MAX_CHARS`, default 100000). */
  readonly segmentMaxChars: number;
  /** Model calls at once while writing Q&A pairs (`KNOWLEDGE_QA_CONCURRENCY`, default 4). */
  readonly qaConcurrency: number;
  /** Page size limit of document and dataset lists (`KNOWLEDGE_PAGE_LIMIT_MAX`, default 100). */
  readonly pageLimitMax: number;
  /** Longest knowledge tag name (`KNOWLEDGE_TAG_NAME_MAX_LENGTH`, default 50, as Dify). */
  readonly tagNameMaxLength: number;
  /** Longest metadata field name (`KNOWLEDGE_METADATA_NAME_MAX_LENGTH`, default 255, as Dify). */
  readonly metadataNameMaxLength: number;
  /** Longest wait for a rerank model's answer (`RERANK_TIMEOUT_SECONDS`, default 60). */
  readonly rerankTimeoutSeconds: number;
  /** Longest wait for an External Knowledge API's answer (`EXTERNAL_KNOWLEDGE_TIMEOUT_SECONDS`, default 30). */
  readonly externalTimeoutSeconds: number;
  /** Largest External Knowledge API answer read (`EXTERNAL_KNOWLEDGE_MAX_RESPONSE_BYTES`, default 10 MiB). */
  readonly externalMaxResponseBytes: number;
  /** Items (files, pages) one knowledge pipeline run request may name (`PIPELINE_RUN_MAX_ITEMS`, default 20). */
  readonly pipelineRunMaxItems: number;
  /** Pages a website-crawl datasource run may return (`PIPELINE_CRAWL_MAX_PAGES`, default 50). */
  readonly pipelineCrawlMaxPages: number;
  /** Longest text a pipeline chunker takes, in characters (`PIPELINE_CHUNK_INPUT_MAX_CHARS`, default 5,000,000). */
  readonly pipelineChunkInputMaxChars: number;
}
