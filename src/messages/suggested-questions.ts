import type { TokenCounter } from '../llm/usage.js';

/**
 * Dify's `DEFAULT_SUGGESTED_QUESTIONS_AFTER_ANSWER_INSTRUCTION_PROMPT`
 * (api/core/llm_generator/prompts.py), word for word.
 */
export const DEFAULT_SUGGESTED_QUESTIONS_PROMPT =
  'Please help me predict the three most likely questions that human would ask, ' +
  'and keep each question under 20 characters.\n' +
  "MAKE SURE your output is the SAME language as the Assistant's latest response. " +
  'The output must be an array in JSON format following the specified schema:\n' +
  '["question1","question2","question3"]\n';

/** One earlier exchange of the conversation, oldest first. */
export interface HistoryTurn {
  readonly query: string;
  readonly answer: string;
}

/** Dify's `PromptTemplateParser` variable syntax: `{{name}}` (and its three `#…#` specials). */
const TEMPLATE_VARIABLE = /\{\{([a-zA-Z_][a-zA-Z0-9_]{0,29}|#histories#|#query#|#context#)\}\}/g;

/**
 * The instruction part: the app's own `suggested_questions_after_answer.prompt` with Dify's JSON
 * reminder appended, or the default prompt when it is absent or blank.
 */
export function formatInstructions(customPrompt: string | undefined): string {
  if (customPrompt === undefined || customPrompt.trim() === '') return DEFAULT_SUGGESTED_QUESTIONS_PROMPT;
  return `${customPrompt}\nYou must output a JSON array like ["question1", "question2", "question3"].`;
}

/**
 * Dify's history text (`TokenBufferMemory.get_history_prompt_text`): `Human: …` and
 * `Assistant: …` lines, the oldest lines dropped one at a time while the text is over
 * `maxTokens` (at least one line stays).
 */
export async function historyText(turns: readonly HistoryTurn[], maxTokens: number, count: TokenCounter): Promise<string> {
  const lines = turns.flatMap((t) => [`Human: ${t.query}`, `Assistant: ${t.answer}`]);
  const fits = async (drop: number) => ((await count([lines.slice(drop).join('\n')]))[0] ?? 0) <= maxTokens;
  // Fewest lines to drop, by bisection (dropping more never adds tokens): a few counts of the
  // text instead of one per dropped line.
  let lo = 0;
  let hi = Math.max(0, lines.length - 1);
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (await fits(mid)) hi = mid;
    else lo = mid + 1;
  }
  return lines.slice(lo).join('\n');
}

/**
 * The one user message Dify sends: `{{histories}}\n{{format_instructions}}\nquestions:\n` filled
 * by `PromptTemplateParser` (`{{x}}` inside the values becomes `{x}`, `<|…|>` is removed).
 */
export function suggestedQuestionsPrompt(histories: string, customPrompt?: string): string {
  const value = (v: string) => v.replace(TEMPLATE_VARIABLE, '{$1}');
  const prompt = `${value(histories)}\n${value(formatInstructions(customPrompt))}\nquestions:\n`;
  return prompt.replace(/<\|.*?\|>/g, '');
}

/** Removes `<think>…</think>` blocks; an unclosed one keeps what follows its first `[`, or is cut. */
function stripReasoning(text: string): string {
  let out = text.replace(/<think>[\s\S]*?<\/think>/gi, '');
  for (;;) {
    const open = out.toLowerCase().indexOf('<think>');
    if (open === -1) break;
    const tail = out.slice(open + '<think>'.length);
    const bracket = tail.indexOf('[');
    if (bracket !== -1) {
      out = tail.slice(bracket);
      break;
    }
    out = out.slice(0, open);
  }
  return out.trim();
}

/**
 * Dify's `SuggestedQuestionsAfterAnswerOutputParser.parse`: the first `[…]` (up to the first `]`)
 * read as JSON; its string items, in order. Anything else is `[]`. Neither the count nor the
 * length of the questions is capped (the prompt asks for three short ones; `max_tokens` bounds it).
 */
export function parseSuggestedQuestions(text: string): string[] {
  const match = /\[[\s\S]*?\]/.exec(stripReasoning(text));
  if (!match) return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(match[0].trim());
  } catch {
    return [];
  }
  return Array.isArray(parsed) ? parsed.filter((q): q is string => typeof q === 'string') : [];
}
