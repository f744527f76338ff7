/**
 * The built-in model providers: data, not code paths. Each entry is a DSL provider name (Dify's
 * provider id; its plugin id `langgenius/NAME/NAME` resolves to it), the wire protocol Dovetail
 * speaks to it, its default base URL and the settings it needs. Settings are named after the
 * provider: `NAME_API_KEY`, `NAME_BASE_URL` (NAME upper-cased, non-alphanumerics as `_`), plus the
 * protocol's extra ones (`provider-settings.ts`).
 */

/** How Dovetail talks to a provider. */
export const PROTOCOLS = ['openai-compatible', 'anthropic', 'azure-openai', 'bedrock-converse', 'mock', 'rerank-only'] as const;
export type Protocol = (typeof PROTOCOLS)[number];

/**
 * How a provider's rerank endpoint is spoken (src/knowledge/retrieval/rerank-client.ts):
 * `cohere` is `POST {base}/rerank` with `{model, query, documents, top_n}` answering
 * `results[{index, relevance_score}]` (Cohere, Jina, SiliconFlow, Xinference, LocalAI, vLLM, GPUStack);
 * `voyage` the same with `top_k`, answering `data[…]`; `tei` a text-embeddings-inference server's
 * `{query, texts}` answering `[{index, score}]`.
 */
export const RERANK_DIALECTS = ['cohere', 'voyage', 'tei'] as const;
export type RerankDialect = (typeof RERANK_DIALECTS)[number];

export interface BuiltinProvider {
  /** The DSL provider name (`model.provider`), lower case. */
  readonly name: string;
  /** Other DSL names for the same provider (each also gets its own settings names). */
  readonly aliases?: readonly string[];
  /** Shown in `GET /workspaces/current/models/...`. */
  readonly label: string;
  readonly protocol: Protocol;
  /** Base URL used when `NAME_BASE_URL` is unset; absent = the setting is required. */
  readonly baseUrl?: string;
  /**
   * A self-hosted server: no key needed, but its address must be set (`NAME_BASE_URL`); `usualBaseUrl`
   * is where it listens by default, quoted in the error that asks for the setting.
   */
  readonly selfHosted?: { readonly usualBaseUrl?: string };
  /**
   * Before Dovetail had this table the name was an alias of this provider and used its settings:
   * they still apply when the provider's own are unset.
   */
  readonly legacySettingsOf?: string;
  /** OpenAI's own API refuses parameters it does not know; other OpenAI-compatible servers get a few more (`top_k`, …). */
  readonly strictParams?: boolean;
  /** Serves rerank models (`reranking_model.reranking_provider_name`) in this dialect. */
  readonly rerank?: RerankDialect;
}

/**
 * Default base URLs are the providers' documented OpenAI-compatible (or native) endpoints; see
 * docs/decisions.md ("Model providers") for where each comes from.
 */
export const BUILTIN_PROVIDERS: readonly BuiltinProvider[] = [
  { name: 'openai', label: 'OpenAI', protocol: 'openai-compatible', baseUrl: 'https://api.openai.com/v1', strictParams: true },
  { name: 'azure_openai', label: 'Azure OpenAI Service Model', protocol: 'azure-openai', strictParams: true },
  { name: 'anthropic', label: 'Anthropic', protocol: 'anthropic', baseUrl: 'https://api.anthropic.com' },
  { name: 'google', aliases: ['gemini'], label: 'Gemini', protocol: 'openai-compatible', baseUrl: 'https://generativelanguage.googleapis.com/v1beta/openai' },
  { name: 'deepseek', label: 'DeepSeek', protocol: 'openai-compatible', baseUrl: 'https://api.deepseek.com/v1' },
  { name: 'moonshot', label: 'Moonshot AI', protocol: 'openai-compatible', baseUrl: 'https://api.moonshot.cn/v1' },
  { name: 'tongyi', label: 'TONGYI', protocol: 'openai-compatible', baseUrl: 'https://dashscope.aliyuncs.com/compatible-mode/v1' },
  { name: 'volcengine_maas', label: 'Volcengine', protocol: 'openai-compatible', baseUrl: 'https://ark.cn-beijing.volces.com/api/v3' },
  { name: 'zhipuai', label: 'ZHIPU AI', protocol: 'openai-compatible', baseUrl: 'https://open.bigmodel.cn/api/paas/v4' },
  { name: 'siliconflow', label: 'SiliconFlow', protocol: 'openai-compatible', baseUrl: 'https://api.siliconflow.cn/v1', rerank: 'cohere' },
  { name: 'groq', label: 'Groq Cloud', protocol: 'openai-compatible', baseUrl: 'https://api.groq.com/openai/v1' },
  { name: 'mistralai', label: 'Mistral AI', protocol: 'openai-compatible', baseUrl: 'https://api.mistral.ai/v1' },
  { name: 'openrouter', label: 'OpenRouter', protocol: 'openai-compatible', baseUrl: 'https://openrouter.ai/api/v1' },
  { name: 'x', aliases: ['xai'], label: 'xAI', protocol: 'openai-compatible', baseUrl: 'https://api.x.ai/v1' },
  { name: 'togetherai', label: 'together.ai', protocol: 'openai-compatible', baseUrl: 'https://api.together.xyz/v1' },
  { name: 'fireworks', label: 'Fireworks', protocol: 'openai-compatible', baseUrl: 'https://api.fireworks.ai/inference/v1' },
  { name: 'perplexity', label: 'Perplexity', protocol: 'openai-compatible', baseUrl: 'https://api.perplexity.ai' },
  { name: 'minimax', label: 'Minimax', protocol: 'openai-compatible', baseUrl: 'https://api.minimax.io/v1' },
  { name: 'baichuan', label: 'Baichuan', protocol: 'openai-compatible', baseUrl: 'https://api.baichuan-ai.com/v1' },
  { name: 'hunyuan', label: 'Hunyuan', protocol: 'openai-compatible', baseUrl: 'https://api.hunyuan.cloud.tencent.com/v1' },
  { name: 'bedrock', label: 'AWS Bedrock', protocol: 'bedrock-converse' },
  { name: 'ollama', label: 'Ollama', protocol: 'openai-compatible', selfHosted: { usualBaseUrl: 'http://localhost:11434/v1' }, legacySettingsOf: 'openai_api_compatible' },
  { name: 'vllm', label: 'vLLM', protocol: 'openai-compatible', selfHosted: { usualBaseUrl: 'http://localhost:8000/v1' }, legacySettingsOf: 'openai_api_compatible', rerank: 'cohere' },
  { name: 'lm_studio', label: 'LM Studio', protocol: 'openai-compatible', selfHosted: { usualBaseUrl: 'http://localhost:1234/v1' }, legacySettingsOf: 'openai_api_compatible' },
  { name: 'localai', label: 'LocalAI', protocol: 'openai-compatible', selfHosted: { usualBaseUrl: 'http://localhost:8080/v1' }, rerank: 'cohere' },
  { name: 'xinference', label: 'Xorbits Inference', protocol: 'openai-compatible', selfHosted: { usualBaseUrl: 'http://localhost:9997/v1' }, rerank: 'cohere' },
  { name: 'gpustack', label: 'GPUStack', protocol: 'openai-compatible', selfHosted: {}, rerank: 'cohere' },
  { name: 'openai_api_compatible', label: 'OpenAI-API-compatible', protocol: 'openai-compatible', selfHosted: {}, rerank: 'cohere' },
  { name: 'mock', label: 'Mock model (built in)', protocol: 'mock' },
  // Rerank-only providers: their models rank documents (knowledge retrieval's reranking), they do not chat.
  { name: 'jina', label: 'Jina AI', protocol: 'rerank-only', baseUrl: 'https://api.jina.ai/v1', rerank: 'cohere' },
  { name: 'cohere', label: 'Cohere', protocol: 'rerank-only', baseUrl: 'https://api.cohere.com/v1', rerank: 'cohere' },
  { name: 'voyage', label: 'Voyage AI', protocol: 'rerank-only', baseUrl: 'https://api.voyageai.com/v1', rerank: 'voyage' },
  { name: 'huggingface_tei', label: 'Text Embedding Inference', protocol: 'rerank-only', selfHosted: { usualBaseUrl: 'http://localhost:8080' }, rerank: 'tei' },
];

const BY_NAME: ReadonlyMap<string, BuiltinProvider> = new Map(BUILTIN_PROVIDERS.flatMap((p) => [p.name, ...(p.aliases ?? [])].map((n) => [n, p] as const)));

/** The built-in provider a (normalised) DSL name means, alias or not. */
export function builtinProvider(name: string): BuiltinProvider | undefined {
  return BY_NAME.get(name);
}

/**
 * A DSL `model.provider` as a plain lower-case provider name: a plugin id `org/plugin/provider`
 * names its provider last (`langgenius/gemini/google` is `google`), and its plugin in the middle
 * (used when the last part is not a known provider but the middle one is). Empty (Dify's
 * "workspace default model") is `openai`.
 */
export function normaliseProviderName(dslProvider: string, known: (name: string) => boolean = (n) => BY_NAME.has(n)): string {
  const raw = dslProvider.trim().toLowerCase();
  if (raw === '') return 'openai';
  const parts = raw.split('/');
  if (parts.length !== 3 || parts.some((p) => p === '')) return raw;
  const [, plugin, provider] = parts as [string, string, string];
  return known(provider) || !known(plugin) ? provider : plugin;
}

/** The settings prefix of a provider name: upper case, non-alphanumerics as `_` (`volcengine_maas` → `VOLCENGINE_MAAS`). */
export function settingsPrefix(name: string): string {
  return name.toUpperCase().replace(/[^A-Z0-9]/g, '_');
}
