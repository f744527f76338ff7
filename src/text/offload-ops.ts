import { chunkDocument, cleanText } from '../knowledge/ingest/chunk.js';
import { countTokens } from './tokenizer.js';

/**
 * The CPU-bound text operations `TextOffload` may run on a worker thread: pure functions of
 * structured-clonable arguments. The worker and the inline path call the same functions.
 */
export const OFFLOAD_OPS = {
  /** Token counts of `texts` (see `countTokens`). */
  countTokens: (texts: readonly string[]): number[] => texts.map((t) => countTokens(t)),
  /** A document cleaned by its process rule's pre-processing rules (see `cleanText`). */
  cleanText,
  /** A cleaned document split by its process rule, with token counts (see `chunkDocument`). */
  chunkDocument,
} as const;

export type OffloadOp = keyof typeof OFFLOAD_OPS;
export type OffloadArgs<K extends OffloadOp> = Parameters<(typeof OFFLOAD_OPS)[K]>;
export type OffloadResult<K extends OffloadOp> = ReturnType<(typeof OFFLOAD_OPS)[K]>;

/** A request to the worker (with the tokenizer's piece cap in force) and its answer. */
export interface OffloadRequest {
  readonly id: number;
  readonly op: OffloadOp;
  readonly args: readonly unknown[];
  readonly maxPieceChars: number;
}
export type OffloadReply = { readonly id: number; readonly result: unknown } | { readonly id: number; readonly error: string };
