import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** How the fake upstream answers the next requests. */
export interface FakeBehaviour {
  /** The answer text; default: `echo: <last user message>`. A function gets the request body. */
  reply?: string | ((body: Record<string, unknown>) => string);
  /** Split the answer into chunks of this many characters (default 4). */
  chunkSize?: number;
  /** Delay between streamed chunks in ms (default 0). */
  delayMs?: number;
  /** Answer with this HTTP status and an OpenAI error body instead. */
  failStatus?: number;
  failMessage?: string;
  /** Break the stream (destroy the socket) after this many chunks. */
  breakAfterChunks?: number;
  /** Send this many chunks, then nothing more (the connection stays open until the client closes it). */
  holdAfterChunks?: number;
  /** Accept the request and never answer. */
  hang?: boolean;
  /** Report usage in the final chunk (default true). */
  usage?: boolean;
  /** Answer `/embeddings` with this HTTP status and an OpenAI error body (default: embeddings work). */
  embeddingsFailStatus?: number;
  /** `/audio/transcriptions` answers `{"text": transcript}` (default: `heard <n> bytes`). */
  transcript?: string;
  /**
   * Chat answers to requests that offer `tools` call these functions (after the `reply` text when
   * it is a string; a `reply` function is asked only for answers without calls): streamed as OpenAI does, the name first, the arguments in
   * `chunkSize` pieces, `finish_reason: "tool_calls"`. A function gets the request body; undefined
   * or `[]` means a plain text answer.
   */
  toolCalls?: FakeToolCall[] | ((body: Record<string, unknown>) => FakeToolCall[] | undefined);
  /** `/moderations` flags an input that contains one of these (case-insensitive); default: none. */
  flagWords?: string[];
  /** Stream this as `delta.reasoning_content` (DeepSeek's reasoning field) before the answer, in chunks of `chunkSize`. */
  reasoning?: string;
}

/** A function call the fake model makes: `arguments` is sent as is (it may be invalid JSON). */
export interface FakeToolCall {
  readonly name: string;
  readonly arguments: string;
}

/** The `file` part of an `/audio/transcriptions` request, as received. */
export interface RecordedAudio {
  readonly filename: string;
  readonly mimeType: string;
  readonly bytes: Buffer;
}

/** What `/audio/speech` streams back: these chunks, one write each, as `audio/mpeg`. */
export const SPEECH_CHUNKS: readonly Buffer[] = [Buffer.from('ID3\x03fake-'), Buffer.from('mp3-frame-1;'), Buffer.from('mp3-frame-2;'), Buffer.from('end')];

export interface RecordedRequest {
  readonly path: string;
  readonly body: Record<string, unknown>;
  readonly headers: http.IncomingHttpHeaders;
  /** `/audio/transcriptions`: the `file` part (the other form fields are in `body`). */
  readonly audio?: RecordedAudio;
  /** Set when the client closed the connection before the response finished. */
  aborted: boolean;
  finished: boolean;
}

export interface FakeOpenAI {
  /** Base URL including `/v1`, for `OPENAI_BASE_URL`. */
  readonly baseUrl: string;
  readonly requests: RecordedRequest[];
  behaviour: FakeBehaviour;
  /** Resolves when a request has been aborted by the client. */
  waitForAbort(timeoutMs?: number): Promise<RecordedRequest>;
  close(): Promise<void>;
}

function lastUserText(body: Record<string, unknown>): string {
  if (typeof body.prompt === 'string') return body.prompt;
  const msgs = Array.isArray(body.messages) ? (body.messages as { role: string; content: unknown }[]) : [];
  const last = [...msgs].reverse().find((m) => m.role === 'user');
  if (!last) return '';
  if (typeof last.content === 'string') return last.content;
  if (Array.isArray(last.content)) return last.content.map((p: { text?: string }) => p.text ?? '').join('');
  return '';
}

/**
 * A local OpenAI-compatible server speaking the real protocol: `/v1/chat/completions` and
 * `/v1/completions` (streaming SSE or JSON), `/v1/embeddings`, `/v1/audio/transcriptions`
 * (multipart; answers `{"text"}`), `/v1/audio/speech` (streams `SPEECH_CHUNKS` as `audio/mpeg`) and
 * `/v1/moderations` (flags inputs containing `flagWords`).
 * Tests point providers at it.
 */
export async function startFakeOpenAI(initial: FakeBehaviour = {}): Promise<FakeOpenAI> {
  const requests: RecordedRequest[] = [];
  const abortWaiters: ((r: RecordedRequest) => void)[] = [];
  const state = { behaviour: initial };

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => void handle(req, res, Buffer.concat(chunks)));
  });

  /** A multipart form read as the platform's `Request` reads it: text fields and the `file` part. */
  async function readForm(req: http.IncomingMessage, raw: Buffer): Promise<{ body: Record<string, unknown>; audio?: RecordedAudio }> {
    const form = await new Request('http://fake/', { method: 'POST', headers: { 'content-type': req.headers['content-type'] ?? '' }, body: new Uint8Array(raw) }).formData();
    const body: Record<string, unknown> = {};
    let audio: RecordedAudio | undefined;
    for (const [name, value] of form.entries()) {
      if (typeof value === 'string') body[name] = value;
      else if (name === 'file') audio = { filename: value.name, mimeType: value.type, bytes: Buffer.from(await value.arrayBuffer()) };
    }
    return { body, audio };
  }

  async function handle(req: http.IncomingMessage, res: http.ServerResponse, raw: Buffer): Promise<void> {
    const transcription = req.url?.endsWith('/audio/transcriptions') === true;
    const form = transcription ? await readForm(req, raw).catch(() => undefined) : undefined;
    if (transcription && !form) {
      res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'the request is not a multipart form', type: 'invalid_request_error', code: null } }));
      return;
    }
    const body = form ? form.body : ((raw.length > 0 ? JSON.parse(raw.toString()) : {}) as Record<string, unknown>);
    const rec: RecordedRequest = { path: req.url ?? '', body, headers: req.headers, ...(form?.audio ? { audio: form.audio } : {}), aborted: false, finished: false };
    requests.push(rec);
    res.on('close', () => {
      if (!rec.finished) {
        rec.aborted = true;
        for (const w of abortWaiters.splice(0)) w(rec);
      }
    });
    const b = state.behaviour;
    if (req.url?.endsWith('/embeddings') && b.embeddingsFailStatus) {
      rec.finished = true;
      res.writeHead(b.embeddingsFailStatus, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'embeddings are down', type: 'server_error', code: null } }));
      return;
    }
    if (req.url?.endsWith('/embeddings')) {
      const inputs = Array.isArray(body.input) ? (body.input as string[]) : [String(body.input)];
      const data = inputs.map((text, index) => ({ object: 'embedding', index, embedding: embed(text) }));
      rec.finished = true;
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ object: 'list', data, model: body.model, usage: { prompt_tokens: 1, total_tokens: 1 } }));
      return;
    }
    if (req.url?.endsWith('/moderations')) {
      const inputs = Array.isArray(body.input) ? (body.input as string[]) : [String(body.input)];
      const words = (b.flagWords ?? []).map((w) => w.toLowerCase());
      const results = inputs.map((t) => ({ flagged: words.some((w) => t.toLowerCase().includes(w)), categories: {}, category_scores: {} }));
      rec.finished = true;
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ id: 'modr-fake', model: body.model, results }));
      return;
    }
    if (b.hang) return;
    if (b.failStatus) {
      rec.finished = true;
      res.writeHead(b.failStatus, { 'content-type': 'application/json' }).end(
        JSON.stringify({ error: { message: b.failMessage ?? 'upstream failure', type: 'server_error', code: null } }),
      );
      return;
    }
    if (transcription) {
      rec.finished = true;
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ text: b.transcript ?? `heard ${form?.audio?.bytes.length ?? 0} bytes` }));
      return;
    }
    if (req.url?.endsWith('/audio/speech')) {
      res.writeHead(200, { 'content-type': 'audio/mpeg', 'transfer-encoding': 'chunked' });
      for (const c of SPEECH_CHUNKS) {
        if (res.destroyed) return;
        res.write(c);
        await new Promise((r) => setTimeout(r, b.delayMs ?? 5));
      }
      rec.finished = true;
      res.end();
      return;
    }
    const legacy = req.url?.endsWith('/completions') && !req.url.endsWith('/chat/completions');
    const calls = (legacy || !Array.isArray(body.tools) ? undefined : typeof b.toolCalls === 'function' ? b.toolCalls(body) : b.toolCalls) ?? [];
    const text = typeof b.reply === 'function' ? (calls.length ? '' : b.reply(body)) : (b.reply ?? (calls.length ? '' : `echo: ${lastUserText(body)}`));
    const size = b.chunkSize ?? 4;
    const chunks: string[] = [];
    for (let i = 0; i < text.length; i += size) chunks.push(text.slice(i, i + size));
    const callIds = calls.map((_c, i) => `call_${i}_${Math.random().toString(36).slice(2, 10)}`);
    const finishReason = calls.length ? 'tool_calls' : 'stop';
    const usage = { prompt_tokens: Math.max(1, Math.ceil(lastUserText(body).length / 4)), completion_tokens: chunks.length + calls.reduce((n, c) => n + Math.ceil(c.arguments.length / size), 0), total_tokens: 0 };
    usage.total_tokens = usage.prompt_tokens + usage.completion_tokens;
    const id = `chatcmpl-${Math.random().toString(36).slice(2)}`;
    const created = Math.floor(Date.now() / 1000);
    if (!body.stream) {
      rec.finished = true;
      const toolCalls = calls.map((c, i) => ({ id: callIds[i], type: 'function', function: { name: c.name, arguments: c.arguments } }));
      const choice = legacy
        ? { index: 0, text, finish_reason: 'stop', logprobs: null }
        : { index: 0, message: { role: 'assistant', content: calls.length && !text ? null : text, ...(calls.length ? { tool_calls: toolCalls } : {}) }, finish_reason: finishReason };
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({ id, object: legacy ? 'text_completion' : 'chat.completion', created, model: body.model, choices: [choice], usage }),
      );
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    for (let i = 0; b.reasoning && i < b.reasoning.length; i += size) {
      const delta = { content: null, reasoning_content: b.reasoning.slice(i, i + size) };
      res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model: body.model, choices: [{ index: 0, delta, finish_reason: null }] })}\n\n`);
    }
    let n = 0;
    for (const c of chunks) {
      if (res.destroyed) return;
      if (b.breakAfterChunks !== undefined && n >= b.breakAfterChunks) {
        res.destroy();
        return;
      }
      if (b.holdAfterChunks !== undefined && n >= b.holdAfterChunks) return;
      const choice = legacy ? { index: 0, text: c, finish_reason: null } : { index: 0, delta: { content: c }, finish_reason: null };
      res.write(`data: ${JSON.stringify({ id, object: legacy ? 'text_completion' : 'chat.completion.chunk', created, model: body.model, choices: [choice] })}\n\n`);
      n++;
      if (b.delayMs) await new Promise((r) => setTimeout(r, b.delayMs));
    }
    for (const [i, c] of calls.entries()) {
      const event = (tool: Record<string, unknown>) =>
        `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model: body.model, choices: [{ index: 0, delta: { tool_calls: [{ index: i, ...tool }] }, finish_reason: null }] })}\n\n`;
      if (res.destroyed) return;
      res.write(event({ id: callIds[i], type: 'function', function: { name: c.name, arguments: '' } }));
      for (let k = 0; k < c.arguments.length; k += size) {
        if (res.destroyed) return;
        res.write(event({ function: { arguments: c.arguments.slice(k, k + size) } }));
        if (b.delayMs) await new Promise((r) => setTimeout(r, b.delayMs));
      }
    }
    if (res.destroyed) return;
    const last = legacy ? { index: 0, text: '', finish_reason: 'stop' } : { index: 0, delta: {}, finish_reason: finishReason };
    res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model: body.model, choices: [last], ...(b.usage === false ? {} : { usage }) })}\n\n`);
    rec.finished = true;
    res.end('data: [DONE]\n\n');
  }

  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    get behaviour() {
      return state.behaviour;
    },
    set behaviour(b: FakeBehaviour) {
      state.behaviour = b;
    },
    waitForAbort(timeoutMs = 5000) {
      const done = requests.find((r) => r.aborted);
      if (done) return Promise.resolve(done);
      return new Promise((resolve, reject) => {
        const t = setTimeout(() => reject(new Error('upstream saw no abort')), timeoutMs);
        abortWaiters.push((r) => {
          clearTimeout(t);
          resolve(r);
        });
      });
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** A deterministic 8-d bag-of-characters embedding, enough for ranking tests. */
function embed(text: string): number[] {
  const v = new Array(8).fill(0) as number[];
  for (const ch of text.toLowerCase()) v[ch.charCodeAt(0) % 8]! += 1;
  const norm = Math.hypot(...v) || 1;
  return v.map((x) => x / norm);
}
