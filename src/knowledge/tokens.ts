import { countTokens as cl100k } from 'gpt-tokenizer/encoding/cl100k_base';

/** Token count with the cl100k_base tokenizer (gpt-tokenizer: pure JS, ranks bundled, no network). */
export function countTokens(text: string): number {
  return text === '' ? 0 : cl100k(text);
}
