import { addDecimals, priceOf } from './decimal.js';

/** A model's row of the price table (`prices` in dovetail.yaml). */
export interface ModelPrice {
  /** Decimal string, price per `unit` input tokens. */
  readonly input: string;
  /** Decimal string, price per `unit` output tokens. */
  readonly output: string;
  /** Decimal string, e.g. "0.001" meaning prices are per 1,000 tokens. */
  readonly unit: string;
  readonly currency: string;
}

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

/** The usage of no model call (Dify's `LLMUsage.empty_usage()`). */
export const EMPTY_USAGE: UsageBody = Object.freeze({
  prompt_tokens: 0,
  prompt_unit_price: '0',
  prompt_price_unit: '0',
  prompt_price: '0',
  completion_tokens: 0,
  completion_unit_price: '0',
  completion_price_unit: '0',
  completion_price: '0',
  total_tokens: 0,
  total_price: '0',
  currency: 'USD',
  latency: 0,
});

/** One model call's usage, priced from the model's row of the price table (zero when it has none). */
export function pricedUsage(promptTokens: number, completionTokens: number, price: ModelPrice | undefined, latencySeconds: number): UsageBody {
  const unit = price?.unit ?? '0';
  const inPrice = price?.input ?? '0';
  const outPrice = price?.output ?? '0';
  const promptPrice = priceOf(promptTokens, inPrice, unit);
  const completionPrice = priceOf(completionTokens, outPrice, unit);
  return {
    prompt_tokens: promptTokens,
    prompt_unit_price: inPrice,
    prompt_price_unit: unit,
    prompt_price: promptPrice,
    completion_tokens: completionTokens,
    completion_unit_price: outPrice,
    completion_price_unit: unit,
    completion_price: completionPrice,
    total_tokens: promptTokens + completionTokens,
    total_price: addDecimals([promptPrice, completionPrice]),
    currency: price?.currency ?? 'USD',
    latency: latencySeconds,
  };
}

/**
 * The sum of two usages, as Dify's `LLMUsage.plus`: tokens, prices and latency add up; unit
 * prices and currency are the later call's. An empty left side yields the right one.
 */
export function plusUsage(a: UsageBody | undefined, b: UsageBody | undefined): UsageBody | undefined {
  if (!b) return a;
  if (!a || a.total_tokens === 0) return b;
  return {
    prompt_tokens: a.prompt_tokens + b.prompt_tokens,
    prompt_unit_price: b.prompt_unit_price,
    prompt_price_unit: b.prompt_price_unit,
    prompt_price: addDecimals([a.prompt_price, b.prompt_price]),
    completion_tokens: a.completion_tokens + b.completion_tokens,
    completion_unit_price: b.completion_unit_price,
    completion_price_unit: b.completion_price_unit,
    completion_price: addDecimals([a.completion_price, b.completion_price]),
    total_tokens: a.total_tokens + b.total_tokens,
    total_price: addDecimals([a.total_price, b.total_price]),
    currency: b.currency,
    latency: a.latency + b.latency,
  };
}
