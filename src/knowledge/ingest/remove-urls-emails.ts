/** `[a-zA-Z0-9_.+-]`: a character of an e-mail's local part. */
function isLocal(c: number): boolean {
  return isDomain(c) || c === 0x5f /* _ */ || c === 0x2e /* . */ || c === 0x2b /* + */;
}

/** `[a-zA-Z0-9-]`: a character of the e-mail's first domain label. */
function isDomain(c: number): boolean {
  return (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || (c >= 0x30 && c <= 0x39) || c === 0x2d;
}

/**
 * Removes what Dify's pattern `([a-zA-Z0-9_.+-]+@[a-zA-Z0-9-]+\.[a-zA-Z0-9-.]+)` matches, with the
 * same matches, in linear time. The regular expression backtracks: at every start in a long run of
 * local-part characters it scans to the run's end looking for `@`, so 150 KB of `a` took 14–47 s.
 *
 * The matches are found from each `@` instead. None of the three character classes holds `@`, and
 * the first domain class holds no `.`, so a match is fixed by its `@`: its local part is the run of
 * local characters just before the `@` (cut at the end of the previous match, where the regex
 * resumes), then one or more `[a-zA-Z0-9-]`, a `.`, and the longest run of `[a-zA-Z0-9.-]` after
 * it. Each character is looked at a bounded number of times (backwards from the next `@`,
 * forwards from the previous one).
 */
export function removeEmails(text: string): string {
  const out: string[] = [];
  let kept = 0; // text before `kept` is decided
  let at = text.indexOf('@');
  while (at >= 0) {
    let start = at;
    while (start > kept && isLocal(text.charCodeAt(start - 1))) start--;
    let end = -1;
    if (start < at) {
      let p = at + 1;
      while (p < text.length && isDomain(text.charCodeAt(p))) p++;
      if (p > at + 1 && text.charCodeAt(p) === 0x2e) {
        let q = p + 1;
        while (q < text.length && (isDomain(text.charCodeAt(q)) || text.charCodeAt(q) === 0x2e)) q++;
        if (q > p + 1) end = q;
      }
    }
    if (end >= 0) {
      out.push(text.slice(kept, start));
      kept = end;
      at = text.indexOf('@', end);
    } else {
      at = text.indexOf('@', at + 1);
    }
  }
  if (kept === 0) return text;
  out.push(text.slice(kept));
  return out.join('');
}

/** Dify's `https?://[^\s]+` (linear as it is: a fixed prefix, then one greedy run). */
export function removeUrls(text: string): string {
  return text.replace(/https?:\/\/\S+/g, '');
}
