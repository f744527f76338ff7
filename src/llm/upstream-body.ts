import zlib from 'node:zlib';

/** How the body reaches back into the HTTP request that feeds it. */
export interface BodyInput {
  /** Stop / restart the parser (backpressure). No-ops once the request has ended. */
  pause(): void;
  resume(): void;
  /** The reader gave up or the body cannot be decoded: end the request if it is still running. */
  abort(reason: Error): void;
}

/** What a body is read through: the next chunk or the end, or giving up. A web stream's reader is one. */
export interface ByteSource {
  read(): Promise<ReadableStreamReadResult<Uint8Array>>;
  cancel(reason?: unknown): Promise<void>;
}

/** An upstream answer's body: read directly (`read`), or as a web stream for a `Response`. */
export interface ResponseBody extends ByteSource {
  /** The same body as a web stream, made on first use; read one way or the other, not both. */
  readonly stream: ReadableStream<Uint8Array>;
}

/** Bytes a body holds unread before the parser is paused. */
const HIGH_WATER_MARK = 1 << 20;

const DONE: ReadableStreamReadDoneResult<Uint8Array> = { done: true, value: undefined };

/**
 * A response body fed by the HTTP parser. Everything the parser found in one network read becomes
 * one chunk (gathered until the microtask after the read); a `content-encoding` of gzip, deflate or
 * br is inflated on the way. Backpressure runs both ways: over `HIGH_WATER_MARK` unread bytes the
 * parser (and the inflater) pause, a read resumes them. The body ends exactly once — ended, failed
 * or cancelled — and `onFinished` is then called; a failure is read after the bytes that came before it.
 *
 * It is read through `read()` (no web stream is made: a `ReadableStream` costs a streaming answer
 * more than the rest of its body handling: 21 µs to make on Node 20, and a promise chain per read —
 * `npm run bench upstream-body`); `stream` makes one for callers that need a `Response`.
 */
export class UpstreamBody implements ResponseBody {
  #open = true;
  /** Chunks not read yet, and their bytes. */
  #queue: Uint8Array[] = [];
  #queued = 0;
  /** A read waiting for the next chunk. */
  #waiter: { resolve: (r: ReadableStreamReadResult<Uint8Array>) => void; reject: (err: unknown) => void } | undefined;
  /** The input has ended (`end`) or the reader cancelled: reads past the queue are done. */
  #ended = false;
  /** The input failed: reads past the queue reject with it. */
  #failure: Error | undefined;
  #parts: Buffer[] = [];
  #flushQueued = false;
  #unzip: zlib.Inflate | zlib.Gunzip | zlib.BrotliDecompress | undefined;
  #stream: ReadableStream<Uint8Array> | undefined;
  readonly #input: BodyInput;
  readonly #onFinished: () => void;

  constructor(input: BodyInput, onFinished: () => void) {
    this.#input = input;
    this.#onFinished = onFinished;
  }

  /** Whether bytes are still taken (the body has not ended, failed or been cancelled). */
  get open(): boolean {
    return this.#open;
  }

  /** Sets up inflation for the response's `content-encoding` (identity: none). */
  decode(encoding: string | string[] | undefined): void {
    const enc = String(encoding ?? '').toLowerCase();
    const unzip = enc === 'gzip' || enc === 'x-gzip' ? zlib.createGunzip() : enc === 'deflate' ? zlib.createInflate() : enc === 'br' ? zlib.createBrotliDecompress() : undefined;
    if (!unzip) return;
    this.#unzip = unzip;
    unzip.on('data', (c: Buffer) => this.#gather(c));
    unzip.on('drain', () => {
      if (this.#wantsMore()) this.#input.resume();
    });
    unzip.once('end', () => this.#close());
    unzip.once('error', (err) => {
      this.error(new Error(`the upstream body could not be decoded (${enc}): ${err.message}`));
      this.#input.abort(err);
    });
  }

  /** Bytes from the parser. */
  write(chunk: Buffer): void {
    if (!this.#open) return;
    if (!this.#unzip) return this.#gather(chunk);
    if (!this.#unzip.write(chunk)) this.#input.pause();
  }

  /** The parser reached the end of the body. */
  end(): void {
    if (!this.#open) return;
    if (this.#unzip) this.#unzip.end();
    else this.#close();
  }

  /** The request failed or was aborted: what arrived is read first, then the error. */
  error(err: Error): void {
    if (!this.#open) return;
    this.#flush();
    this.#failure = err;
    this.#finished();
    this.#settleWaiter();
  }

  read(): Promise<ReadableStreamReadResult<Uint8Array>> {
    const chunk = this.#queue.shift();
    if (chunk) {
      this.#queued -= chunk.byteLength;
      if (this.#open && this.#wantsMore()) this.#resumeInput();
      return Promise.resolve({ done: false, value: chunk });
    }
    if (this.#failure) return Promise.reject(this.#failure);
    if (this.#ended) return Promise.resolve(DONE);
    if (this.#waiter) return Promise.reject(new TypeError('the body is already being read'));
    this.#resumeInput();
    return new Promise((resolve, reject) => (this.#waiter = { resolve, reject }));
  }

  /** The reader gives up: the request ends if it still runs; a waiting read is done. */
  cancel(): Promise<void> {
    this.#queue = [];
    this.#queued = 0;
    this.#ended = true;
    this.#failure = undefined;
    if (this.#open) {
      this.#finished();
      this.#input.abort(new DOMException('The body was cancelled', 'AbortError'));
    }
    this.#settleWaiter();
    return Promise.resolve();
  }

  get stream(): ReadableStream<Uint8Array> {
    return (this.#stream ??= new ReadableStream<Uint8Array>(
      {
        pull: async (c) => {
          const r = await this.read();
          if (r.done) c.close();
          else c.enqueue(r.value);
        },
        cancel: () => this.cancel(),
      },
      { highWaterMark: 0 },
    ));
  }

  #gather(chunk: Buffer): void {
    if (!this.#open) return;
    this.#parts.push(chunk);
    if (this.#flushQueued) return;
    this.#flushQueued = true;
    queueMicrotask(() => this.#flush());
  }

  #flush(): void {
    this.#flushQueued = false;
    if (!this.#open || this.#parts.length === 0) return;
    const parts = this.#parts;
    this.#parts = [];
    const chunk = parts.length === 1 ? parts[0]! : Buffer.concat(parts);
    const waiter = this.#waiter;
    if (waiter) {
      this.#waiter = undefined;
      waiter.resolve({ done: false, value: chunk });
      return;
    }
    this.#queue.push(chunk);
    this.#queued += chunk.byteLength;
    if (!this.#wantsMore()) {
      this.#input.pause();
      this.#unzip?.pause();
    }
  }

  /** The parser and the inflater go on (a read wants bytes). */
  #resumeInput(): void {
    this.#input.resume();
    this.#unzip?.resume();
  }

  #wantsMore(): boolean {
    return this.#queued < HIGH_WATER_MARK;
  }

  #close(): void {
    if (!this.#open) return;
    this.#flush();
    this.#ended = true;
    this.#finished();
    this.#settleWaiter();
  }

  /** A waiting read learns the end or the failure (the queue is empty when a read waits). */
  #settleWaiter(): void {
    const waiter = this.#waiter;
    if (!waiter || this.#queue.length > 0) return;
    this.#waiter = undefined;
    if (this.#failure) waiter.reject(this.#failure);
    else waiter.resolve(DONE);
  }

  #finished(): void {
    this.#open = false;
    this.#parts = [];
    this.#unzip?.destroy();
    this.#onFinished();
  }
}
