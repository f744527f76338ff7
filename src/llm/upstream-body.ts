import zlib from 'node:zlib';

/** How the body reaches back into the HTTP request that feeds it. */
export interface BodyInput {
  /** Stop / restart the parser (backpressure). No-ops once the request has ended. */
  pause(): void;
  resume(): void;
  /** The reader gave up or the body cannot be decoded: end the request if it is still running. */
  abort(reason: Error): void;
}

/**
 * A response body as a web stream fed by the HTTP parser. Everything the parser found in one
 * network read is enqueued as one chunk (gathered until the microtask after the read); a
 * `content-encoding` of gzip, deflate or br is inflated on the way. Backpressure runs both ways:
 * a full stream pauses the parser (and the inflater), a read resumes them. The stream ends exactly
 * once — closed, errored or cancelled — and `onFinished` is then called.
 */
export class UpstreamBody {
  readonly stream: ReadableStream<Uint8Array>;
  #ctl!: ReadableStreamDefaultController<Uint8Array>;
  #open = true;
  #parts: Buffer[] = [];
  #flushQueued = false;
  #unzip: zlib.Inflate | zlib.Gunzip | zlib.BrotliDecompress | undefined;
  readonly #input: BodyInput;
  readonly #onFinished: () => void;

  constructor(input: BodyInput, onFinished: () => void) {
    this.#input = input;
    this.#onFinished = onFinished;
    this.stream = new ReadableStream<Uint8Array>(
      {
        start: (c) => {
          this.#ctl = c;
        },
        pull: () => {
          this.#input.resume();
          this.#unzip?.resume();
        },
        cancel: () => {
          if (!this.#open) return;
          this.#finished();
          this.#input.abort(new DOMException('The body was cancelled', 'AbortError'));
        },
      },
      { highWaterMark: 1 << 20, size: (chunk) => chunk.byteLength },
    );
  }

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

  /** The request failed or was aborted: what arrived is passed on, then the error. */
  error(err: Error): void {
    if (!this.#open) return;
    this.#flush();
    this.#ctl.error(err);
    this.#finished();
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
    this.#ctl.enqueue(parts.length === 1 ? parts[0]! : Buffer.concat(parts));
    if (!this.#wantsMore()) {
      this.#input.pause();
      this.#unzip?.pause();
    }
  }

  #wantsMore(): boolean {
    return (this.#ctl.desiredSize ?? 0) > 0;
  }

  #close(): void {
    if (!this.#open) return;
    this.#flush();
    this.#ctl.close();
    this.#finished();
  }

  #finished(): void {
    this.#open = false;
    this.#parts = [];
    this.#unzip?.destroy();
    this.#onFinished();
  }
}
