import { BUILTIN_PROVIDERS, builtinProvider, normaliseProviderName, settingsPrefix, type Protocol } from './provider-table.js';
import { ConfigError } from '../config-error.js';

/** One provider's credentials and address, as configured. */
export interface ProviderSettings {
  readonly apiKey?: string;
  /** Base URL (`NAME_BASE_URL`); for Azure its resource endpoint (`AZURE_OPENAI_ENDPOINT` too). */
  readonly baseUrl?: string;
  /** Azure: `api-version` query parameter (`AZURE_OPENAI_API_VERSION`). */
  readonly apiVersion?: string;
  /** Azure: deployment every call goes to (`AZURE_OPENAI_DEPLOYMENT`); unset = the DSL's model name, as Dify. */
  readonly deployment?: string;
  /** Bedrock: AWS region (`BEDROCK_REGION`). */
  readonly region?: string;
  readonly accessKeyId?: string;
  readonly secretAccessKey?: string;
  readonly sessionToken?: string;
  /**
   * OpenAI-compatible servers: which models call functions (`NAME_FUNCTION_CALLING`): `true` (the
   * default: every model), `false` (none), or the model names that do, comma-separated. Dify's
   * `function_calling_type` of a custom model; see `callsFunctions` (model-provider.ts).
   */
  readonly functionCalling?: string;
}

/** The protocols a provider added in `dovetail.yaml` may speak. */
export const CUSTOM_PROTOCOLS = ['openai', 'anthropic'] as const;

/** Everything `providers:` (and the provider env variables) configure. */
export interface ProvidersConfig {
  /** By provider name: built-in (canonical name) and added ones. */
  readonly settings: Readonly<Record<string, ProviderSettings>>;
  /** Providers added in `dovetail.yaml` (`providers.NAME.protocol`), by name. */
  readonly custom: Readonly<Record<string, Protocol>>;
  /** Where a DSL provider Dovetail does not know goes (`providers.default` / `PROVIDERS_DEFAULT`). */
  readonly default: string | undefined;
  /**
   * How long an idle connection to a model server is kept for the next request, ms
   * (`MODEL_HTTP_KEEPALIVE_SECONDS`, default 60); a server's own `Keep-Alive: timeout` is kept to.
   */
  readonly keepAliveMs?: number;
}

type Field = keyof ProviderSettings;

/** Setting suffix and `dovetail.yaml` key of each field. */
const FIELDS: Readonly<Record<Field, { readonly env: string; readonly yaml: string }>> = {
  apiKey: { env: 'API_KEY', yaml: 'api_key' },
  baseUrl: { env: 'BASE_URL', yaml: 'base_url' },
  apiVersion: { env: 'API_VERSION', yaml: 'api_version' },
  deployment: { env: 'DEPLOYMENT', yaml: 'deployment' },
  region: { env: 'REGION', yaml: 'region' },
  accessKeyId: { env: 'ACCESS_KEY_ID', yaml: 'access_key_id' },
  secretAccessKey: { env: 'SECRET_ACCESS_KEY', yaml: 'secret_access_key' },
  sessionToken: { env: 'SESSION_TOKEN', yaml: 'session_token' },
  functionCalling: { env: 'FUNCTION_CALLING', yaml: 'function_calling' },
};

/** The fields each protocol reads. */
export const PROTOCOL_FIELDS: Readonly<Record<Protocol, readonly Field[]>> = {
  'openai-compatible': ['apiKey', 'baseUrl', 'functionCalling'],
  anthropic: ['apiKey', 'baseUrl'],
  'azure-openai': ['apiKey', 'baseUrl', 'apiVersion', 'deployment'],
  'bedrock-converse': ['baseUrl', 'region', 'accessKeyId', 'secretAccessKey', 'sessionToken'],
  mock: [],
  'rerank-only': ['apiKey', 'baseUrl'],
};

/** The name of a provider's setting: `DEEPSEEK_API_KEY`, `AZURE_OPENAI_API_VERSION`, … */
export function settingName(provider: string, field: Field): string {
  return `${settingsPrefix(provider)}_${FIELDS[field].env}`;
}

/** Where the same setting goes in `dovetail.yaml`. */
export function yamlSettingName(provider: string, field: Field): string {
  return `providers.${provider}.${FIELDS[field].yaml}`;
}

/**
 * Reads every provider's settings: for each provider NAME (and each alias), the variables
 * `NAME_API_KEY`, `NAME_BASE_URL` and the protocol's extra ones, from `setting` (the environment,
 * then top-level `dovetail.yaml` keys), and `providers.NAME.*` of `dovetail.yaml` below them.
 * Throws an Error naming the bad key.
 */
export function readProviderSettings(setting: (key: string) => string | undefined, rawYaml: unknown): ProvidersConfig {
  const yaml = checkYaml(rawYaml);
  const settings: Record<string, ProviderSettings> = {};
  const custom: Record<string, Protocol> = {};
  const read = (name: string, names: readonly string[], protocol: Protocol): ProviderSettings => {
    const out: Partial<Record<Field, string>> = {};
    for (const field of PROTOCOL_FIELDS[protocol]) {
      let v: string | undefined;
      for (const n of names) v ??= setting(settingName(n, field));
      if (field === 'baseUrl' && protocol === 'azure-openai') for (const n of names) v ??= setting(`${settingsPrefix(n)}_ENDPOINT`);
      for (const n of names) v ??= yaml.entries[n]?.[FIELDS[field].yaml];
      if (field === 'baseUrl' && protocol === 'azure-openai') for (const n of names) v ??= yaml.entries[n]?.endpoint;
      if (v !== undefined && v !== '') out[field] = field === 'baseUrl' ? checkUrl(v, settingName(name, field)) : v;
    }
    return out;
  };
  for (const p of BUILTIN_PROVIDERS) {
    const names = [p.name, ...(p.aliases ?? [])];
    const own = yaml.entries[p.name]?.protocol;
    const protocol = own ? customProtocol(own, p.name) : p.protocol;
    if (own) custom[p.name] = protocol;
    settings[p.name] = read(p.name, names, protocol);
  }
  for (const [name, entry] of Object.entries(yaml.entries)) {
    if (builtinProvider(name)) continue;
    if (!entry.protocol) throw new ConfigError(`providers.${name}.protocol is required for a provider Dovetail does not know (one of: ${CUSTOM_PROTOCOLS.join(', ')})`);
    custom[name] = customProtocol(entry.protocol, name);
    settings[name] = read(name, [name], custom[name]!);
  }
  const rawDefault = setting('PROVIDERS_DEFAULT') ?? yaml.default;
  let fallback: string | undefined;
  if (rawDefault !== undefined && rawDefault !== '') {
    fallback = normaliseProviderName(rawDefault, (n) => n in settings);
    if (!(fallback in settings)) throw new ConfigError(`providers.default (PROVIDERS_DEFAULT) names "${rawDefault}", which is neither a built-in provider nor one under providers:`);
  }
  return Object.freeze({ settings: Object.freeze(settings), custom: Object.freeze(custom), default: fallback });
}

const YAML_KEYS = new Set([...Object.values(FIELDS).map((f) => f.yaml), 'endpoint', 'protocol']);

/** `providers:` of `dovetail.yaml`, checked: a mapping of name to a mapping of known string keys, and `default`. */
function checkYaml(raw: unknown): { entries: Record<string, Record<string, string>>; default: string | undefined } {
  if (raw === undefined || raw === null) return { entries: {}, default: undefined };
  if (typeof raw !== 'object' || Array.isArray(raw)) throw new ConfigError('providers must be a mapping of provider name to its settings');
  const entries: Record<string, Record<string, string>> = {};
  let fallback: string | undefined;
  for (const [key, value] of Object.entries(raw as Record<string, unknown>)) {
    if (key === 'default') {
      if (typeof value !== 'string') throw new ConfigError('providers.default must be a provider name');
      fallback = value;
      continue;
    }
    const name = key.trim().toLowerCase();
    if (!/^[a-z0-9][a-z0-9_.-]*$/.test(name)) throw new ConfigError(`providers.${key}: a provider name is letters, digits, "_", "-" and "."`);
    if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new ConfigError(`providers.${key} must be a mapping (api_key, base_url, …)`);
    const entry: Record<string, string> = {};
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      if (!YAML_KEYS.has(k)) throw new ConfigError(`providers.${key}.${k} is not a provider setting (one of: ${[...YAML_KEYS].join(', ')})`);
      if (typeof v === 'boolean' && k === FIELDS.functionCalling.yaml) {
        entry[k] = String(v);
        continue;
      }
      if (typeof v !== 'string' && typeof v !== 'number') throw new ConfigError(`providers.${key}.${k} must be a string`);
      entry[k] = String(v);
    }
    entries[name] = entry;
  }
  return { entries, default: fallback };
}

function customProtocol(raw: string, name: string): Protocol {
  const p = raw.trim().toLowerCase();
  if (p === 'openai' || p === 'openai-compatible' || p === 'openai_api_compatible') return 'openai-compatible';
  if (p === 'anthropic') return 'anthropic';
  throw new ConfigError(`providers.${name}.protocol must be one of: ${CUSTOM_PROTOCOLS.join(', ')}; got "${raw}"`);
}

function checkUrl(raw: string, key: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(`${key} must be an http(s) URL, got "${raw}"`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ConfigError(`${key} must be an http(s) URL, got "${raw}"`);
  return raw.replace(/\/+$/, '');
}
