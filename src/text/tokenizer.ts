import { createRequire } from 'node:module';
import { CL100K_TOKEN_SPLIT_REGEX } from 'gpt-tokenizer/encodingParams/constants';
import { DEFAULT_TOKENIZER_MAX_PIECE_CHARS } from '../lib/setting-defaults.js';

type CountTokens = (text: string, options: { disallowedSpecial: Set<string> }) => number;
/**
 * cl100k's byte-pair ranks, loaded on the first count: building them is seconds of CPU that a
 * process which never counts (a CLI command) should not pay at start. The package's CommonJS
 * build is required synchronously, so counting stays synchronous.
 */
let cl100kCount: CountTokens | undefined;
function cl100k(text: string, options: { disallowedSpecial: Set<string> }): number {
  cl100kCount ??= (createRequire(import.meta.url)('gpt-tokenizer/encoding/cl100k_base') as { countTokens: CountTokens }).countTokens;
  return cl100kCount(text, options);
}

/**
 * cl100k_base's pre-tokenizer, sticky: byte-pair merges never cross its pieces, so a text's token
 * count is the sum of its pieces' counts. Every character starts some alternative, so the pieces
 * are contiguous. A private copy: the library's own regex object is shared and stateful.
 */
const PIECE = new RegExp(CL100K_TOKEN_SPLIT_REGEX.source, 'uy');
const ALONE = new RegExp(CL100K_TOKEN_SPLIT_REGEX.source, 'uy');

/** Special-token markers (`<|endoftext|>`) are text here, as a provider sees them in a message. */
const AS_TEXT = { disallowedSpecial: new Set<string>() };

/** Token counts of pieces seen so far (words with their leading space, punctuation, whitespace). */
const pieceCounts = new Map<string, number>();
const MAX_CACHED_PIECES = 100_000;
const MAX_CACHED_PIECE_LENGTH = 64;

/*
 * `TOKENIZER_MAX_PIECE_CHARS` (default in src/lib/setting-defaults.ts): a pre-tokenizer piece longer
 * than this (a run of letters, digits' neighbours or punctuation with no break) is counted in
 * slices of at most this many characters. Byte-pair merging is quadratic in a piece's length, so
 * this bounds the work per character; real words are far shorter, so only such runs are counted
 * approximately (a slice boundary can cost a merge: at most one token more per slice).
 */

function cached(piece: string): number {
  const hit = pieceCounts.get(piece);
  if (hit !== undefined) return hit;
  const n = cl100k(piece, AS_TEXT);
  if (piece.length <= MAX_CACHED_PIECE_LENGTH) {
    if (pieceCounts.size >= MAX_CACHED_PIECES) pieceCounts.clear();
    pieceCounts.set(piece, n);
  }
  return n;
}

/**
 * The text's counting units in order, as `[end, tokens]`: each pre-tokenizer piece, or the slices
 * of one longer than `max` (never splitting a surrogate pair). The units are contiguous from 0.
 */
function* units(text: string, max: number): Generator<readonly [number, number]> {
  let start = 0;
  PIECE.lastIndex = 0;
  while (start < text.length) {
    let end = text.length;
    let whole = false;
    if (PIECE.test(text) && PIECE.lastIndex > start) {
      end = PIECE.lastIndex;
      whole = end - start <= max;
    }
    const n = whole ? pieceCount(text.slice(start, end)) : undefined;
    if (n !== undefined) yield [end, n];
    else {
      for (let i = start; i < end; ) {
        let j = Math.min(end, i + max);
        const last = text.charCodeAt(j - 1);
        if (j < end && j - i > 1 && last >= 0xd800 && last <= 0xdbff) j--;
        yield [j, cached(text.slice(i, j))];
        i = j;
      }
    }
    start = end;
    PIECE.lastIndex = end;
  }
}

/**
 * A piece's count; undefined if the piece on its own would be pre-tokenized differently (then
 * counting it alone is not its count in context, and it is counted as a slice).
 */
function pieceCount(piece: string): number | undefined {
  const hit = pieceCounts.get(piece);
  if (hit !== undefined) return hit;
  ALONE.lastIndex = 0;
  if (!ALONE.test(piece) || ALONE.lastIndex !== piece.length) return undefined;
  return cached(piece);
}

let defaultMaxPieceChars = DEFAULT_TOKENIZER_MAX_PIECE_CHARS;

/** Sets the piece cap `countTokens` uses when none is given (`TOKENIZER_MAX_PIECE_CHARS`); per thread. */
export function setMaxPieceChars(n: number): void {
  defaultMaxPieceChars = Math.max(1, Math.floor(n));
}

/** The piece cap in force in this thread. */
export function maxPieceChars(): number {
  return defaultMaxPieceChars;
}

/**
 * Token count with the cl100k_base tokenizer (gpt-tokenizer: pure JS, ranks bundled, no network),
 * in time linear in the text's length: the text is cut into cl100k pre-tokenizer pieces, each
 * distinct short piece is byte-pair encoded once per process, and a piece longer than
 * `maxPieceChars` is counted in slices of that length (see `TOKENIZER_MAX_PIECE_CHARS`), as
 * tiktoken-based tokenizers cap runs without whitespace (Meta's Llama 3 tokenizer,
 * openai/tiktoken#195). Exactly gpt-tokenizer's count for every text without such a run.
 * Special-token markers count as the text they are.
 *
 * Synchronous and CPU-bound: callers on the event loop go through `TextOffload` for large texts.
 */
export function countTokens(text: string, maxPieceChars = defaultMaxPieceChars): number {
  if (text === '') return 0;
  let total = 0;
  for (const [, n] of units(text, Math.max(1, Math.floor(maxPieceChars)))) total += n;
  return total;
}

/**
 * Length of the longest prefix of `text` within `max` tokens, in one pass: whole units while they
 * fit, then a bisection inside the first unit that does not (a unit is at most `maxPieceChars`
 * characters, or one short piece).
 */
export function prefixWithinTokens(text: string, max: number, maxPieceChars = defaultMaxPieceChars): number {
  let total = 0;
  let start = 0;
  for (const [end, n] of units(text, Math.max(1, Math.floor(maxPieceChars)))) {
    if (total + n > max) {
      let lo = start;
      let hi = end - 1;
      while (lo < hi) {
        const mid = Math.ceil((lo + hi) / 2);
        if (total + countTokens(text.slice(start, mid), maxPieceChars) <= max) lo = mid;
        else hi = mid - 1;
      }
      return lo;
    }
    total += n;
    start = end;
  }
  return text.length;
}
