import type { ModelPrice } from '../config.js';
import { pricedUsage } from './priced-usage.js';
import type { ProviderUsage } from './model-provider.js';

/** Dify's `metadata.usage` object; prices are decimal strings, latency is seconds. */
export interface UsageBody {
  prompt_tokens: number;
  prompt_unit_price: string;
  prompt_price_unit: string;
  prompt_price: string;
  completion_tokens: number;
  completion_unit_price: string;
  completion_price_unit: string;
  completion_price: string;
  total_tokens: number;
  total_price: string;
  currency: string;
  latency: number;
}

/** Token counts of `texts`, in order (`TextOffload.countTokens`: off the event loop for large texts). */
export type TokenCounter = (texts: readonly string[]) => Promise<number[]>;

export interface UsageInput {
  /** What the provider reported, if anything. */
  readonly reported: ProviderUsage | undefined;
  readonly promptText: string;
  readonly answer: string;
  readonly price: ModelPrice | undefined;
  readonly latencySeconds: number;
}

/**
 * Builds `metadata.usage`: token counts from the provider when it reported them, otherwise counted
 * with the tokenizer through `count` (both texts in one call); prices from the model's row of the
 * price table (zero when it has none).
 */
export async function buildUsage(u: UsageInput, count: TokenCounter): Promise<UsageBody> {
  let promptTokens = u.reported?.promptTokens;
  let completionTokens = u.reported?.completionTokens;
  if (promptTokens === undefined || completionTokens === undefined) {
    const [p, c] = await count([promptTokens === undefined ? u.promptText : '', completionTokens === undefined ? u.answer : '']);
    promptTokens ??= p!;
    completionTokens ??= c!;
  }
  return pricedUsage(promptTokens, completionTokens, u.price, u.latencySeconds);
}
