import { countTokens as cl100k } from 'gpt-tokenizer/encoding/cl100k_base';
import { CL100K_TOKEN_SPLIT_REGEX } from 'gpt-tokenizer/encodingParams/constants';

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

/**
 * Default of `TOKENIZER_MAX_PIECE_CHARS`: a pre-tokenizer piece longer than this (a run of
 * letters, digits' neighbours or punctuation with no break) is counted in slices of at most this
 * many characters. Byte-pair merging is quadratic in a piece's length, so this bounds the work per
 * character; real words are far shorter, so only such runs are counted approximately (a slice
 * boundary can cost a merge: at most one token more per slice).
 */
export const DEFAULT_MAX_PIECE_CHARS = 128;

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

/** Counts `text[start, end)` in slices of at most `max` UTF-16 units, never splitting a surrogate pair. */
function sliced(text: string, start: number, end: number, max: number): number {
  let total = 0;
  for (let i = start; i < end; ) {
    let j = Math.min(end, i + max);
    const last = text.charCodeAt(j - 1);
    if (j < end && j - i > 1 && last >= 0xd800 && last <= 0xdbff) j--;
    total += cached(text.slice(i, j));
    i = j;
  }
  return total;
}

/**
 * A piece's count; undefined if the piece on its own would be pre-tokenized differently (then
 * counting it alone is not its count in context).
 */
function pieceCount(text: string, start: number, end: number, max: number): number | undefined {
  if (end - start > max) return sliced(text, start, end, max);
  const piece = text.slice(start, end);
  const hit = pieceCounts.get(piece);
  if (hit !== undefined) return hit;
  ALONE.lastIndex = 0;
  if (!ALONE.test(piece) || ALONE.lastIndex !== piece.length) return undefined;
  return cached(piece);
}

/**
 * Token count with the cl100k_base tokenizer (gpt-tokenizer: pure JS, ranks bundled, no network),
 * in time linear in the text's length: the text is cut into cl100k pre-tokenizer pieces, each
 * distinct short piece is byte-pair encoded once per process, and a piece longer than
 * `maxPieceChars` is counted in slices of that length (see `DEFAULT_MAX_PIECE_CHARS`), as
 * tiktoken-based tokenizers cap runs without whitespace (Meta's Llama 3 tokenizer,
 * openai/tiktoken#195). Exactly gpt-tokenizer's count for every text without such a run.
 * Special-token markers count as the text they are.
 *
 * Synchronous and CPU-bound: callers on the event loop go through `TextOffload` for large texts.
 */
export function countTokens(text: string, maxPieceChars = DEFAULT_MAX_PIECE_CHARS): number {
  if (text === '') return 0;
  const max = Math.max(1, Math.floor(maxPieceChars));
  let total = 0;
  let start = 0;
  PIECE.lastIndex = 0;
  while (start < text.length) {
    let end: number;
    if (PIECE.test(text) && PIECE.lastIndex > start) end = PIECE.lastIndex;
    else return total + sliced(text, start, text.length, max);
    const n = pieceCount(text, start, end, max);
    total += n ?? sliced(text, start, end, max);
    start = end;
    PIECE.lastIndex = end;
  }
  return total;
}
