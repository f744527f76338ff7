import type { InputVariable } from '../apps/input-form.js';
import type { ChatMessage, ContentPart } from '../llm/model-provider.js';

const PLACEHOLDER = /\{\{([a-zA-Z_][a-zA-Z0-9_]{0,29})\}\}/g;

function asText(v: unknown): string {
  if (v === undefined || v === null) return '';
  return typeof v === 'string' ? v : typeof v === 'object' ? JSON.stringify(v) : String(v);
}

/** Replaces `{{variable}}` with the input's value; unknown names stay as written (as Dify). */
export function renderTemplate(template: string, inputs: Readonly<Record<string, unknown>>): string {
  return template.replace(PLACEHOLDER, (whole, name: string) => (name in inputs ? asText(inputs[name]) : whole));
}

/**
 * Dify's simple-prompt `context_prompt` (prompt_templates/common_chat.json, common_completion.json):
 * put before `pre_prompt` whenever the app has datasets, the retrieved chunks in `<context>`.
 */
export function contextPrompt(context: string): string {
  return (
    'Use the following context as your learned knowledge, inside <context></context> XML tags.\n\n' +
    `<context>\n${context}\n</context>\n\n` +
    "When answer to user:\n- If you don't know, just say that you don't know.\n- If you don't know when you are not sure, ask for clarification.\n" +
    "Avoid mentioning that you obtained the information from the context.\nAnd answer according to the language of the user's question.\n\n"
  );
}

export interface CompletionPrompt {
  /** Text sent to legacy completion models and counted as prompt tokens. */
  readonly text: string;
  /** One user turn: the text, then any images. */
  readonly messages: readonly ChatMessage[];
}

/**
 * The prompt of a completion app: the context of its datasets (when it has any), `pre_prompt`
 * rendered with the inputs, then the legacy `query` when the template does not already use it,
 * then the images as content parts.
 */
export function buildCompletionPrompt(prePrompt: string, inputs: Readonly<Record<string, unknown>>, query: string, images: readonly ContentPart[], context?: string): CompletionPrompt {
  let text = renderTemplate(prePrompt, query && !('query' in inputs) ? { ...inputs, query } : inputs);
  if (query && !/\{\{query\}\}/.test(prePrompt)) text = text ? `${text}\n\n${query}` : query;
  // the retrieved chunks go in after rendering: a document's text is never a template
  if (context !== undefined) text = contextPrompt(context) + text;
  const content: string | ContentPart[] = images.length ? [{ type: 'text', text }, ...images] : text;
  return { text, messages: [{ role: 'user', content }] };
}

/** The file-typed input variables' values, flattened. */
export function fileInputs(vars: readonly InputVariable[], inputs: Readonly<Record<string, unknown>>): unknown[] {
  const out: unknown[] = [];
  for (const v of vars) {
    const value = inputs[v.variable];
    if (v.type === 'file' && value) out.push(value);
    if (v.type === 'file-list' && Array.isArray(value)) out.push(...value);
  }
  return out;
}
