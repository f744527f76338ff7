import { createHash, randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Blobs } from '../../src/files/blobs/blobs.js';

const text = async (r: Readable | undefined): Promise<string | undefined> => {
  if (!r) return undefined;
  const parts: Buffer[] = [];
  for await (const c of r) parts.push(Buffer.from(c as Uint8Array));
  return Buffer.concat(parts).toString('latin1');
};

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/** A stream of `chunks`, then (when `fail` is given) that error instead of an end. */
function source(chunks: readonly Buffer[], fail?: Error): Readable {
  let i = 0;
  return new Readable({
    read() {
      if (i < chunks.length) this.push(chunks[i++]);
      else if (fail) this.destroy(fail);
      else this.push(null);
    },
  });
}

export interface BlobsContractOptions {
  /** A body this long is written in several parts (S3: multipart) where the implementation has parts. */
  readonly largeBytes: number;
  /**
   * Concurrent writes of one key leave one writer's whole bytes (default true). s3rver, the test's S3
   * server, streams a PUT straight into the object's file, so two PUTs of one key can interleave there;
   * S3 itself keeps one whole body. The clause is the server's, not the implementation's.
   */
  readonly atomicSameKeyWrites?: boolean;
}

/** The contract every Blobs implementation meets; each implementation's test calls this. */
export function describeBlobsContract(name: string, create: () => Promise<Blobs>, destroy: (b: Blobs) => Promise<void>, opts: BlobsContractOptions): void {
  describe(`Blobs contract: ${name}`, () => {
    let blobs: Blobs;
    const key = (k: string) => `contract/${Math.random().toString(36).slice(2)}/${k}`;
    beforeAll(async () => {
      blobs = await create();
    });
    afterAll(async () => {
      if (blobs) await destroy(blobs);
    });

    it('puts a stream and gives it back as a stream and as bytes, with its size', async () => {
      const k = key('a.txt');
      expect(await blobs.put(k, source([Buffer.from('hello '), Buffer.from('world')]))).toBe(11);
      expect(await text(await blobs.get(k))).toBe('hello world');
      expect((await blobs.read(k))?.toString()).toBe('hello world');
      const empty = key('empty');
      expect(await blobs.put(empty, source([]))).toBe(0);
      expect((await blobs.read(empty))?.length).toBe(0);
    });

    it('a missing key reads as undefined and deletes without error', async () => {
      const k = key('missing');
      expect(await blobs.get(k)).toBeUndefined();
      expect(await blobs.get(k, { start: 0, end: 3 })).toBeUndefined();
      expect(await blobs.read(k)).toBeUndefined();
      await expect(blobs.delete(k)).resolves.toBeUndefined();
    });

    it('reads byte ranges: inclusive ends, open ends, ends past the last byte, starts past it', async () => {
      const k = key('digits');
      await blobs.put(k, source([Buffer.from('0123456789')]));
      expect(await text(await blobs.get(k, { start: 2, end: 5 }))).toBe('2345');
      expect(await text(await blobs.get(k, { start: 7 }))).toBe('789');
      expect(await text(await blobs.get(k, { start: 0, end: 0 }))).toBe('0');
      expect(await text(await blobs.get(k, { start: 8, end: 99 }))).toBe('89');
      expect(await text(await blobs.get(k, { start: 10 }))).toBe('');
      expect(await text(await blobs.get(k, { start: 50, end: 60 }))).toBe('');
      await expect(blobs.get(k, { start: 5, end: 4 })).rejects.toThrow(RangeError);
      await expect(blobs.get(k, { start: -1 })).rejects.toThrow(RangeError);
    });

    it('overwrites and deletes', async () => {
      const k = key('b.txt');
      await blobs.put(k, source([Buffer.from('first')]));
      await blobs.put(k, source([Buffer.from('second')]));
      expect((await blobs.read(k))?.toString()).toBe('second');
      await blobs.delete(k);
      expect(await blobs.get(k)).toBeUndefined();
      expect(await blobs.read(k)).toBeUndefined();
    });

    it('a body that fails mid-write rejects with its error and leaves nothing readable (nor a partial overwrite)', async () => {
      const k = key('broken');
      const boom = new Error('client went away');
      await expect(blobs.put(k, source([Buffer.from('partial '), Buffer.from('bytes')], boom))).rejects.toBe(boom);
      expect(await blobs.get(k)).toBeUndefined();
      expect(await blobs.read(k)).toBeUndefined();
      const kept = key('kept');
      await blobs.put(kept, source([Buffer.from('whole')]));
      await expect(blobs.put(kept, source([Buffer.from('half')], boom))).rejects.toBe(boom);
      expect((await blobs.read(kept))?.toString()).toBe('whole');
    });

    it('a body that errors before the write gets going rejects the put (no unhandled error)', async () => {
      const k = key('early');
      const body = new Readable({ read() {} });
      const boom = new Error('ended early');
      const put = blobs.put(k, body);
      body.destroy(boom);
      await expect(put).rejects.toBe(boom);
      expect(await blobs.get(k)).toBeUndefined();
    });

    it('writes a large body in parts and reads back every byte, whole and by range', async () => {
      const k = key('large.bin');
      const big = randomBytes(opts.largeBytes);
      const chunks: Buffer[] = [];
      for (let at = 0; at < big.length; at += 256 * 1024) chunks.push(big.subarray(at, at + 256 * 1024));
      expect(await blobs.put(k, source(chunks))).toBe(big.length);
      expect(sha((await blobs.read(k))!)).toBe(sha(big));
      const from = opts.largeBytes - 1000;
      const tail = await blobs.get(k, { start: from });
      const got: Buffer[] = [];
      for await (const c of tail!) got.push(Buffer.from(c as Uint8Array));
      expect(Buffer.concat(got).equals(big.subarray(from))).toBe(true);
    });

    it('a large body that fails after its first parts leaves nothing readable', async () => {
      const k = key('large-broken.bin');
      const part = randomBytes(256 * 1024);
      const chunks = Array.from({ length: Math.ceil((opts.largeBytes * 0.75) / part.length) }, () => part);
      const boom = new Error('upload cut off');
      await expect(blobs.put(k, source(chunks, boom))).rejects.toBe(boom);
      expect(await blobs.get(k)).toBeUndefined();
    });

    it('concurrent writers: different keys all land; one key ends as exactly one writer\'s bytes', async () => {
      const keys = Array.from({ length: 6 }, (_, i) => key(`c${i}`));
      await Promise.all(keys.map((k, i) => blobs.put(k, source([Buffer.from(`writer ${i} `), Buffer.from('done')]))));
      for (const [i, k] of keys.entries()) expect((await blobs.read(k))?.toString()).toBe(`writer ${i} done`);
      if (opts.atomicSameKeyWrites === false) return;
      const shared = key('shared');
      const bodies = Array.from({ length: 4 }, (_, i) => Buffer.alloc(64 * 1024, 65 + i));
      await Promise.all(bodies.map((b) => blobs.put(shared, source([b.subarray(0, 32 * 1024), b.subarray(32 * 1024)]))));
      const final = (await blobs.read(shared))!;
      expect(bodies.some((b) => b.equals(final))).toBe(true);
    });
  });
}
