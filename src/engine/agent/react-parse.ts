/** What a ReAct round answered: a tool call, or the final answer. */
export type ReactStep =
  | { readonly type: 'action'; readonly thought: string; readonly action: string; readonly input: unknown; readonly actionText: string }
  | { readonly type: 'final'; readonly thought: string; readonly answer: string };

/** The first balanced `{…}` at or after `from` (string-aware, linear), or undefined. */
function balancedObject(text: string, from: number): { start: number; end: number } | undefined {
  const start = text.indexOf('{', from);
  if (start < 0) return undefined;
  let depth = 0;
  let inStr = false;
  for (let i = start; i < text.length; i++) {
    const c = text[i];
    if (inStr) {
      if (c === '\\') i++;
      else if (c === '"') inStr = false;
    } else if (c === '"') inStr = true;
    else if (c === '{') depth++;
    else if (c === '}' && --depth === 0) return { start, end: i + 1 };
  }
  return undefined;
}

/** The text before the blob without the code fence, a leading `Thought:` and a trailing `Action:` (linear, no backtracking). */
function stripThought(s: string): string {
  let t = s.trimEnd();
  const fence = t.lastIndexOf('```');
  if (fence >= 0 && /^[a-z]*$/i.test(t.slice(fence + 3))) t = t.slice(0, fence).trimEnd();
  if (t.toLowerCase().endsWith('action:')) t = t.slice(0, -'action:'.length).trimEnd();
  t = t.trimStart();
  if (t.toLowerCase().startsWith('thought:')) t = t.slice('thought:'.length);
  return t.trim();
}

/** JSON objects tried before giving up (a bound on the work for adversarial model output). */
const MAX_CANDIDATES = 50;

/**
 * Reads a ReAct answer as Dify's CoT output parser does: the JSON blob with `action` and
 * `action_input` (in a code fence or after `Action:`) is the step; the text before it is the
 * thought. "Final Answer" (or no blob at all) ends the run with the input (or the whole text).
 */
export function parseReact(text: string): ReactStep {
  let from = 0;
  for (let tries = 0; tries < MAX_CANDIDATES; tries++) {
    const obj = balancedObject(text, from);
    if (!obj) break;
    const raw = text.slice(obj.start, obj.end);
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw);
    } catch {
      parsed = undefined;
    }
    if (typeof parsed === 'object' && parsed !== null && 'action' in parsed) {
      const p = parsed as { action: unknown; action_input?: unknown };
      const thought = stripThought(text.slice(0, obj.start));
      const action = String(p.action);
      if (/^final[\s_]?answer$/i.test(action.trim())) {
        const input = p.action_input;
        return { type: 'final', thought, answer: typeof input === 'string' ? input : JSON.stringify(input ?? '') };
      }
      return { type: 'action', thought, action, input: p.action_input ?? {}, actionText: raw };
    }
    from = obj.start + 1;
  }
  const final = /final answer\s*:\s*/i.exec(text);
  return { type: 'final', thought: '', answer: (final ? text.slice(final.index + final[0].length) : text).trim() };
}
