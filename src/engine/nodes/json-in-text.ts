/** Dify's two ways of finding the JSON a model wrote inside its answer. */

/** Why a classifier answer holds no usable JSON (Dify's `OutputParserError`, a `ValueError`). */
export class JsonInTextError extends Error {
  override name = 'OutputParserError';
}

/**
 * Dify's `parse_and_check_json_markdown(text, [])`: the JSON between the first of ```` ```json ````,
 * ```` ``` ````, … `{`, `[` and the last closing mark after it; a list of one object is that object.
 * Throws `JsonInTextError` with Dify's messages when there is none or it does not parse.
 */
export function parseJsonMarkdown(text: string): Record<string, unknown> {
  const s = text.trim();
  let start = -1;
  for (const mark of ['```json', '```', '``', '`', '{', '[']) {
    start = s.indexOf(mark);
    if (start !== -1) {
      if (s[start] !== '{' && s[start] !== '[') start += mark.length;
      break;
    }
  }
  let end = -1;
  if (start !== -1) {
    for (const mark of ['```', '``', '`', '}', ']']) {
      end = s.lastIndexOf(mark);
      if (end < start) end = -1;
      if (end !== -1) {
        if (s[end] === '}' || s[end] === ']') end += 1;
        break;
      }
    }
  }
  if (start === -1 || end === -1 || start >= end) throw new JsonInTextError('could not find json block in the output.');
  let parsed: unknown;
  try {
    parsed = JSON.parse(s.slice(start, end).trim());
  } catch (err) {
    throw new JsonInTextError(`got invalid json object. error: ${(err as Error).message}`);
  }
  if (Array.isArray(parsed)) {
    if (parsed.length === 1 && isPlainObject(parsed[0])) return parsed[0];
    throw new JsonInTextError(`got invalid return object. obj:${JSON.stringify(parsed)}`);
  }
  if (!isPlainObject(parsed)) throw new JsonInTextError(`got invalid return object. obj:${JSON.stringify(parsed)}`);
  return parsed;
}

/**
 * Dify's parameter-extractor reading: from each `{` or `[` in turn, the balanced bracket run that
 * starts there; the first one that parses as a JSON object wins. Linear in practice: a run that
 * parses ends the search, and at most `MAX_STARTS` starts are tried.
 */
export function firstJsonObject(text: string): Record<string, unknown> | undefined {
  let tried = 0;
  for (let i = 0; i < text.length && tried < MAX_STARTS; i++) {
    const c = text[i];
    if (c !== '{' && c !== '[') continue;
    tried++;
    const run = balancedRun(text, i);
    if (!run) continue;
    try {
      const parsed: unknown = JSON.parse(run);
      if (isPlainObject(parsed)) return parsed;
    } catch {
      // try the next start
    }
  }
  return undefined;
}

/** Bracket starts tried by `firstJsonObject` before it gives up (bounds the work on hostile text). */
const MAX_STARTS = 64;

/** Dify's `extract_json`: from `text[from]`, up to the bracket that closes it (or to a mismatch). */
function balancedRun(text: string, from: number): string | undefined {
  const stack: string[] = [];
  for (let i = from; i < text.length; i++) {
    const c = text[i]!;
    if (c === '{' || c === '[') stack.push(c);
    else if (c === '}' || c === ']') {
      if (stack.length === 0) return text.slice(from, i);
      const open = stack[stack.length - 1];
      if ((c === '}' && open === '{') || (c === ']' && open === '[')) {
        stack.pop();
        if (stack.length === 0) return text.slice(from, i + 1);
      } else return text.slice(from, i);
    }
  }
  return undefined;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
