import { countTokens, prefixWithinTokens } from '../../text/tokenizer.js';
import { childRule, type ProcessRule } from './process-rule.js';
import { removeEmails, removeUrls } from './remove-urls-emails.js';

/**
 * Dify's cleaning: invalid symbols always; extra spaces and URLs/e-mails when the rule says so.
 * Linear in the text's length (see `removeEmails`); the indexer runs it through `TextOffload`.
 */
export function cleanText(text: string, rule: ProcessRule): string {
  let t = text
    .replace(/<\|/g, '<')
    .replace(/\|>/g, '>')
    // eslint-disable-next-line no-control-regex
    .replace(/[\x00-\x08\x0B\x0C\x0E-\x1F\x7F\uFFFE]/g, '')
    .replace(/\r\n?/g, '\n');
  if (rule.removeExtraSpaces) {
    t = t.replace(/\n{3,}/g, '\n\n').replace(/[\t\f\r\x20\u00a0\u1680\u180e\u2000-\u200a\u202f\u205f\u3000]{2,}/g, ' ');
  }
  if (rule.removeUrlsEmails) {
    t = removeUrls(removeEmails(t));
  }
  return t;
}

const RECURSIVE_SEPARATORS = ['\n\n', '\n', '。', '. ', ' ', ''];

/** Upper bound of tokens without tokenizing: a token is at least one UTF-8 byte. */
function fits(text: string, max: number): boolean {
  return text.length <= max / 3 || Buffer.byteLength(text) <= max || countTokens(text) <= max;
}

/**
 * Merges splits into chunks of at most `max` tokens with `overlap` tokens carried over. Linear:
 * each split is counted once, and the current chunk is a window `[head, splits.length)` over the
 * splits (dropping its first split is `head++`, not an array shift).
 */
function mergeSplits(splits: string[], sep: string, max: number, overlap: number): string[] {
  const out: string[] = [];
  const lens = splits.map((s) => countTokens(s));
  let head = 0;
  let size = 0;
  let total = 0;
  const sepTokens = sep ? countTokens(sep) : 0;
  for (let i = 0; i < splits.length; i++) {
    const len = lens[i]!;
    if (size > 0 && total + len + sepTokens > max) {
      const doc = splits.slice(head, head + size).join(sep).trim();
      if (doc) out.push(doc);
      // Keep the tail of the previous chunk, up to `overlap` tokens.
      while (size > 0 && (total > overlap || total + len + sepTokens > max)) {
        total -= lens[head]! + (size > 1 ? sepTokens : 0);
        head++;
        size--;
      }
    }
    if (size === 0) head = i;
    size++;
    total += len + (size > 1 ? sepTokens : 0);
  }
  const doc = splits.slice(head, head + size).join(sep).trim();
  if (doc) out.push(doc);
  return out;
}

function recursiveSplit(text: string, separators: readonly string[], max: number, overlap: number): string[] {
  const idx = separators.findIndex((s) => s === '' || text.includes(s));
  const sep = separators[idx] ?? '';
  const rest = separators.slice(idx + 1);
  const splits = sep === '' ? [...text] : text.split(sep).filter((s) => s !== '');
  const out: string[] = [];
  let good: string[] = [];
  for (const s of splits) {
    if (fits(s, max)) {
      good.push(s);
    } else {
      if (good.length) out.push(...mergeSplits(good, sep, max, overlap));
      good = [];
      if (rest.length === 0) out.push(s);
      else out.push(...recursiveSplit(s, rest, max, overlap));
    }
  }
  if (good.length) out.push(...mergeSplits(good, sep, max, overlap));
  return out;
}

/**
 * Dify's fixed-separator splitter: split on the rule's separator; a piece longer than
 * `max_tokens` is split recursively (paragraph, line, sentence, word, character) and merged back
 * with `chunk_overlap` tokens of overlap.
 */
export function splitText(text: string, rule: ProcessRule): string[] {
  const out: string[] = [];
  for (const piece of text.split(rule.separator)) {
    const p = piece.trim();
    if (!p) continue;
    if (fits(p, rule.maxTokens)) out.push(p);
    else out.push(...recursiveSplit(p, RECURSIVE_SEPARATORS, rule.maxTokens, rule.chunkOverlap));
  }
  return out;
}

/** The longest prefix of `text` within `max` tokens, cut at a line end where one fits. */
export function truncateTokens(text: string, max: number): string {
  if (text.length <= max || countTokens(text) <= max) return text;
  const lines = text.split('\n');
  let total = 0;
  let end = 0;
  for (const line of lines) {
    const t = countTokens(line) + 1;
    if (total + t > max) break;
    total += t;
    end += line.length + 1;
  }
  if (end > 0) return text.slice(0, end - 1);
  // The first line alone is too long: its longest prefix within `max`, in one pass.
  return text.slice(0, prefixWithinTokens(text, max));
}

/** A chunk and its token count. */
export interface CountedChunk {
  readonly content: string;
  readonly tokens: number;
}

/** How a cleaned document splits: flat segments, or parents each with its children. */
export type DocumentChunks =
  | { readonly kind: 'flat'; readonly chunks: readonly CountedChunk[] }
  | { readonly kind: 'hierarchical'; readonly groups: readonly (CountedChunk & { readonly children: readonly CountedChunk[] })[] };

const counted = (content: string): CountedChunk => ({ content, tokens: countTokens(content) });

/**
 * Splits a cleaned document by its rule, with every chunk's token count: the whole CPU-bound part
 * of indexing, a pure function so that it can run on a worker thread (`TextOffload`). Parent-child
 * rules give parents (the rule's segmentation, or the whole document cut at `fullDocMaxTokens`)
 * each split by `subchunk_segmentation`; parents without children are left out.
 */
export function chunkDocument(cleaned: string, rule: ProcessRule, fullDocMaxTokens: number): DocumentChunks {
  const h = rule.hierarchy;
  if (!h) return { kind: 'flat', chunks: splitText(cleaned, rule).map(counted) };
  const parents = h.parentMode === 'full-doc' ? [truncateTokens(cleaned.trim(), fullDocMaxTokens)] : splitText(cleaned, rule);
  const children = childRule(rule);
  const groups = parents
    .map((p) => p.trim())
    .filter((p) => p !== '')
    .map((content) => ({ ...counted(content), children: splitText(content, children).map(counted) }))
    .filter((g) => g.children.length > 0);
  return { kind: 'hierarchical', groups };
}
