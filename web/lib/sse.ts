/**
 * Server-sent events read from a `fetch` body, as Dify's web app reads them: frames separated by a
 * blank line, each `data:` line a JSON object (`data: {json}\n\n`). `event:` and comment lines (the
 * keep-alive `event: ping`) carry nothing the pages use. Linear in the stream; a frame that is not
 * JSON is skipped.
 */
export type SseEvent = Record<string, unknown> & { event?: string };

export class SseParser {
  #buffer = '';

  /** Feeds decoded text; returns the complete frames' events. */
  push(text: string): SseEvent[] {
    this.#buffer += text;
    const out: SseEvent[] = [];
    let start = 0;
    for (;;) {
      const end = nextBoundary(this.#buffer, start);
      if (end < 0) break;
      const frame = this.#buffer.slice(start, end);
      start = end + (this.#buffer.startsWith('\r\n\r\n', end) ? 4 : 2);
      const event = parseFrame(frame);
      if (event) out.push(event);
    }
    this.#buffer = this.#buffer.slice(start);
    return out;
  }

  /** The event of a last frame the stream ended without its blank line, if any. */
  flush(): SseEvent[] {
    const rest = this.#buffer;
    this.#buffer = '';
    const event = parseFrame(rest);
    return event ? [event] : [];
  }
}

function nextBoundary(s: string, from: number): number {
  const lf = s.indexOf('\n\n', from);
  const crlf = s.indexOf('\r\n\r\n', from);
  if (lf < 0) return crlf;
  if (crlf < 0) return lf;
  return Math.min(lf, crlf);
}

function parseFrame(frame: string): SseEvent | null {
  const data: string[] = [];
  for (const line of frame.split(/\r?\n/)) {
    if (line.startsWith('data:')) data.push(line.slice(line.startsWith('data: ') ? 6 : 5));
  }
  if (data.length === 0) return null;
  try {
    const value: unknown = JSON.parse(data.join('\n'));
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as SseEvent) : null;
  } catch {
    return null;
  }
}

/** Reads a response body as events, calling `onEvent` for each as it arrives. */
export async function readEvents(body: ReadableStream<Uint8Array>, onEvent: (e: SseEvent) => void): Promise<void> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const parser = new SseParser();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    for (const e of parser.push(decoder.decode(value, { stream: true }))) onEvent(e);
  }
  for (const e of parser.push(decoder.decode())) onEvent(e);
  for (const e of parser.flush()) onEvent(e);
}
