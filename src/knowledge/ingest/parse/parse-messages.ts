import type { ParseLimits } from './limits.js';

/** A document for the parse worker: its bytes (transferred), extension and limits. */
export interface ParseRequest {
  readonly id: number;
  readonly bytes: Uint8Array;
  readonly extension: string;
  readonly allowEmpty: boolean;
  readonly limits: ParseLimits;
}

/**
 * The worker's answers: loaded (`ready`), a document's text, or why it has none (`limit`: over a
 * `PARSE_MAX_*` setting; `parse`: the file cannot be read; `other`: anything else).
 */
export type ParseReply =
  | { readonly ready: true }
  | { readonly id: number; readonly text: string }
  | { readonly id: number; readonly error: string; readonly kind: 'limit' | 'parse' | 'other' };
