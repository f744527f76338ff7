import { createReadStream, createWriteStream, type WriteStream } from 'node:fs';
import { mkdir, readFile, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { newId } from '../../infra/ids.js';
import { checkRange, type Blobs, type ByteRange } from './blobs.js';

/** Blobs as files under one directory; writes go to a temp file renamed into place. */
export class DiskBlobs implements Blobs {
  readonly #root: string;

  constructor(root: string) {
    this.#root = path.resolve(root);
  }

  #path(key: string): string {
    const p = path.resolve(this.#root, key);
    if (!p.startsWith(this.#root + path.sep)) throw new Error(`blob key escapes the store: ${key}`);
    return p;
  }

  async put(key: string, body: Readable): Promise<number> {
    const final = this.#path(key);
    const tmp = path.join(this.#root, '.tmp', `${newId()}.part`);
    // Own the stream before the first await: an error it emits while the directories are made
    // (a client whose multipart body ends early) rejects this call instead of reaching the
    // process as an unhandled 'error' event.
    let early: unknown;
    const onEarly = (err: unknown) => (early ??= err);
    body.on('error', onEarly);
    let out: WriteStream | undefined;
    try {
      await mkdir(path.dirname(final), { recursive: true });
      await mkdir(path.dirname(tmp), { recursive: true });
      if (early !== undefined) throw early;
      out = createWriteStream(tmp);
      await pipeline(body, out);
      await rename(tmp, final);
    } catch (err) {
      // pipeline rejects as soon as the body fails, while the temp file may still be opening:
      // wait for the write stream to close, or the file appears after the rm below.
      if (out && !out.closed) await new Promise<void>((done) => out!.once('close', () => done()));
      await rm(tmp, { force: true });
      throw err;
    } finally {
      body.off('error', onEarly);
    }
    return (await stat(final)).size;
  }

  async get(key: string, range?: ByteRange): Promise<Readable | undefined> {
    if (range) checkRange(range);
    const p = this.#path(key);
    let size: number;
    try {
      size = (await stat(p)).size;
    } catch {
      return undefined;
    }
    if (!range) return createReadStream(p);
    const end = Math.min(range.end ?? size - 1, size - 1);
    if (range.start > end) return Readable.from([]);
    return createReadStream(p, { start: range.start, end });
  }

  async read(key: string): Promise<Buffer | undefined> {
    try {
      return await readFile(this.#path(key));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
  }

  async delete(key: string): Promise<void> {
    await rm(this.#path(key), { force: true });
  }
}
