import { AnthropicProvider } from './anthropic-provider.js';
import { BedrockProvider } from './bedrock-provider.js';
import { providerNotInitialize } from './errors.js';
import { MockProvider } from './mock-provider.js';
import type { ModelProvider, ModelProviders } from './model-provider.js';
import { OpenAIProvider } from './openai-provider.js';
import { providerReadiness, resolveProvider, type ProviderReadiness, type ResolvedProvider } from './provider-readiness.js';
import type { ProvidersConfig } from './provider-settings.js';
import type { Protocol } from './provider-table.js';

/** Builds the provider of a resolved (and ready) entry. */
const FACTORIES: Readonly<Record<Protocol, (r: ResolvedProvider, keepAliveMs: number | undefined) => ModelProvider>> = {
  'openai-compatible': (r, keepAliveMs) =>
    new OpenAIProvider({ name: r.name, apiKey: r.settings.apiKey ?? 'not-needed', baseUrl: r.settings.baseUrl, strictParams: r.builtin?.strictParams === true, keepAliveMs, functionCalling: r.settings.functionCalling }),
  'azure-openai': (r, keepAliveMs) =>
    new OpenAIProvider({
      name: r.name,
      apiKey: r.settings.apiKey!,
      baseUrl: r.settings.baseUrl,
      strictParams: true,
      azure: { apiVersion: r.settings.apiVersion!, deployment: r.settings.deployment },
      keepAliveMs,
    }),
  anthropic: (r, keepAliveMs) => new AnthropicProvider({ name: r.name, apiKey: r.settings.apiKey!, baseUrl: r.settings.baseUrl, keepAliveMs }),
  'bedrock-converse': (r) =>
    new BedrockProvider({
      region: r.settings.region!,
      endpoint: r.settings.baseUrl,
      credentials: { accessKeyId: r.settings.accessKeyId!, secretAccessKey: r.settings.secretAccessKey!, sessionToken: r.settings.sessionToken },
    }),
  mock: () => new MockProvider(),
  'rerank-only': (r) => {
    throw providerNotInitialize(`Model provider "${r.name}" serves rerank models only (knowledge retrieval's reranking_model); it cannot answer as a chat or completion model.`);
  },
};

/** DSL provider names whose provider is remembered (`ProviderRegistry.get`). */
const MAX_DSL_NAMES = 256;

/**
 * The model providers of this server: every DSL provider name (alias or plugin id) resolves
 * through the built-in table (`provider-table.ts`) and `providers:` of `dovetail.yaml`; each
 * provider is built on first use and kept. An unknown or unconfigured one throws
 * `provider_not_initialize` naming the setting to set.
 */
export class ProviderRegistry implements ModelProviders {
  readonly #config: ProvidersConfig;
  readonly #built = new Map<string, ModelProvider>();
  /**
   * The provider of each DSL name asked for (alias and plugin id included): the configuration does
   * not change while the process runs, so a name resolves once, not on every model call.
   */
  readonly #byDslName = new Map<string, ModelProvider>();

  constructor(config: ProvidersConfig) {
    this.#config = config;
  }

  get(provider: string): ModelProvider {
    const known = this.#byDslName.get(provider);
    if (known) return known;
    const readiness = providerReadiness(this.#config, provider);
    if (!readiness.ready) throw providerNotInitialize(readiness.message);
    let p = this.#built.get(readiness.provider);
    if (!p) {
      p = FACTORIES[readiness.protocol](resolveProvider(this.#config, provider)!, this.#config.keepAliveMs);
      this.#built.set(readiness.provider, p);
    }
    // DSL names come from imported apps: the map is bounded, and starts again when full.
    if (this.#byDslName.size >= MAX_DSL_NAMES) this.#byDslName.clear();
    this.#byDslName.set(provider, p);
    return p;
  }

  /** `providerReadiness` for this server's configuration. */
  readiness(provider: string): ProviderReadiness {
    return providerReadiness(this.#config, provider);
  }
}
