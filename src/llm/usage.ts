import { pricedUsage, type ModelPrice, type UsageBody } from '../lib/usage.js';
import type { ProviderUsage } from './model-provider.js';

export type { UsageBody } from '../lib/usage.js';


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
