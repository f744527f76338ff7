import { settingName, yamlSettingName, type ProviderSettings, type ProvidersConfig } from './provider-settings.js';
import { builtinProvider, normaliseProviderName, type BuiltinProvider, type Protocol } from './provider-table.js';

/** Azure's `api-version` when `AZURE_OPENAI_API_VERSION` is unset (a GA data-plane version). */
export const AZURE_DEFAULT_API_VERSION = '2024-10-21';
/** Bedrock's region when `BEDROCK_REGION` is unset. */
export const BEDROCK_DEFAULT_REGION = 'us-east-1';

/** A DSL provider name resolved against the table and `providers:`. */
export interface ResolvedProvider {
  /** Canonical provider name (`google` for `gemini` and `langgenius/gemini/google`). */
  readonly name: string;
  readonly protocol: Protocol;
  readonly builtin: BuiltinProvider | undefined;
  /** Its settings with the table's defaults applied (base URL, Azure api-version, Bedrock region). */
  readonly settings: ProviderSettings;
  /** Reached through `providers.default` (the DSL named a provider Dovetail does not know). */
  readonly viaDefault: boolean;
}

/** Resolves a DSL `model.provider` (name, alias or plugin id); undefined when nothing serves it. */
export function resolveProvider(config: ProvidersConfig, dslProvider: string): ResolvedProvider | undefined {
  const known = (n: string) => builtinProvider(n) !== undefined || n in config.custom;
  const name = normaliseProviderName(dslProvider, known);
  const builtin = builtinProvider(name);
  if (builtin || name in config.custom) {
    const canonical = builtin?.name ?? name;
    const own = config.settings[canonical] ?? {};
    const legacy = builtin?.legacySettingsOf ? config.settings[builtin.legacySettingsOf] ?? {} : {};
    const merged: ProviderSettings = own.baseUrl === undefined ? { ...legacy, ...own } : own;
    const protocol = config.custom[canonical] ?? builtin!.protocol;
    const settings: ProviderSettings = {
      ...merged,
      baseUrl: merged.baseUrl ?? builtin?.baseUrl,
      ...(protocol === 'azure-openai' ? { apiVersion: merged.apiVersion ?? AZURE_DEFAULT_API_VERSION } : {}),
      ...(protocol === 'bedrock-converse' ? { region: merged.region ?? BEDROCK_DEFAULT_REGION } : {}),
    };
    return { name: canonical, protocol, builtin, settings, viaDefault: false };
  }
  if (config.default && config.default !== name) {
    const target = resolveProvider(config, config.default);
    return target && { ...target, viaDefault: true };
  }
  return undefined;
}

/** Whether a DSL provider can be called here, and if not, which settings are missing. */
export type ProviderReadiness =
  | { readonly ready: true; readonly provider: string; readonly protocol: Protocol; readonly viaDefault: boolean }
  | {
      readonly ready: false;
      /** The canonical provider name (or the DSL's, when Dovetail does not know it). */
      readonly provider: string;
      /** Settings to set, by environment name (`DEEPSEEK_API_KEY`); empty when the provider is unknown. */
      readonly missing: readonly string[];
      /** A sentence naming the provider and what to set (the `provider_not_initialize` message). */
      readonly message: string;
    };

/**
 * Is DSL provider `dslProvider` usable with this configuration, and if not, which setting is
 * missing? Pure: reads only `config`. The import checker and `provider_not_initialize` use it.
 */
export function providerReadiness(config: ProvidersConfig, dslProvider: string): ProviderReadiness {
  const r = resolveProvider(config, dslProvider);
  if (!r) {
    const name = normaliseProviderName(dslProvider);
    return {
      ready: false,
      provider: name,
      missing: [],
      message:
        `Model provider "${dslProvider}" is not supported: add it under providers: in dovetail.yaml ` +
        `(providers.${name}.protocol openai or anthropic, with base_url and api_key), or send every unknown provider to one with providers.default.`,
    };
  }
  const missing = missingFields(r);
  if (missing.length === 0) return { ready: true, provider: r.name, protocol: r.protocol, viaDefault: r.viaDefault };
  // Azure's base URL is its resource endpoint, as Dify's credential form calls it.
  const endpoint = (f: keyof ProviderSettings) => r.protocol === 'azure-openai' && f === 'baseUrl';
  const env = missing.map((f) => (endpoint(f) ? 'AZURE_OPENAI_ENDPOINT' : settingName(r.name, f)));
  const yaml = missing.map((f) => (endpoint(f) ? `providers.${r.name}.endpoint` : yamlSettingName(r.name, f)));
  const usual = r.builtin?.selfHosted?.usualBaseUrl && missing.includes('baseUrl') ? `; its server usually listens at ${r.builtin.selfHosted.usualBaseUrl}` : '';
  const routed = r.viaDefault ? ` (providers.default sends "${dslProvider}" to it)` : '';
  return {
    ready: false,
    provider: r.name,
    missing: env,
    message: `Model provider "${r.name}" is not configured${routed}: set ${env.join(' and ')} (or ${yaml.join(' and ')} in dovetail.yaml)${usual}.`,
  };
}

/** The settings a resolved provider still needs. */
function missingFields(r: ResolvedProvider): (keyof ProviderSettings)[] {
  const s = r.settings;
  const out: (keyof ProviderSettings)[] = [];
  switch (r.protocol) {
    case 'mock':
      break;
    case 'bedrock-converse':
      if (!s.accessKeyId) out.push('accessKeyId');
      if (!s.secretAccessKey) out.push('secretAccessKey');
      break;
    case 'azure-openai':
      if (!s.apiKey) out.push('apiKey');
      if (!s.baseUrl) out.push('baseUrl');
      break;
    default:
      // A self-hosted server needs its address, not a key; a hosted one needs a key (and an address when the table has none).
      if (!r.builtin?.selfHosted && !s.apiKey) out.push('apiKey');
      if (!s.baseUrl) out.push('baseUrl');
  }
  return out;
}

/**
 * The providers this configuration sets up and can call, by canonical name: those given a setting
 * (environment or `dovetail.yaml`) or added under `providers:`, that have what they need — the
 * start-up line names them. Built-in defaults alone (a table's base URL) do not count.
 */
export function configuredProviders(config: ProvidersConfig): string[] {
  return Object.entries(config.settings)
    .filter(([name, s]) => (name in config.custom || Object.values(s).some((v) => v !== undefined && v !== '')) && providerReadiness(config, name).ready)
    .map(([name]) => name)
    .sort();
}
