import { completionRequestError } from './errors.js';
import type { GenerateChunk } from './model-provider.js';

interface StreamChunk {
  choices?: { text?: string | null; delta?: { content?: string | null } }[];
  usage?: { prompt_tokens?: number; completion_tokens?: number } | null;
  error?: { message?: string };
}

/**
 * Reads an OpenAI-protocol event stream (`data: {json}` lines, `data: [DONE]`) from a response
 * body. Everything that arrived in one network read is yielded as one text chunk, so a fast
 * upstream costs one downstream frame per read rather than per token (the first token is yielded
 * on its own, as soon as it is decoded). A body that breaks off
 * throws `completion_request_error`; an aborted request rethrows the abort.
 */
export async function* readOpenAIStream(body: ReadableStream<Uint8Array>, signal: AbortSignal | undefined): AsyncGenerator<GenerateChunk> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buf = '';
  let finished = false;
  let first = true;
  try {
    while (!finished) {
      let read: ReadableStreamReadResult<Uint8Array>;
      try {
        read = await reader.read();
      } catch (err) {
        if (signal?.aborted) throw err;
        throw completionRequestError(`the upstream stream broke off: ${err instanceof Error ? err.message : String(err)}`);
      }
      if (read.done) break;
      buf += decoder.decode(read.value, { stream: true });
      let text = '';
      let usage: StreamChunk['usage'];
      let start = 0;
      let nl: number;
      while ((nl = buf.indexOf('\n', start)) >= 0) {
        const line = buf.charCodeAt(nl - 1) === 13 ? buf.slice(start, nl - 1) : buf.slice(start, nl);
        start = nl + 1;
        if (!line.startsWith('data:')) continue;
        const payload = line.slice(line.charCodeAt(5) === 32 ? 6 : 5);
        const fast = deltaContent(payload);
        if (fast !== undefined) {
          text += fast;
        } else if (payload === '[DONE]') {
          finished = true;
          break;
        } else {
          let chunk: StreamChunk;
          try {
            chunk = JSON.parse(payload) as StreamChunk;
          } catch {
            throw completionRequestError(`the upstream sent an event that is not JSON: ${payload.slice(0, 200)}`);
          }
          if (chunk.error) throw completionRequestError(chunk.error.message ?? 'the upstream reported an error');
          const choice = chunk.choices?.[0];
          const t = choice?.delta?.content ?? choice?.text;
          if (t) text += t;
          if (chunk.usage) usage = chunk.usage;
        }
        if (first && text) {
          // The first token goes out at once; the rest of this read follows as one chunk.
          first = false;
          yield { type: 'text', text };
          text = '';
        }
      }
      buf = buf.slice(start);
      if (text) yield { type: 'text', text };
      if (usage) yield { type: 'usage', usage: { promptTokens: usage.prompt_tokens, completionTokens: usage.completion_tokens } };
    }
    if (!finished && signal?.aborted) throw signal.reason;
  } finally {
    // Closes the upstream connection when the consumer stops early.
    await reader.cancel().catch(() => undefined);
  }
}

const DELTA = '"delta":{"content":"';

/**
 * The token of the common event shape `…"delta":{"content":"<token>"}…` (no usage), read
 * without `JSON.parse` — five times cheaper per token. Any other shape (role, tool calls, usage,
 * errors, legacy `text`) returns `undefined` and is parsed in full. The scan cannot be fooled by
 * the pattern inside a string value: quotes inside JSON strings are escaped.
 */
export function deltaContent(payload: string): string | undefined {
  const i = payload.indexOf(DELTA);
  if (i < 0) return undefined;
  const s = i + DELTA.length;
  let j = s;
  let escaped = false;
  for (;;) {
    if (j >= payload.length) return undefined;
    const c = payload.charCodeAt(j);
    if (c === 34) break; // closing quote
    if (c === 92) {
      escaped = true;
      j += 2;
    } else j++;
  }
  // `"usage":null` rides on every chunk when usage is requested (OpenAI); only a usage object needs the full parse.
  if (payload.charCodeAt(j + 1) !== 125 || payload.includes('"usage":{') || payload.includes('"error"')) return undefined;
  return escaped ? (JSON.parse(payload.slice(s - 1, j + 1)) as string) : payload.slice(s, j);
}
