import { invalidParam } from '../infra/errors.js';
import { LocalEmbedder, OpenAIEmbedder, type Embedder, type EmbeddingsSettings } from '../knowledge/ingest/embedder.js';

/** The provider name offered with the built-in model (any name works: it chooses nothing). */
const LOCAL_PROVIDER = 'dovetail';
/** The provider name offered with the endpoint's model: Dify's OpenAI-compatible provider. */
const ENDPOINT_PROVIDER = 'langgenius/openai_api_compatible/openai_api_compatible';

/**
 * Maps the `embedding_provider_name` / `embedding_model_name` of an annotation-reply enable call
 * onto the embedders Dovetail has:
 * - the model `universal-sentence-encoder-lite` (any provider name) is the built-in offline model;
 * - any other model name goes to the OpenAI-compatible endpoint `EMBEDDINGS_BASE_URL` with that
 *   model name, when the endpoint is configured;
 * - otherwise the call is refused with a 400 that names both settings.
 * The provider name is stored and reported but chooses nothing.
 */
export class EmbeddingModels {
  readonly #cfg: EmbeddingsSettings;
  readonly #cache = new Map<string, Embedder>();
  readonly #local: Embedder;

  constructor(cfg: EmbeddingsSettings, shared: Embedder) {
    this.#cfg = cfg;
    this.#local = shared instanceof LocalEmbedder ? shared : new LocalEmbedder();
  }

  /**
   * The models an enable call can name here: the built-in one, and the configured endpoint's
   * default model (`EMBEDDINGS_MODEL`) when `EMBEDDINGS_BASE_URL` is set (any other model of that
   * endpoint works too; these are the ones a settings form offers).
   */
  available(): { provider: string; model: string }[] {
    const out = [{ provider: LOCAL_PROVIDER, model: this.#local.model }];
    if (this.#cfg.embeddingsBaseUrl && this.#cfg.embeddingsModel !== this.#local.model) out.push({ provider: ENDPOINT_PROVIDER, model: this.#cfg.embeddingsModel });
    return out;
  }

  /** Throws 400 `invalid_param` when the model cannot be served (nothing is cached). */
  check(provider: string, model: string): void {
    if (model !== this.#local.model && !this.#cfg.embeddingsBaseUrl) this.get(provider, model);
  }

  get(provider: string, model: string): Embedder {
    if (model === this.#local.model) return this.#local;
    const base = this.#cfg.embeddingsBaseUrl;
    if (!base) {
      throw invalidParam(
        `embedding_model_name "${model}" (embedding_provider_name "${provider}") is not available: this server embeds with "${this.#local.model}" only; set EMBEDDINGS_BASE_URL to use an OpenAI-compatible embeddings endpoint`,
      );
    }
    // Models of enabled settings only reach here (the names are capped at enable), so the cache
    // stays as small as the set of models in use; it is cleared should it ever grow past that.
    let e = this.#cache.get(model);
    if (!e) {
      e = new OpenAIEmbedder(base, model, this.#cfg.embeddingsApiKey);
      if (this.#cache.size >= 64) this.#cache.clear();
      this.#cache.set(model, e);
    }
    return e;
  }
}
