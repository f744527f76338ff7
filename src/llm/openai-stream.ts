import { isAscii } from 'node:buffer';
import { completionRequestError } from './errors.js';
import { EventShape } from './event-shape.js';
import type { GenerateChunk } from './model-provider.js';

interface StreamChunk {
  choices?: { text?: string | null; delta?: { content?: string | null; tool_calls?: ToolCallDelta[] } }[];
  usage?: { prompt_tokens?: number; completion_tokens?: number } | null;
  error?: { message?: string };
}

interface ToolCallDelta {
  index?: number;
  id?: string;
  function?: { name?: string; arguments?: string };
}

/** Tool calls as their deltas arrive (by `index`); complete once the stream ends. */
class ToolCallAssembler {
  readonly #calls = new Map<number, { id: string; name: string; arguments: string }>();

  add(deltas: readonly ToolCallDelta[]): void {
    for (const d of deltas) {
      const i = d.index ?? 0;
      const c = this.#calls.get(i) ?? { id: '', name: '', arguments: '' };
      if (d.id) c.id = d.id;
      if (d.function?.name) c.name += d.function.name;
      if (d.function?.arguments) c.arguments += d.function.arguments;
      this.#calls.set(i, c);
    }
  }

  done(): GenerateChunk[] {
    return [...this.#calls.entries()].sort((a, b) => a[0] - b[0]).map(([i, c]) => ({ type: 'tool_call' as const, call: { id: c.id || `call_${i}`, name: c.name, arguments: c.arguments } }));
  }
}

/**
 * Reads an OpenAI-protocol event stream (`data: {json}` lines, `data: [DONE]`) from a response
 * body. Everything that arrived in one network read is yielded as one text chunk, so a fast
 * upstream costs one downstream frame per read rather than per token (the first token is yielded
 * on its own, as soon as it is decoded). Token events of a shape seen before are read without
 * `JSON.parse` (`EventShape`). A body that breaks off throws `completion_request_error`; an
 * aborted request rethrows the abort.
 */
export async function* readOpenAIStream(body: ReadableStream<Uint8Array>, signal: AbortSignal | undefined): AsyncGenerator<GenerateChunk> {
  const reader = body.getReader();
  const decoder = new EventStreamDecoder();
  const shape = new EventShape();
  let buf = '';
  let finished = false;
  let first = true;
  const calls = new ToolCallAssembler();
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
          text += known;
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
          if (event.toolCalls) calls.add(event.toolCalls);
          if (event.token) text += event.token;
          if (event.usage) usage = event.usage;
          else if (event.token) shape.learn(line, payloadStart, readEvent);
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
    yield* calls.done();
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
function readEvent(event: unknown): { token: string | undefined; usage: StreamChunk['usage']; other: boolean; toolCalls?: ToolCallDelta[] } {
  const chunk = (typeof event === 'object' && event !== null ? event : {}) as StreamChunk;
  if (chunk.error) throw completionRequestError(chunk.error.message ?? 'the upstream reported an error');
  const choice = chunk.choices?.[0];
  const t = choice?.delta?.content ?? choice?.text;
  const usage = chunk.usage ?? undefined;
  const toolCalls = choice?.delta?.tool_calls;
  return { token: typeof t === 'string' ? t : undefined, usage, other: usage !== undefined || toolCalls !== undefined, ...(toolCalls ? { toolCalls } : {}) };
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
