/**
 * `<think>…</think>` reasoning inside a model's text (how Dify's model plugins hand reasoning on),
 * for the `llm` node's `reasoning_format: separated`: the answer without it, and the reasoning on
 * its own. As Dify: an open tag is `<think` up to the next `>` (attributes allowed), matched
 * case-insensitively; a trailing unclosed block is reasoning too. Both scans are linear.
 */

const OPEN = '<think';
const CLOSE = '</think>';
/**
 * The stream filter holds a `<think…` without its `>` back at most this long; a longer one is
 * shown as text (else a model writing `<think` and no `>` would make every later piece rescan all
 * it held: quadratic).
 */
const MAX_OPEN_TAG = 256;

/** Splits `text` into the answer (reasoning blocks removed, blank-line runs folded, trimmed) and the reasoning (blocks trimmed, joined by `\n`). */
export function splitReasoning(text: string): { text: string; reasoning: string } {
  const lower = text.toLowerCase();
  const kept: string[] = [];
  const reasoning: string[] = [];
  let pos = 0;
  for (;;) {
    const open = lower.indexOf(OPEN, pos);
    const openEnd = open < 0 ? -1 : lower.indexOf('>', open + OPEN.length);
    if (openEnd < 0) break;
    kept.push(text.slice(pos, open));
    const close = lower.indexOf(CLOSE, openEnd + 1);
    const inner = text.slice(openEnd + 1, close < 0 ? text.length : close).trim();
    if (inner) reasoning.push(inner);
    pos = close < 0 ? text.length : close + CLOSE.length;
  }
  kept.push(text.slice(pos));
  return { text: kept.join('').replace(/\n\s*\n/g, '\n\n').trim(), reasoning: reasoning.join('\n') };
}

/**
 * Removes reasoning blocks from a text stream piece by piece: a tag split across pieces is held
 * back (only the few characters that could still become a tag), reasoning is dropped, and the
 * answer's leading whitespace is trimmed as `splitReasoning` trims it.
 */
export class ThinkStreamFilter {
  #inside = false;
  #hold = '';
  #started = false;

  /** The answer text of this piece that is safe to show now. */
  feed(piece: string): string {
    let work = this.#hold + piece;
    this.#hold = '';
    let out = '';
    while (work) {
      const lower = work.toLowerCase();
      if (!this.#inside) {
        const open = lower.indexOf(OPEN);
        const openEnd = open < 0 ? -1 : lower.indexOf('>', open + OPEN.length);
        if (open >= 0 && openEnd >= 0) {
          out += work.slice(0, open);
          this.#inside = true;
          work = work.slice(openEnd + 1);
          continue;
        }
        if (open >= 0 && work.length - open > MAX_OPEN_TAG) {
          out += work.slice(0, open + 1);
          work = work.slice(open + 1);
          continue;
        }
        const keep = open >= 0 ? work.length - open : partialSuffix(lower, OPEN);
        out += work.slice(0, work.length - keep);
        this.#hold = work.slice(work.length - keep);
        work = '';
      } else {
        const close = lower.indexOf(CLOSE);
        if (close >= 0) {
          this.#inside = false;
          work = work.slice(close + CLOSE.length);
          continue;
        }
        const keep = partialSuffix(lower, CLOSE);
        this.#hold = work.slice(work.length - keep);
        work = '';
      }
    }
    return this.#trimStart(out);
  }

  /** What is left to show once the stream has ended (an unclosed block is dropped). */
  end(): string {
    const rest = this.#inside ? '' : this.#hold;
    this.#hold = '';
    this.#inside = false;
    return this.#trimStart(rest);
  }

  #trimStart(s: string): string {
    if (this.#started || !s) return s;
    const t = s.trimStart();
    if (t) this.#started = true;
    return t;
  }
}

/** Length of the longest end of `s` that is a proper beginning of `tag`. */
function partialSuffix(s: string, tag: string): number {
  for (let k = Math.min(s.length, tag.length - 1); k > 0; k--) if (tag.startsWith(s.slice(s.length - k))) return k;
  return 0;
}
