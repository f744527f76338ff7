import { Tiktoken } from 'js-tiktoken/lite';
import cl100k from 'js-tiktoken/ranks/cl100k_base';
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

let encoder: Tiktoken | undefined;

/** Tokens of `text` by cl100k_base (used when the provider reports no usage). */
export function countTokens(text: string): number {
  if (!text) return 0;
  encoder ??= new Tiktoken(cl100k);
  return encoder.encode(text).length;
}

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
 * with the tokenizer; prices from the model's row of the price table (zero when it has none).
 */
export function buildUsage(u: UsageInput): UsageBody {
  const promptTokens = u.reported?.promptTokens ?? countTokens(u.promptText);
  const completionTokens = u.reported?.completionTokens ?? countTokens(u.answer);
  return pricedUsage(promptTokens, completionTokens, u.price, u.latencySeconds);
}
