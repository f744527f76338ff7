import type { Config } from '../config.js';
import { AnthropicProvider } from './anthropic-provider.js';
import { providerNotInitialize } from './errors.js';
import { MockProvider } from './mock-provider.js';
import type { ModelProvider, ModelProviders } from './model-provider.js';
import { OpenAIProvider } from './openai-provider.js';

/** The provider families Dovetail speaks; each DSL provider name maps to one. */
export const PROVIDER_KINDS = ['openai', 'openai_api_compatible', 'anthropic', 'mock'] as const;
export type ProviderKind = (typeof PROVIDER_KINDS)[number];

const ALIASES: Readonly<Record<string, ProviderKind>> = {
  openai: 'openai',
  openai_api_compatible: 'openai_api_compatible',
  ollama: 'openai_api_compatible',
  vllm: 'openai_api_compatible',
  lm_studio: 'openai_api_compatible',
  anthropic: 'anthropic',
  mock: 'mock',
};

/** `langgenius/openai/openai` (plugin id) and `openai` name the same provider. */
export function providerKind(name: string): ProviderKind | undefined {
  // Dify exports may leave the provider empty (the workspace default model): use OpenAI-compatible.
  if (name.trim() === '') return 'openai';
  const plugin = /^[^/]+\/([^/]+)\/[^/]+$/.exec(name);
  return ALIASES[(plugin ? plugin[1]! : name).toLowerCase()];
}

type Providers = Config['providers'];

/** Builds providers from config on first use and keeps them; missing credentials are a 400. */
export class ProviderRegistry implements ModelProviders {
  readonly #config: Providers;
  readonly #built = new Map<ProviderKind, ModelProvider>();
  readonly #factories: Record<ProviderKind, () => ModelProvider>;

  constructor(config: Providers) {
    this.#config = config;
    this.#factories = {
      openai: () => {
        const { apiKey, baseUrl } = this.#config.openai;
        if (!apiKey) throw providerNotInitialize('Provider openai is not configured: set OPENAI_API_KEY (and OPENAI_BASE_URL for a compatible server).');
        return new OpenAIProvider({ name: 'openai', apiKey, baseUrl });
      },
      openai_api_compatible: () => {
        const { apiKey, baseUrl } = this.#config.openaiCompatible;
        if (!baseUrl) throw providerNotInitialize('Provider openai_api_compatible is not configured: set OPENAI_API_COMPATIBLE_BASE_URL.');
        return new OpenAIProvider({ name: 'openai_api_compatible', apiKey: apiKey ?? 'not-needed', baseUrl });
      },
      anthropic: () => {
        const { apiKey, baseUrl } = this.#config.anthropic;
        if (!apiKey) throw providerNotInitialize('Provider anthropic is not configured: set ANTHROPIC_API_KEY.');
        return new AnthropicProvider({ apiKey, baseUrl });
      },
      mock: () => new MockProvider(),
    };
  }

  get(provider: string): ModelProvider {
    const kind = providerKind(provider);
    if (!kind) throw providerNotInitialize(`Model provider "${provider}" is not supported; use one of: ${PROVIDER_KINDS.join(', ')}.`);
    let p = this.#built.get(kind);
    if (!p) {
      p = this.#factories[kind]();
      this.#built.set(kind, p);
    }
    return p;
  }
}
