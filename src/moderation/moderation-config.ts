import { ConfigError, positiveIntSetting as positiveInt } from '../config-error.js';

/** One of Dify's API-based extensions, from `api_based_extensions` in dovetail.yaml. */
export interface ApiBasedExtension {
  /** The id Dify DSLs name it by (`api_based_extension_id`). */
  readonly id: string;
  readonly name: string;
  /** Where `POST {point, params}` goes; through the SSRF guard (`SSRF_ALLOW_HOSTS`). */
  readonly apiEndpoint: string;
  /** Sent as `Authorization: Bearer <api_key>`. */
  readonly apiKey: string;
}

/** Moderation and API-based extension settings. */
export interface ModerationConfig {
  /** `api_based_extensions` of dovetail.yaml, by id. */
  readonly extensions: readonly ApiBasedExtension[];
  /** `API_EXTENSION_TIMEOUT`, seconds (default 60 as Dify's read timeout): connect and idle-read timeout of one extension call. */
  readonly extensionTimeoutSeconds: number;
  /** `API_EXTENSION_RESPONSE_MAX_SIZE`, bytes (default 1 MiB): the largest extension answer read. */
  readonly extensionMaxResponseBytes: number;
  /** `MODERATION_BUFFER_SIZE`, characters (default 300 as Dify): output is checked each time this much more has streamed. */
  readonly bufferSize: number;
  /** `MODERATION_OPENAI_MODEL` (default `omni-moderation-latest`, Dify's): the model of the `openai_moderation` type, on the `openai` provider. */
  readonly openaiModel: string;
}

type Env = Record<string, string | undefined>;


/** Reads `api_based_extensions` (a list of `{id, name, api_endpoint, api_key}`); throws ConfigError naming a bad entry. */
export function readApiBasedExtensions(file: Record<string, unknown>): ApiBasedExtension[] {
  const raw = file.api_based_extensions;
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) throw new ConfigError('api_based_extensions must be a list of {id, name, api_endpoint, api_key}');
  const seen = new Set<string>();
  return raw.map((entry: unknown, i) => {
    const key = `api_based_extensions[${i}]`;
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) throw new ConfigError(`${key} must be a mapping (id, name, api_endpoint, api_key)`);
    const e = entry as Record<string, unknown>;
    if (typeof e.id !== 'string' || e.id.trim() === '') throw new ConfigError(`${key}.id must be a non-empty string (the api_based_extension_id DSLs name)`);
    if (seen.has(e.id)) throw new ConfigError(`${key}.id: "${e.id}" is listed twice`);
    seen.add(e.id);
    if (typeof e.api_endpoint !== 'string' || !/^https?:\/\/\S+$/.test(e.api_endpoint)) throw new ConfigError(`${key}.api_endpoint must be an http(s) URL`);
    if (typeof e.api_key !== 'string' || e.api_key === '') throw new ConfigError(`${key}.api_key must be a non-empty string`);
    if (e.name !== undefined && typeof e.name !== 'string') throw new ConfigError(`${key}.name must be a string`);
    return { id: e.id, name: typeof e.name === 'string' ? e.name : e.id, apiEndpoint: e.api_endpoint, apiKey: e.api_key };
  });
}

/** Reads the moderation settings from env and dovetail.yaml; throws ConfigError naming a bad key. */
export function readModerationConfig(env: Env, file: Record<string, unknown>): ModerationConfig {
  const model = env.MODERATION_OPENAI_MODEL ?? (typeof file.MODERATION_OPENAI_MODEL === 'string' ? file.MODERATION_OPENAI_MODEL : undefined);
  return Object.freeze({
    extensions: readApiBasedExtensions(file),
    extensionTimeoutSeconds: positiveInt(env, file, 'API_EXTENSION_TIMEOUT', 60),
    extensionMaxResponseBytes: positiveInt(env, file, 'API_EXTENSION_RESPONSE_MAX_SIZE', 1024 * 1024),
    bufferSize: positiveInt(env, file, 'MODERATION_BUFFER_SIZE', 300),
    openaiModel: model && model.trim() !== '' ? model.trim() : 'omni-moderation-latest',
  });
}
