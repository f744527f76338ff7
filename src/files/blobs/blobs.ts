import type { Readable } from 'node:stream';

/** Where file bytes live (disk now, S3-compatible later). Keys are opaque relative paths. */
export interface Blobs {
  /**
   * Streams `body` into `key`. The blob becomes visible only when the stream ends cleanly; on any
   * error nothing is left behind. Resolves to the number of bytes written. Implementations listen
   * for `body`'s errors before their first `await`: an error emitted at any time rejects the call
   * (the caller hands over a stream nobody else listens to).
   */
  put(key: string, body: Readable): Promise<number>;
  /** A read stream, or `undefined` when the key does not exist. */
  get(key: string): Promise<Readable | undefined>;
  /** The whole blob in memory (callers bound the size themselves). */
  read(key: string): Promise<Buffer | undefined>;
  /** Removes the blob; a missing key is not an error. */
  delete(key: string): Promise<void>;
}
