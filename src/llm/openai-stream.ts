import { isAscii } from 'node:buffer';
import { completionRequestError } from './errors.js';
import { EventShape } from './event-shape.js';
import type { GenerateChunk, ToolCall } from './model-provider.js';
import type { CancelSource } from '../lib/cancellation.js';
import { ThinkWrap } from './think-wrap.js';
import type { ByteSource } from './upstream-body.js';

/** One piece of a streamed tool call: the first names it, the rest append to its arguments. */
interface ToolCallDelta {
  index?: number;
  id?: string;
  function?: { name?: string; arguments?: string };
}

interface StreamChunk {
  choices?: { text?: string | null; delta?: { content?: string | null; reasoning_content?: string | null; reasoning?: string | null; tool_calls?: ToolCallDelta[] | null } }[];
  usage?: { prompt_tokens?: number; completion_tokens?: number } | null;
  error?: { message?: string };
}

/**
 * Reads an OpenAI-protocol event stream (`data: {json}` lines, `data: [DONE]`) from a response
 * body. Everything that arrived in one network read is yielded as one text chunk, so a fast
 * upstream costs one downstream frame per read rather than per token (the first token is yielded
 * on its own, as soon as it is decoded). Token events of a shape seen before are read without
 * `JSON.parse` (`EventShape`). A body that breaks off throws `completion_request_error`; an
 * aborted request rethrows the abort.
 */
export async function* readOpenAIStream(body: ReadableStream<Uint8Array> | ByteSource, signal: Pick<CancelSource, 'aborted' | 'reason'> | undefined): AsyncGenerator<GenerateChunk> {
  const reader = 'getReader' in body ? body.getReader() : body;
  const decoder = new EventStreamDecoder();
  const shape = new EventShape();
  const think = new ThinkWrap();
  let buf = '';
  let finished = false;
  let first = true;
  const calls = new ToolCallCollector();
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
      buf += decoder.decode(read.value);
      let text = '';
      let usage: StreamChunk['usage'];
      let start = 0;
      let nl: number;
      while ((nl = buf.indexOf('\n', start)) >= 0) {
        const lineStart = start;
        const end = nl > lineStart && buf.charCodeAt(nl - 1) === 13 ? nl - 1 : nl;
        start = nl + 1;
        const known = shape.match(buf, lineStart, end);
        if (known !== undefined) {
          text += think.next(undefined, known);
        } else {
          if (!buf.startsWith('data:', lineStart)) continue;
          const line = buf.slice(lineStart, end);
          const payloadStart = line.charCodeAt(5) === 32 ? 6 : 5;
          const payload = line.slice(payloadStart);
          if (payload === '[DONE]') {
            finished = true;
            break;
          }
          const event = readEvent(parseEvent(payload));
          if (event.token || event.reasoning) text += think.next(event.reasoning, event.token);
          if (event.toolCalls) calls.add(event.toolCalls);
          if (event.usage) usage = event.usage;
          else if (event.token && !event.reasoning) shape.learn(line, payloadStart, readEvent);
        }
        if (first && text) {
          // The first token goes out at once; the rest of this read follows as one chunk.
          first = false;
          yield { type: 'text', text };
          text = '';
        }
      }
      buf = buf.slice(start);
      if (finished) text += think.end();
      if (text) yield { type: 'text', text };
      if (usage) yield { type: 'usage', usage: { promptTokens: usage.prompt_tokens, completionTokens: usage.completion_tokens } };
    }
    if (!finished && signal?.aborted) throw signal.reason;
    const close = think.end();
    if (close) yield { type: 'text', text: close };
    if (calls.size > 0) yield { type: 'tool_calls', calls: calls.done() };
  } finally {
    // Closes the upstream connection when the consumer stops early.
    await reader.cancel().catch(() => undefined);
  }
}

function parseEvent(payload: string): StreamChunk {
  try {
    return JSON.parse(payload) as StreamChunk;
  } catch {
    throw completionRequestError(`the upstream sent an event that is not JSON: ${payload.slice(0, 200)}`);
  }
}

/**
 * What an event carries: the first choice's token (`delta.content`, or `text` of the legacy
 * completions), a usage object; an error event throws.
 */
function readEvent(event: unknown): { token: string | undefined; reasoning: string | undefined; usage: StreamChunk['usage']; toolCalls: ToolCallDelta[] | undefined; other: boolean } {
  const chunk = (typeof event === 'object' && event !== null ? event : {}) as StreamChunk;
  if (chunk.error) throw completionRequestError(chunk.error.message ?? 'the upstream reported an error');
  const choice = chunk.choices?.[0];
  const t = choice?.delta?.content ?? choice?.text;
  const r = choice?.delta?.reasoning_content ?? choice?.delta?.reasoning;
  const reasoning = typeof r === 'string' && r !== '' ? r : undefined;
  const usage = chunk.usage ?? undefined;
  const toolCalls = Array.isArray(choice?.delta?.tool_calls) && choice.delta.tool_calls.length > 0 ? choice.delta.tool_calls : undefined;
  return { token: typeof t === 'string' ? t : undefined, reasoning, usage, toolCalls, other: usage !== undefined || reasoning !== undefined || toolCalls !== undefined };
}

/** Joins streamed tool-call pieces by their `index` into whole calls, in index order. */
class ToolCallCollector {
  readonly #calls = new Map<number, { id: string; name: string; arguments: string }>();

  get size(): number {
    return this.#calls.size;
  }

  add(deltas: readonly ToolCallDelta[]): void {
    for (const d of deltas) {
      const index = typeof d.index === 'number' ? d.index : this.#calls.size;
      const call = this.#calls.get(index) ?? { id: '', name: '', arguments: '' };
      if (typeof d.id === 'string' && d.id) call.id = d.id;
      if (typeof d.function?.name === 'string' && d.function.name) call.name = d.function.name;
      if (typeof d.function?.arguments === 'string') call.arguments += d.function.arguments;
      this.#calls.set(index, call);
    }
  }

  done(): ToolCall[] {
    return [...this.#calls.entries()].sort((a, b) => a[0] - b[0]).map(([, c]) => c);
  }
}

/**
 * Decodes the body's bytes. A read of plain ASCII (nearly every read of JSON events) is copied as
 * Latin-1, an order of magnitude cheaper than UTF-8 decoding. The first read (where the decoder
 * drops a byte-order mark, and only there), a read with other bytes and the read after it (which
 * may finish its last character) go through the UTF-8 decoder.
 */
class EventStreamDecoder {
  readonly #utf8 = new TextDecoder();
  #pending = true;

  decode(bytes: Uint8Array): string {
    if (bytes.byteLength === 0) return '';
    const ascii = isAscii(bytes);
    if (ascii && !this.#pending) return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1');
    this.#pending = !ascii;
    return this.#utf8.decode(bytes, { stream: true });
  }
}
