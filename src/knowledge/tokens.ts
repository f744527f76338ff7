import { countTokens as cl100k } from 'gpt-tokenizer/encoding/cl100k_base';
import { CL100K_TOKEN_SPLIT_REGEX } from 'gpt-tokenizer/encodingParams/constants';

/**
 * cl100k_base's pre-tokenizer, sticky: byte-pair merges never cross its pieces, so a text's token
 * count is the sum of its pieces' counts. Every character starts some alternative, so the pieces
 * are contiguous. A private copy: the library's own regex object is shared and stateful.
 */
const PIECE = new RegExp(CL100K_TOKEN_SPLIT_REGEX.source, 'uy');
const ALONE = new RegExp(CL100K_TOKEN_SPLIT_REGEX.source, 'uy');

/** Token counts of pieces seen so far (words with their leading space, punctuation, whitespace). */
const pieceCounts = new Map<string, number>();
const MAX_CACHED_PIECES = 100_000;
const MAX_CACHED_PIECE_LENGTH = 64;

/**
 * A piece's count, from the cache or from gpt-tokenizer; undefined if the piece on its own would be
 * pre-tokenized differently (then counting it alone is not its count in context).
 */
function pieceCount(piece: string): number | undefined {
  const hit = pieceCounts.get(piece);
  if (hit !== undefined) return hit;
  ALONE.lastIndex = 0;
  if (!ALONE.test(piece) || ALONE.lastIndex !== piece.length) return undefined;
  const n = cl100k(piece);
  if (piece.length <= MAX_CACHED_PIECE_LENGTH) {
    if (pieceCounts.size >= MAX_CACHED_PIECES) pieceCounts.clear();
    pieceCounts.set(piece, n);
  }
  return n;
}

/**
 * Token count with the cl100k_base tokenizer (gpt-tokenizer: pure JS, ranks bundled, no network).
 * Exactly gpt-tokenizer's `countTokens`, several times faster on real text: the text is cut into
 * cl100k pre-tokenizer pieces and each distinct piece is byte-pair encoded once per process.
 * Texts holding a special-token marker (`<|`) go to gpt-tokenizer whole, so they behave as before.
 */
export function countTokens(text: string): number {
  if (text === '') return 0;
  if (text.includes('<|')) return cl100k(text);
  let total = 0;
  let start = 0;
  PIECE.lastIndex = 0;
  while (start < text.length) {
    if (!PIECE.test(text) || PIECE.lastIndex <= start) return cl100k(text);
    const end = PIECE.lastIndex;
    const n = pieceCount(text.slice(start, end));
    if (n === undefined) return cl100k(text);
    total += n;
    start = end;
    PIECE.lastIndex = end;
  }
  return total;
}
