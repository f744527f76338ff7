import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { ConfigError } from './config-error.js';
import type { CodeOutputLimits } from './engine/types.js';
import type { ModelPrice } from './lib/usage.js';
import type { QueueConfig } from './infra/queue/queue.js';
import type { MessageLeaseConfig } from './messages/message-leases.js';
import { readProviderSettings, type ProvidersConfig } from './llm/provider-settings.js';
import { readToolsConfig, type ToolsConfig } from './tools/tool-config.js';
import type { TextOffloadConfig } from './text/offload.js';
import { readMailConfig, type MailConfig } from './mail/mail-config.js';
import { readStorageConfig, type StorageConfig } from './files/blobs/storage-config.js';
import type { WebFormConfig } from './web/web-form-config.js';

export { ConfigError };

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
   * `TRUST_PROXY`: `true` (any proxy) or comma-separated proxy addresses/CIDRs whose
   * `X-Forwarded-*` headers are believed (Fastify's `trustProxy`); unset/`false` = none, and the
   * client's `Host` header never reaches a URL the server hands out.
   */
  readonly trustProxy: boolean | readonly string[];
}

export type { ModelPrice };

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
  readonly redisUrl: string | undefined;
  /** Prepended to every Redis key and pub/sub channel (`REDIS_KEY_PREFIX`, default `dovetail:`), so several deployments can share one Redis. */
  readonly redisKeyPrefix: string;
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
  /** Model providers: `NAME_API_KEY` / `NAME_BASE_URL` (and extras) per provider, `providers:` of `dovetail.yaml` (see `src/llm/provider-table.ts`). */
  readonly providers: ProvidersConfig;
  /** Longest a generation may run before it is aborted, in seconds (`APP_MAX_EXECUTION_TIME`, default 1200). */
  readonly appMaxExecutionSeconds: number;
  /** Keep-alive interval of generation streams, ms (`SSE_PING_INTERVAL_MS`, default 10000 as Dify). */
  readonly ssePingIntervalMs: number;
  /** Largest `limit` of `GET /app/feedbacks` (`FEEDBACK_LIST_MAX_LIMIT`, default 101 as Dify). */
  readonly feedbackListMaxLimit: number;
  /** Page size cap of `GET /apps/annotations`: larger `limit`s are served this many (`ANNOTATION_LIST_MAX_LIMIT`, default 100 as Dify). */
  readonly annotationListMaxLimit: number;
  /** Longest annotation question, and longest chat query matched against annotations, in characters (`ANNOTATION_QUESTION_MAX_CHARS`, default 1000). */
  readonly annotationQuestionMaxChars: number;
  /** How long a chat request waits for the annotation match before the model answers, ms (`ANNOTATION_MATCH_TIMEOUT_MS`, default 5000). */
  readonly annotationMatchTimeoutMs: number;
  /** Price table keyed by model name. */
  readonly prices: Readonly<Record<string, ModelPrice>>;
  /** Human Input global timeout in seconds; ≤ 0 disables it (`HUMAN_INPUT_GLOBAL_TIMEOUT_SECONDS`, default 7 days). */
  readonly humanInputGlobalTimeoutSeconds: number;
  /** How often waiting forms are checked for deadlines (`HUMAN_INPUT_TIMEOUT_SCAN_MS`, default 5000). */
  readonly humanInputScanIntervalMs: number;
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
  };
  /** `GET /messages/{id}/suggested` (see `SuggestedQuestionsConfig`). */
  readonly suggestedQuestions: SuggestedQuestionsConfig;
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
  /** Human Input email delivery (`MAIL_TYPE`, `SMTP_*`, `MAIL_DEFAULT_SEND_FROM`; see src/mail/mail-config.ts). */
  readonly mail: MailConfig;
  /** Form pages and the web form API (`APP_WEB_URL`, `WEB_FORM_SUBMIT_RATE_LIMIT_*`). */
  readonly webForms: WebFormConfig;
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
  /** Worker threads kept warm for javascript code nodes and templates (`CODE_SANDBOX_JS_WORKERS`, default 2; 0 starts one per run). */
  readonly jsWorkers: number;
  /** Worker threads with a warm Pyodide interpreter for python3 code nodes (`CODE_SANDBOX_PYTHON_WORKERS`, default 1; 0 starts one per run). */
  readonly pythonWorkers: number;
  /** Folder of pure-Python wheels (`*-none-any.whl`) preinstalled in the Python sandbox (`CODE_PYTHON_PACKAGES_DIR`, unset = none). */
  readonly pythonPackagesDir: string | undefined;
  /** A sandbox worker is replaced after this many runs (`CODE_SANDBOX_RECYCLE_AFTER`, default 1000). */
  readonly recycleAfterRuns: number;
  /** Longest template-transform output, characters (`TEMPLATE_TRANSFORM_MAX_LENGTH`, default 400000 as Dify). */
  readonly templateMaxLength: number;
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
}

type Env = Record<string, string | undefined>;

const MB = 1024 * 1024;

function int(env: Env, file: Record<string, unknown>, key: string, fallback: number, min = 0): number {
  const raw = env[key] ?? (file[key] === undefined ? undefined : String(file[key]));
  if (raw === undefined || raw === '') return fallback;
  if (!/^-?\d+$/.test(raw.trim())) throw new ConfigError(`${key} must be an integer, got "${raw}"`);
  const n = Number(raw);
  if (n < min) throw new ConfigError(`${key} must be at least ${min}, got ${n}`);
  return n;
}

/** `QUEUE`: bullmq or embedded; default bullmq when Redis is configured. */
function queueRunner(raw: string | undefined, redisUrl: string | undefined): 'embedded' | 'bullmq' {
  const v = (raw ?? (redisUrl ? 'bullmq' : 'embedded')).trim();
  if (v !== 'embedded' && v !== 'bullmq') throw new ConfigError(`QUEUE must be bullmq or embedded, got "${v}"`);
  if (v === 'bullmq' && !redisUrl) throw new ConfigError('QUEUE=bullmq needs REDIS_URL (BullMQ runs on Redis); set REDIS_URL or QUEUE=embedded');
  return v;
}

/** Every `QUEUE_CONCURRENCY_<KIND>` setting (env or file), by key. */
function concurrencyByKind(env: Env, file: Record<string, unknown>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const key of new Set([...Object.keys(file), ...Object.keys(env)])) {
    if (key.startsWith('QUEUE_CONCURRENCY_') && str(env, file, key) !== undefined) out[key] = int(env, file, key, 1, 1);
  }
  return out;
}

function codeMode(raw: string | undefined): 'sandbox' | 'process' {
  const v = (raw ?? 'sandbox').trim();
  if (v !== 'sandbox' && v !== 'process') throw new ConfigError(`CODE_EXECUTION_MODE must be sandbox or process, got "${v}"`);
  return v;
}

function pathOrUndefined(v: string | undefined): string | undefined {
  return v === undefined || v.trim() === '' ? undefined : path.resolve(v.trim());
}

function str(env: Env, file: Record<string, unknown>, key: string): string | undefined {
  const v = env[key] ?? (file[key] === undefined ? undefined : String(file[key]));
  return v === '' ? undefined : v;
}

function messageLeasesOf(env: Env, file: Record<string, unknown>): MessageLeaseConfig {
  const saveIntervalMs = int(env, file, 'MESSAGE_SAVE_INTERVAL_MS', 1000, 50);
  const leaseSeconds = int(env, file, 'MESSAGE_LEASE_SECONDS', 10, 1);
  if (saveIntervalMs >= leaseSeconds * 1000) {
    throw new ConfigError(`MESSAGE_SAVE_INTERVAL_MS (${saveIntervalMs}) must be shorter than MESSAGE_LEASE_SECONDS (${leaseSeconds} s): a live message would look orphaned`);
  }
  return { saveIntervalMs, leaseMs: leaseSeconds * 1000 };
}

function list(raw: string | undefined, fallback: readonly string[]): readonly string[] {
  if (raw === undefined) return fallback;
  return raw.split(',').map((s) => s.trim().replace(/^\./, '').toLowerCase()).filter(Boolean);
}

/** `TRUST_PROXY`: true/false or a list of proxy addresses/CIDRs. */
function trustProxy(raw: string | undefined): boolean | readonly string[] {
  const v = raw?.trim().toLowerCase();
  if (v === undefined || v === '' || v === 'false') return false;
  if (v === 'true') return true;
  return list(v, []);
}

/** A `provider/model` setting, checked at boot. */
function modelRef(raw: string | undefined, key: string): string | undefined {
  if (raw === undefined) return undefined;
  if (!/^[^/\s].*\/[^/\s]+$/.test(raw.trim())) throw new ConfigError(`${key} must be provider/model (e.g. openai/gpt-4o-mini), got "${raw}"`);
  return raw.trim();
}

/** The settings file `loadConfig` reads with this environment (`DOVETAIL_CONFIG`, else `./dovetail.yaml`), or undefined when there is none. */
export function configFile(env: Env = process.env): string | undefined {
  const file = env.DOVETAIL_CONFIG ?? 'dovetail.yaml';
  return existsSync(file) ? path.resolve(file) : undefined;
}

function readFileConfig(env: Env): Record<string, unknown> {
  const file = env.DOVETAIL_CONFIG ?? 'dovetail.yaml';
  if (!existsSync(file)) {
    if (env.DOVETAIL_CONFIG) throw new ConfigError(`DOVETAIL_CONFIG: file not found: ${file}`);
    return {};
  }
  const parsed: unknown = parseYaml(readFileSync(file, 'utf8'));
  if (parsed === null || parsed === undefined) return {};
  if (typeof parsed !== 'object' || Array.isArray(parsed)) throw new ConfigError(`${file}: top level must be a mapping`);
  return parsed as Record<string, unknown>;
}

function readPrices(file: Record<string, unknown>): Record<string, ModelPrice> {
  const raw = file.prices;
  if (raw === undefined) return {};
  if (typeof raw !== 'object' || raw === null) throw new ConfigError('prices must be a mapping of model name to price');
  const out: Record<string, ModelPrice> = {};
  for (const [model, p] of Object.entries(raw as Record<string, Record<string, unknown>>)) {
    const dec = (k: string, d?: string): string => {
      const v = p?.[k] ?? d;
      if (v === undefined || !/^\d+(\.\d+)?$/.test(String(v))) throw new ConfigError(`prices.${model}.${k} must be a decimal string`);
      return String(v);
    };
    out[model] = { input: dec('input'), output: dec('output'), unit: dec('unit', '0.000001'), currency: String(p?.currency ?? 'USD') };
  }
  return out;
}

/** The model providers' settings; a malformed one is a ConfigError naming it. */
function providersOf(env: Env, file: Record<string, unknown>): ProvidersConfig {
  try {
    return readProviderSettings((key) => str(env, file, key), file.providers);
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }
}

function storageOf(env: Env, file: Record<string, unknown>): StorageConfig {
  try {
    return readStorageConfig((key) => str(env, file, key));
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }
}

function mailOf(env: Env, file: Record<string, unknown>): MailConfig {
  try {
    return readMailConfig((key) => str(env, file, key));
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }
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
    databasePoolSize: int(env, file, 'DATABASE_POOL_SIZE', 10, 1),
    redisUrl: str(env, file, 'REDIS_URL'),
    redisKeyPrefix: str(env, file, 'REDIS_KEY_PREFIX') ?? 'dovetail:',
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
    },
    fileUrls: {
      baseUrl: str(env, file, 'FILES_URL')?.replace(/\/+$/, ''),
      accessTimeoutSeconds: int(env, file, 'FILES_ACCESS_TIMEOUT', 300, 1),
      secretKey: str(env, file, 'SECRET_KEY'),
    },
    httpServer: {
      maxParamLength: int(env, file, 'HTTP_MAX_PARAM_LENGTH', 100, 1),
      maxHeaderBytes: int(env, file, 'HTTP_MAX_HEADER_SIZE', 16384, 1024),
      trustProxy: trustProxy(str(env, file, 'TRUST_PROXY')),
    },
    maxActiveRequests: int(env, file, 'APP_MAX_ACTIVE_REQUESTS', 0),
    httpBodyTimeoutSeconds: int(env, file, 'HTTP_BODY_TIMEOUT_SECONDS', 30, 1),
    chatMemoryMaxTokens: int(env, file, 'CHAT_MEMORY_MAX_TOKENS', 2000),
    ssrfAllowHosts: list(str(env, file, 'SSRF_ALLOW_HOSTS'), []),
    providers: providersOf(env, file),
    appMaxExecutionSeconds: int(env, file, 'APP_MAX_EXECUTION_TIME', 1200, 1),
    ssePingIntervalMs: int(env, file, 'SSE_PING_INTERVAL_MS', 10_000, 10),
    feedbackListMaxLimit: int(env, file, 'FEEDBACK_LIST_MAX_LIMIT', 101, 1),
    annotationListMaxLimit: int(env, file, 'ANNOTATION_LIST_MAX_LIMIT', 100, 1),
    annotationQuestionMaxChars: int(env, file, 'ANNOTATION_QUESTION_MAX_CHARS', 1000, 1),
    annotationMatchTimeoutMs: int(env, file, 'ANNOTATION_MATCH_TIMEOUT_MS', 5000, 1),
    prices: readPrices(file),
    humanInputGlobalTimeoutSeconds: int(env, file, 'HUMAN_INPUT_GLOBAL_TIMEOUT_SECONDS', 604_800, -1),
    humanInputScanIntervalMs: int(env, file, 'HUMAN_INPUT_TIMEOUT_SCAN_MS', 5000, 100),
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
    },
    suggestedQuestions: {
      model: modelRef(str(env, file, 'SUGGESTED_QUESTIONS_MODEL'), 'SUGGESTED_QUESTIONS_MODEL'),
      maxTokens: int(env, file, 'SUGGESTED_QUESTIONS_MAX_TOKENS', 256, 1),
      timeoutSeconds: int(env, file, 'SUGGESTED_QUESTIONS_TIMEOUT', 30, 1),
      historyMessages: int(env, file, 'SUGGESTED_QUESTIONS_HISTORY_MESSAGES', 3, 1),
      historyMaxTokens: int(env, file, 'SUGGESTED_QUESTIONS_HISTORY_MAX_TOKENS', 3000, 1),
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
      recycleAfterRuns: int(env, file, 'CODE_SANDBOX_RECYCLE_AFTER', 1000, 1),
      templateMaxLength: int(env, file, 'TEMPLATE_TRANSFORM_MAX_LENGTH', 400_000, 1),
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
      maxPieceChars: int(env, file, 'TOKENIZER_MAX_PIECE_CHARS', 128, 1),
      workerMinChars: int(env, file, 'TOKENIZER_WORKER_MIN_CHARS', 20_000, 0),
    },
    knowledge: {
      embeddingsBaseUrl: str(env, file, 'EMBEDDINGS_BASE_URL'),
      embeddingsApiKey: str(env, file, 'EMBEDDINGS_API_KEY'),
      embeddingsModel: str(env, file, 'EMBEDDINGS_MODEL') ?? 'text-embedding-3-small',
      embeddingsBatchSize: int(env, file, 'EMBEDDINGS_BATCH_SIZE', 32, 1),
      maxSegmentationTokens: int(env, file, 'INDEXING_MAX_SEGMENTATION_TOKENS_LENGTH', 4000, 50),
      retrievalTopKMax: int(env, file, 'RETRIEVAL_TOP_K_MAX', 100, 1),
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
    },
    ...overrides,
  };
  return Object.freeze(config);
}
