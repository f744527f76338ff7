import type { ChatMessage, ContentPart } from '../ports.js';
import type { NodeContext } from '../types.js';
import { isObject, selectorOf } from './shared.js';

/** A message as Dify shows it in `process_data.prompts` (`PromptMessageUtil.prompt_messages_to_prompt_for_saving`). */
export interface SavedPrompt {
  role: string;
  text: string;
  files?: { type: 'image'; data: string; detail: string }[];
  tool_calls?: { id: string; type: 'function'; function: { name: string; arguments: string } }[];
}

/** Media data in saved prompts keeps its first and last 10 characters, as Dify's. */
function truncated(data: string): string {
  return data.length <= 20 ? data : `${data.slice(0, 10)}...[TRUNCATED]...${data.slice(-10)}`;
}

function textAndFiles(content: ChatMessage['content']): { text: string; files: NonNullable<SavedPrompt['files']> } {
  if (typeof content === 'string') return { text: content, files: [] };
  let text = '';
  const files: NonNullable<SavedPrompt['files']> = [];
  for (const p of content) {
    if (p.type === 'text') text += p.text;
    else files.push({ type: 'image', data: truncated(p.url), detail: p.detail ?? 'high' });
  }
  return { text, files };
}

/** Dify's saved prompts: every message with role, text and files (chat), or the one user prompt (completion). */
export function savedPrompts(mode: 'chat' | 'completion', messages: readonly ChatMessage[]): SavedPrompt[] {
  if (mode === 'completion') {
    const first = messages[0];
    if (!first) return [];
    const { text, files } = textAndFiles(first.content);
    return [{ role: 'user', text, ...(files.length ? { files } : {}) }];
  }
  return messages.map((m) => {
    const { text, files } = textAndFiles(m.content);
    const out: SavedPrompt = { role: m.role, text, files };
    if (m.toolCalls?.length) out.tool_calls = m.toolCalls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } }));
    return out;
  });
}

/** History messages fetched when a node's `memory` has no window size (Dify caps at 500 messages and ~2000 tokens). */
const DEFAULT_MEMORY_MESSAGES = 50;

/**
 * A chatflow node's conversation history as Dify writes it into its prompts (`Human: …` /
 * `Assistant: …` lines); "" outside a chatflow conversation or without `memory`. `windowSize`
 * is the node's `memory.window.size` (used whether or not the window is enabled, as Dify's
 * classifier and extractor do).
 */
export async function memoryText(ctx: NodeContext): Promise<string> {
  const memory = ctx.node.data.memory;
  if (!isObject(memory) || ctx.kind !== 'advanced-chat' || !ctx.conversationId || !ctx.ports.memory) return '';
  const w = isObject(memory.window) ? memory.window : {};
  const size = typeof w.size === 'number' && w.size > 0 ? Math.floor(w.size) : DEFAULT_MEMORY_MESSAGES;
  const history = await ctx.ports.memory.history(ctx.conversationId, size);
  return history
    .filter((m) => m.role === 'user' || m.role === 'assistant')
    .map((m) => `${m.role === 'user' ? 'Human' : 'Assistant'}: ${textAndFiles(m.content).text}`)
    .join('\n');
}

/**
 * The image parts of a node's `vision` files (`vision.enabled`, `vision.configs.variable_selector`,
 * `vision.configs.detail`): files of the run that are images at an http(s) URL. Uploaded
 * (`local_file`) files have no URL the engine can give the model and are left out.
 */
export function visionParts(ctx: NodeContext): ContentPart[] {
  const vision = ctx.node.data.vision;
  if (!isObject(vision) || vision.enabled !== true) return [];
  const configs = isObject(vision.configs) ? vision.configs : {};
  const selector = selectorOf(configs.variable_selector) ?? ['sys', 'files'];
  const detail = configs.detail === 'low' ? 'low' : 'high';
  const value = ctx.pool.get(selector);
  const files = Array.isArray(value) ? value : value === undefined || value === null ? [] : [value];
  const parts: ContentPart[] = [];
  for (const f of files) {
    if (!isObject(f)) continue;
    const url = typeof f.url === 'string' ? f.url : typeof f.remote_url === 'string' ? f.remote_url : undefined;
    const mime = typeof f.mime_type === 'string' ? f.mime_type : '';
    const image = f.type === 'image' || mime.startsWith('image/');
    if (url && image && /^(https?:|data:image\/)/i.test(url)) parts.push({ type: 'image', url, detail });
  }
  return parts;
}

/** Dify puts vision files before the text of the last message when it is the user's, else in a new user message. */
export function withFiles(messages: ChatMessage[], files: readonly ContentPart[]): ChatMessage[] {
  if (files.length === 0) return messages;
  const last = messages.at(-1);
  if (last && last.role === 'user') {
    const content: ContentPart[] = typeof last.content === 'string' ? (last.content ? [{ type: 'text', text: last.content }] : []) : [...last.content];
    return [...messages.slice(0, -1), { role: 'user', content: [...files, ...content] }];
  }
  return [...messages, { role: 'user', content: [...files] }];
}
