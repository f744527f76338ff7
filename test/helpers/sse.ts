/** One parsed SSE frame: a JSON `data:` frame or a bare `event:` frame (ping). */
export type SseFrame = { kind: 'data'; data: Record<string, unknown>; raw: string } | { kind: 'event'; event: string; raw: string };

/** Splits an event-stream body into frames, checking Dify's framing exactly. */
export function parseSse(text: string): SseFrame[] {
  if (text && !text.endsWith('\n\n')) throw new Error(`stream does not end with a blank line: ${JSON.stringify(text.slice(-40))}`);
  return text
    .split('\n\n')
    .filter((f) => f.length > 0)
    .map((raw) => {
      if (raw.startsWith('data: ')) {
        if (raw.includes('\n')) throw new Error(`multi-line data frame: ${raw}`);
        return { kind: 'data', data: JSON.parse(raw.slice(6)) as Record<string, unknown>, raw };
      }
      const m = /^event: (\w+)$/.exec(raw);
      if (!m) throw new Error(`unexpected frame: ${JSON.stringify(raw)}`);
      return { kind: 'event', event: m[1]!, raw };
    });
}

/** Reads a streaming response frame by frame as they arrive. */
export async function* readSse(res: Response): AsyncGenerator<SseFrame> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buf = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    buf += decoder.decode(value, { stream: true });
    let i: number;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const raw = buf.slice(0, i + 2);
      buf = buf.slice(i + 2);
      yield* parseSse(raw);
    }
  }
  if (buf.trim()) throw new Error(`trailing partial frame: ${JSON.stringify(buf)}`);
}

/** The JSON payloads of a stream's data frames. */
export function dataFrames(frames: SseFrame[]): Record<string, unknown>[] {
  return frames.flatMap((f) => (f.kind === 'data' ? [f.data] : []));
}
