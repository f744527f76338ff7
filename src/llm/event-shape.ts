/**
 * The shape of a streamed token event, learnt from one event the full JSON parser read: the
 * event's text before and after the string that holds its token. An OpenAI-compatible server
 * sends the same event again and again with only that string changed (same `id`, `created`,
 * `model`, same keys in the same order), so a later line made of the same text around a string is
 * that event with another token, and is read without `JSON.parse` — several times cheaper per
 * token. Nothing is assumed about the shape: a line that differs in one byte outside the string is
 * parsed in full. The one exception is OpenAI's `"obfuscation"` padding, a random string it adds
 * as the last key of every event: it carries nothing and may differ.
 */
export class EventShape {
  /** The line up to and including the token string's opening quote. */
  #before = '';
  /** The line from the token string's closing quote to the event's closing `}`, without it and without any padding. */
  #after = '';
  #tries = 0;
  /** A line had the shape learnt last. */
  #matched = false;
  /** Learning chances to let pass before the next attempt. */
  #wait = 0;
  #backoff = 0;

  /**
   * The token of `buf[start, end)` when the line has the learnt shape (its string unescaped);
   * undefined otherwise, also for a string that is not valid JSON (the full parser reports it).
   */
  match(buf: string, start: number, end: number): string | undefined {
    const before = this.#before;
    if (before === '' || end - start < before.length + this.#after.length + 1) return undefined;
    // Comparing slices is a flat memory compare; `startsWith` at an offset is per character.
    if (buf.slice(start, start + before.length) !== before) return undefined;
    const s = start + before.length;
    const close = closingQuote(buf, s, end);
    if (close < 0) return undefined;
    const tail = close + this.#after.length;
    if (tail >= end || buf.slice(close, tail) !== this.#after || !isEventEnd(buf, tail, end)) return undefined;
    const token = close === s ? '' : stringValue(buf, s, close);
    if (token !== undefined) this.#matched = true;
    return token;
  }

  /**
   * Learns the shape of `line` (a whole `data:` line, its payload at `payloadStart`), which the
   * full parser read as an event with a non-empty token. The token's string is found by trying
   * each `"content":` / `"text":` string: the one that, replaced by a probe, gives back the probe
   * as the event's token through `read`, with nothing else (`other`: usage, say) to read.
   *
   * Learning costs a parse per candidate, so it is bounded: at most `MAX_CANDIDATES` strings per
   * line, no line longer than `MAX_LEARN_LINE`, and after a shape that no later line had, the
   * next attempts wait 1, 2, 4 … up to `MAX_BACKOFF` token events (a server whose every event
   * differs pays one extra parse in `MAX_BACKOFF`).
   */
  learn(line: string, payloadStart: number, read: (event: unknown) => { token: string | undefined; other: boolean }): void {
    if (this.#wait > 0) {
      this.#wait--;
      return;
    }
    if (this.#tries > 0) this.#backoff = this.#matched ? 0 : Math.min(Math.max(1, this.#backoff * 2), MAX_BACKOFF);
    this.#wait = this.#backoff;
    this.#tries++;
    this.#matched = false;
    if (line.length > MAX_LEARN_LINE || line.charCodeAt(line.length - 1) !== 125) return;
    let candidates = 0;
    for (const key of TOKEN_KEYS) {
      for (let k = line.indexOf(key, payloadStart); k >= 0 && candidates < MAX_CANDIDATES; k = line.indexOf(key, k + key.length)) {
        let s = k + key.length;
        while (line.charCodeAt(s) === 32) s++;
        if (line.charCodeAt(s) !== 34) continue;
        const close = closingQuote(line, s + 1, line.length);
        if (close < 0) continue;
        candidates++;
        try {
          const r = read(JSON.parse(`${line.slice(payloadStart, s)}${PROBE_JSON}${line.slice(close + 1)}`));
          if (r.token !== PROBE || r.other) continue;
        } catch {
          continue;
        }
        // Copies, not slices: a slice would keep the whole network read it came from alive.
        this.#before = structuredClone(line.slice(0, s + 1));
        this.#after = structuredClone(line.slice(close, paddingStart(line, close + 1)));
        return;
      }
    }
  }
}

const TOKEN_KEYS = ['"content":', '"text":'] as const;
const PROBE = '\u0000dovetail-probe\u0000';
const PROBE_JSON = JSON.stringify(PROBE);
const MAX_CANDIDATES = 4;
const MAX_LEARN_LINE = 16 * 1024;
const MAX_BACKOFF = 64;
const PADDING = ',"obfuscation":"';

/**
 * The index of the quote that closes the JSON string starting at `from` (after its opening
 * quote); -1 if there is none before `end` or a raw control character comes first (not JSON).
 */
function closingQuote(buf: string, from: number, end: number): number {
  for (let j = from; j < end; j++) {
    const c = buf.charCodeAt(j);
    if (c === 34) return j;
    if (c < 32) return -1;
    if (c === 92) j++; // the escaped character is skipped
  }
  return -1;
}

/** The value of the JSON string whose characters are `buf[from, close)`; undefined for a bad escape. */
function stringValue(buf: string, from: number, close: number): string | undefined {
  const raw = buf.slice(from, close);
  if (!raw.includes('\\')) return raw;
  try {
    return JSON.parse(`"${raw}"`) as string;
  } catch {
    return undefined;
  }
}

/** Where the event's closing `}` — or the padding before it — starts in `line` (which ends with `}`). */
function paddingStart(line: string, from: number): number {
  const end = line.length;
  const p = line.lastIndexOf(PADDING, end - 2);
  return p >= from && isPadding(line, p, end) ? p : end - 1;
}

/** `buf[at, end)` is the event's closing `}`, or the padding and then `}`. */
function isEventEnd(buf: string, at: number, end: number): boolean {
  if (buf.charCodeAt(end - 1) !== 125) return false;
  return at === end - 1 || isPadding(buf, at, end);
}

/** `buf[at, end)` is `,"obfuscation":"<no quote, backslash or control character>"}`. */
function isPadding(buf: string, at: number, end: number): boolean {
  if (buf.slice(at, at + PADDING.length) !== PADDING || buf.charCodeAt(end - 2) !== 34 || end - 2 < at + PADDING.length) return false;
  for (let j = at + PADDING.length; j < end - 2; j++) {
    const c = buf.charCodeAt(j);
    if (c === 34 || c === 92 || c < 32) return false;
  }
  return true;
}
