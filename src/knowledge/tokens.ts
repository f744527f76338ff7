import { getEncoding, type Tiktoken } from 'js-tiktoken';

let enc: Tiktoken | undefined;

/** Token count with the cl100k_base tokenizer (pure JS, ranks bundled, no network). */
export function countTokens(text: string): number {
  if (text === '') return 0;
  enc ??= getEncoding('cl100k_base');
  return enc.encode(text).length;
}
