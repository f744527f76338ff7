import { countTokens } from '../text/tokenizer.js';
import type { ProcessRule } from './process-rule.js';

/** Dify's cleaning: invalid symbols always; extra spaces and URLs/e-mails when the rule says so. */
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
    t = t.replace(/([a-zA-Z0-9_.+-]+@[a-zA-Z0-9-]+\.[a-zA-Z0-9-.]+)/g, '').replace(/https?:\/\/[^\s]+/g, '');
  }
  return t;
}

const RECURSIVE_SEPARATORS = ['\n\n', '\n', '。', '. ', ' ', ''];

/** Upper bound of tokens without tokenizing: a token is at least one UTF-8 byte. */
function fits(text: string, max: number): boolean {
  return text.length <= max / 3 || Buffer.byteLength(text) <= max || countTokens(text) <= max;
}

function mergeSplits(splits: string[], sep: string, max: number, overlap: number): string[] {
  const out: string[] = [];
  let current: string[] = [];
  let total = 0;
  const sepTokens = sep ? countTokens(sep) : 0;
  for (const s of splits) {
    const len = countTokens(s);
    if (current.length > 0 && total + len + sepTokens > max) {
      const doc = current.join(sep).trim();
      if (doc) out.push(doc);
      // Keep the tail of the previous chunk, up to `overlap` tokens.
      while (current.length > 0 && (total > overlap || total + len + sepTokens > max)) {
        total -= countTokens(current[0]!) + (current.length > 1 ? sepTokens : 0);
        current.shift();
      }
    }
    current.push(s);
    total += len + (current.length > 1 ? sepTokens : 0);
  }
  const doc = current.join(sep).trim();
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
