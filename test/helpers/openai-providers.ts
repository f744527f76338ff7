import { ProviderRegistry } from '../../src/llm/provider-registry.js';

/**
 * The real provider registry with every OpenAI-compatible provider name pointed at one base URL
 * (the local fake upstream), so `llm` nodes speak the real protocol through the real SDK path.
 */
export function openAiCompatibleProviders(baseUrl: string): ProviderRegistry {
  const endpoint = { apiKey: 'test-key', baseUrl };
  return new ProviderRegistry({ openai: endpoint, openaiCompatible: endpoint, anthropic: { apiKey: undefined, baseUrl: undefined } });
}
