import type { ChatMessage, ContentPart } from '../llm/model-provider.js';
import { contextPrompt, renderTemplate, type CompletionPrompt } from './completion-prompt.js';

/** One earlier exchange of the conversation, oldest first. */
export interface Exchange {
  readonly query: string;
  readonly answer: string;
}

/**
 * The prompt of a chat app (Dify's simple prompt). Chat models: `pre_prompt` rendered with the
 * inputs as the system message, the history as user/assistant turns, then the query (and images).
 * Completion models: Dify's chat template for them, with the history inside `<histories>` and
 * `Human:` / `Assistant:` turns. An app with datasets gets Dify's context prompt (the retrieved
 * chunks) before `pre_prompt`, in the system message.
 */
export function buildChatPrompt(
  prePrompt: string,
  inputs: Readonly<Record<string, unknown>>,
  history: readonly Exchange[],
  query: string,
  images: readonly ContentPart[],
  context?: string,
): CompletionPrompt {
  const system = (context !== undefined ? contextPrompt(context) : '') + renderTemplate(prePrompt, inputs);
  const messages: ChatMessage[] = [];
  if (system) messages.push({ role: 'system', content: system });
  for (const h of history) messages.push({ role: 'user', content: h.query }, { role: 'assistant', content: h.answer });
  messages.push({ role: 'user', content: images.length ? [{ type: 'text', text: query }, ...images] : query });
  const histories = history.map((h) => `Human: ${h.query}\nAssistant: ${h.answer}`).join('\n');
  const text =
    (system ? `${system}\n` : '') +
    (histories ? `Here is the chat histories between human and assistant, inside <histories></histories> XML tags.\n\n<histories>\n${histories}\n</histories>\n\n` : '') +
    `\nHuman: ${query}\n\nAssistant: `;
  return { text, messages };
}
