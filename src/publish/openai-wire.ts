import { invalidParam } from '../infra/errors.js';
import type { UsageBody } from '../lib/usage.js';
import type { Exchange } from './openai-chat.js';

/**
 * OpenAI's chat completions wire format (https://platform.openai.com/docs/api-reference/chat),
 * as Dovetail's OpenAI-compatible endpoint reads and writes it. Framework-free.
 */

/** One message of `messages` as validated by the route's schema. */
export interface WireMessage {
  readonly role: string;
  readonly content?: unknown;
}

/** The request body after the route's schema. */
export interface ChatCompletionRequest {
  readonly model: string;
  readonly messages: readonly WireMessage[];
  readonly stream?: boolean | null;
  readonly stream_options?: { readonly include_usage?: boolean } | null;
  readonly user?: string;
  /** Dovetail's extension: the conversation to continue. */
  readonly conversation_id?: string | null;
  /** Dovetail's extension: the app's input form values. */
  readonly inputs?: Record<string, unknown>;
}

/** What the request asks of the app. */
export interface ChatCompletionAsk {
  readonly query: string;
  readonly previous: Exchange | undefined;
}

const ROLES = new Set(['system', 'developer', 'user', 'assistant', 'tool', 'function']);

/** A message's text: a string, or its `text` parts joined (other parts are refused, naming them). */
function textOf(m: WireMessage, i: number): string {
  const c = m.content;
  if (c === undefined || c === null) return '';
  if (typeof c === 'string') return c;
  if (!Array.isArray(c)) throw invalidParam(`messages[${i}].content must be a string or an array of text parts`);
  return c
    .map((part: unknown, j) => {
      const p = part as { type?: unknown; text?: unknown } | null;
      if (p?.type !== 'text' || typeof p.text !== 'string') throw invalidParam(`messages[${i}].content[${j}] must be a text part ({"type": "text", "text": …}); other parts are not accepted`);
      return p.text;
    })
    .join('');
}

/**
 * The query and the exchange before it. The query is the last user message, which must be the
 * last of the user and assistant messages (system, developer and tool messages are skipped: the
 * app has its own prompt); the user message and assistant answer just before it are the previous
 * exchange, by which a request without `conversation_id` finds the conversation it continues.
 */
export function readMessages(messages: readonly WireMessage[]): ChatCompletionAsk {
  messages.forEach((m, i) => {
    if (!ROLES.has(m.role)) throw invalidParam(`messages[${i}].role must be one of ${[...ROLES].join(', ')}`);
  });
  const turns = messages.map((m, i) => ({ m, i })).filter(({ m }) => m.role === 'user' || m.role === 'assistant');
  const last = turns.at(-1);
  if (!last || last.m.role !== 'user') throw invalidParam('messages must end with a user message (the query)');
  const answer = turns.at(-2);
  const question = turns.at(-3);
  const previous = answer?.m.role === 'assistant' && question?.m.role === 'user' ? { query: textOf(question.m, question.i), answer: textOf(answer.m, answer.i) } : undefined;
  return { query: textOf(last.m, last.i), previous };
}

/** OpenAI's `usage` from Dify's usage body. */
export function openAiUsage(u: UsageBody): { prompt_tokens: number; completion_tokens: number; total_tokens: number } {
  return { prompt_tokens: u.prompt_tokens, completion_tokens: u.completion_tokens, total_tokens: u.total_tokens };
}

/** The fields every response and chunk of one answer shares. */
export interface AnswerIds {
  readonly messageId: string;
  readonly conversationId: string | undefined;
  /** Epoch ms. */
  readonly createdAt: number;
  readonly model: string;
}

const completionId = (ids: AnswerIds) => `chatcmpl-${ids.messageId}`;
const extension = (ids: AnswerIds) => (ids.conversationId !== undefined ? { conversation_id: ids.conversationId } : {});

/** A non-streamed `chat.completion`. */
export function completionBody(ids: AnswerIds, answer: string, usage: UsageBody): Record<string, unknown> {
  return {
    id: completionId(ids),
    object: 'chat.completion',
    created: Math.floor(ids.createdAt / 1000),
    model: ids.model,
    choices: [{ index: 0, message: { role: 'assistant', content: answer, refusal: null }, logprobs: null, finish_reason: 'stop' }],
    usage: openAiUsage(usage),
    system_fingerprint: null,
    ...extension(ids),
  };
}

/**
 * A `chat.completion.chunk`: `delta` in its one choice with `finishReason`, or with `usage` the
 * last chunk's empty `choices` (OpenAI's `stream_options.include_usage`); with `includeUsage`
 * every other chunk has `usage: null`, as OpenAI's.
 */
export function chunk(ids: AnswerIds, part: { delta: Record<string, unknown>; finishReason?: 'stop' } | { usage: UsageBody }, includeUsage: boolean): Record<string, unknown> {
  const base = { id: completionId(ids), object: 'chat.completion.chunk', created: Math.floor(ids.createdAt / 1000), model: ids.model, system_fingerprint: null };
  if ('usage' in part) return { ...base, choices: [], usage: openAiUsage(part.usage), ...extension(ids) };
  return {
    ...base,
    choices: [{ index: 0, delta: part.delta, logprobs: null, finish_reason: part.finishReason ?? null }],
    ...(includeUsage ? { usage: null } : {}),
    ...extension(ids),
  };
}

/** OpenAI's error `type` for an HTTP status. */
function errorType(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 429) return 'rate_limit_error';
  if (status >= 500) return 'server_error';
  return 'invalid_request_error';
}

/** OpenAI's error envelope for Dovetail's `{code, message, status}`; `code` keeps Dovetail's code. */
export function openAiError(e: { code: string; message: string; status: number }): { error: { message: string; type: string; param: string | null; code: string } } {
  return { error: { message: e.message, type: errorType(e.status), param: null, code: e.code } };
}
