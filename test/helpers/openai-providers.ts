import { readProviderSettings } from '../../src/llm/provider-settings.js';
import { ProviderRegistry } from '../../src/llm/provider-registry.js';

/**
 * The settings that point `openai` and `openai_api_compatible` at `baseUrl`: the environment of a
 * server in its own process (`child-server.mjs`), and the source of `openAiCompatibleProviders`.
 */
export function openAiCompatibleEnv(baseUrl: string): Record<string, string> {
  return { OPENAI_API_KEY: 'test-key', OPENAI_BASE_URL: baseUrl, OPENAI_API_COMPATIBLE_API_KEY: 'test-key', OPENAI_API_COMPATIBLE_BASE_URL: baseUrl };
}

/**
 * The real provider registry with the OpenAI-compatible providers `openai` and
 * `openai_api_compatible` (and its legacy aliases `ollama`, `vllm`, `lm_studio`) pointed at one
 * base URL (the local fake upstream), so `llm` nodes speak the real protocol through the real SDK path.
 */
export function openAiCompatibleProviders(baseUrl: string): ProviderRegistry {
  const env = openAiCompatibleEnv(baseUrl);
  return new ProviderRegistry(readProviderSettings((k) => env[k], undefined));
}
