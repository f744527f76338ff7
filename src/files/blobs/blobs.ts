import type { Readable } from 'node:stream';

/** Bytes `start` to `end` of a blob, both inclusive (as HTTP `Range: bytes=start-end`); no `end` = to the last byte. */
export interface ByteRange {
  readonly start: number;
  readonly end?: number;
}

/** Throws a RangeError for a range no reader can serve (a negative or fractional offset, `end` before `start`). */
export function checkRange(range: ByteRange): void {
  const ok = Number.isSafeInteger(range.start) && range.start >= 0 && (range.end === undefined || (Number.isSafeInteger(range.end) && range.end >= range.start));
  if (!ok) throw new RangeError(`invalid byte range ${range.start}-${range.end ?? ''}`);
}

/** Where file bytes live (local disk or an S3 bucket). Keys are opaque relative paths. */
export interface Blobs {
  /**
   * Streams `body` into `key`. The blob becomes visible only when the stream ends cleanly; on any
   * error nothing is left behind. Resolves to the number of bytes written. Implementations listen
   * for `body`'s errors before their first `await`: an error emitted at any time rejects the call
   * (the caller hands over a stream nobody else listens to).
   */
  put(key: string, body: Readable): Promise<number>;
  /**
   * A read stream, or `undefined` when the key does not exist. With `range`, only those bytes: an
   * `end` past the last byte reads to the last byte, a `start` at or past it reads nothing; an `end`
   * before `start` or a negative offset is a RangeError (see `checkRange`).
   */
  get(key: string, range?: ByteRange): Promise<Readable | undefined>;
  /** The whole blob in memory (callers bound the size themselves). */
  read(key: string): Promise<Buffer | undefined>;
  /** Removes the blob; a missing key is not an error. */
  delete(key: string): Promise<void>;
}
