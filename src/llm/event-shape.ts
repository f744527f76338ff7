/**
 * The shape of a streamed token event, learnt from one event the full JSON parser read: the
 * event's text before and after the string that holds its token. An OpenAI-compatible server
 * sends the same event again and again with only that string changed (same `id`, `created`,
 * `model`, same keys in the same order), so a later line made of the same text around a string is
 * that event with another token, and is read without `JSON.parse` — several times cheaper per
 * token. Nothing is assumed about the shape: a line that differs in one byte outside the string is
 * parsed in full.
 */
export class EventShape {
  /** The line up to and including the token string's opening quote. */
  #before = '';
  /** The line from the token string's closing quote to its end. */
  #after = '';
  /** Learning attempts whose shape no later line had: a server whose events all differ stops the learning. */
  #unused = 0;
  #tries = 0;
  #matched = false;

  /**
   * The token of `buf[start, end)` when the line has the learnt shape (its string unescaped);
   * undefined otherwise.
   */
  match(buf: string, start: number, end: number): string | undefined {
    const before = this.#before;
    if (before === '' || end - start < before.length + this.#after.length) return undefined;
    // Comparing slices is a flat memory compare; `startsWith` at an offset is per character.
    if (buf.slice(start, start + before.length) !== before) return undefined;
    const s = start + before.length;
    const close = closingQuote(buf, s, end);
    if (close < 0 || end - close !== this.#after.length || buf.slice(close, end) !== this.#after) return undefined;
    this.#matched = true;
    return close === s ? '' : stringValue(buf, s, close);
  }

  /**
   * Learns the shape of `line` (a whole `data:` line, its payload at `payloadStart`), which the
   * full parser read as a token event. The token's string is found by trying each `"content":` /
   * `"text":` string: the one that, replaced by a probe, gives back the probe as the event's token
   * through `read`, with nothing else (`other`: usage, say) to read. Once the shapes learnt go
   * unused `MAX_UNUSED_SHAPES` times, learning stops and every line is parsed in full.
   */
  learn(line: string, payloadStart: number, read: (event: unknown) => { token: string | undefined; other: boolean }): void {
    if (this.#tries > 0 && !this.#matched) this.#unused++;
    if (this.#unused >= MAX_UNUSED_SHAPES) return;
    this.#tries++;
    this.#matched = false;
    for (const key of TOKEN_KEYS) {
      for (let k = line.indexOf(key, payloadStart); k >= 0; k = line.indexOf(key, k + key.length)) {
        let s = k + key.length;
        while (line.charCodeAt(s) === 32) s++;
        if (line.charCodeAt(s) !== 34) continue;
        const close = closingQuote(line, s + 1, line.length);
        if (close < 0) continue;
        try {
          const r = read(JSON.parse(`${line.slice(payloadStart, s)}${PROBE_JSON}${line.slice(close + 1)}`));
          if (r.token !== PROBE || r.other) continue;
        } catch {
          continue;
        }
        this.#before = line.slice(0, s + 1);
        this.#after = line.slice(close);
        return;
      }
    }
  }
}

const TOKEN_KEYS = ['"content":', '"text":'] as const;
const PROBE = '\u0000dovetail-probe\u0000';
const PROBE_JSON = JSON.stringify(PROBE);
const MAX_UNUSED_SHAPES = 4;

/** The index of the quote that closes the JSON string starting at `from` (after its opening quote); -1 if none before `end`. */
function closingQuote(buf: string, from: number, end: number): number {
  for (let j = from; j < end; j++) {
    const c = buf.charCodeAt(j);
    if (c === 34) return j;
    if (c === 92) j++; // the escaped character is skipped
  }
  return -1;
}

/** The value of the JSON string whose characters are `buf[from, close)`. */
function stringValue(buf: string, from: number, close: number): string {
  const raw = buf.slice(from, close);
  return raw.includes('\\') ? (JSON.parse(`"${raw}"`) as string) : raw;
}
