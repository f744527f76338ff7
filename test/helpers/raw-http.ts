import net from 'node:net';

export interface RawResponse {
  /** Status of the first response on the socket (undefined when none came). */
  readonly status: number | undefined;
  /** Everything the server sent. */
  readonly text: string;
  /** The parsed JSON body of the first response, when it had one. */
  readonly json: Record<string, unknown> | undefined;
  /** The server ended or reset the connection before `waitMs` passed. */
  readonly closedByServer: boolean;
}

export interface RawOptions {
  /** Half-close our side after writing (the client gives up sending). Default false. */
  readonly end?: boolean;
  /** How long to wait for the server to answer and close (ms). Default 5000. */
  readonly waitMs?: number;
  /** Resolve as soon as a complete response head and body arrived, without waiting for a close. */
  readonly untilResponse?: boolean;
}

/** Parses `HTTP/1.1 NNN …\r\n…\r\n\r\n{json}` (content-length bodies only; good enough for errors). */
export function parseRawResponse(text: string): { status: number | undefined; json: Record<string, unknown> | undefined; complete: boolean } {
  const m = /^HTTP\/1\.1 (\d{3})/.exec(text);
  if (!m) return { status: undefined, json: undefined, complete: false };
  const headEnd = text.indexOf('\r\n\r\n');
  if (headEnd < 0) return { status: Number(m[1]), json: undefined, complete: false };
  const len = /\r\ncontent-length: (\d+)/i.exec(text.slice(0, headEnd));
  const body = text.slice(headEnd + 4, len ? headEnd + 4 + Number(len[1]) : undefined);
  const complete = len ? Buffer.byteLength(body) >= Number(len[1]) : false;
  let json: Record<string, unknown> | undefined;
  try {
    json = JSON.parse(body) as Record<string, unknown>;
  } catch {
    json = undefined;
  }
  return { status: Number(m[1]), json, complete };
}

/**
 * Writes raw bytes to the server of `url` on a fresh TCP connection and collects what comes back,
 * for requests no HTTP client would send (truncated multipart, bodies that never finish).
 */
export function rawRequest(url: string, bytes: string | Buffer, opts: RawOptions = {}): Promise<RawResponse> {
  const { port, hostname } = new URL(url);
  return new Promise((resolve) => {
    const socket = net.connect(Number(port), hostname);
    let text = '';
    let settled = false;
    const done = (closedByServer: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      const p = parseRawResponse(text);
      resolve({ status: p.status, text, json: p.json, closedByServer });
    };
    const timer = setTimeout(() => done(false), opts.waitMs ?? 5000);
    socket.on('data', (d: Buffer) => {
      text += d.toString('utf8');
      if (opts.untilResponse && parseRawResponse(text).complete) done(false);
    });
    socket.on('end', () => done(true));
    socket.on('close', () => done(true));
    socket.on('error', () => done(true));
    socket.write(bytes, () => {
      if (opts.end) socket.end();
    });
  });
}

/** The head of a request: `METHOD path HTTP/1.1` and headers, ending in the blank line. */
export function requestHead(method: string, url: string, headers: Record<string, string | number>): string {
  const u = new URL(url);
  const lines = [`${method} ${u.pathname}${u.search} HTTP/1.1`, `Host: ${u.host}`, ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)];
  return lines.join('\r\n') + '\r\n\r\n';
}
