import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { DeleteObjectCommand, GetObjectCommand, HeadBucketCommand, S3Client, S3ServiceException, type GetObjectCommandOutput } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { checkRange, type Blobs, type ByteRange } from './blobs.js';
import type { S3StorageConfig } from './storage-config.js';

/** Builds the S3 client the settings describe (keys, or the SDK's default credential chain). */
export function s3Client(c: S3StorageConfig): S3Client {
  return new S3Client({
    region: c.region,
    ...(c.endpoint ? { endpoint: c.endpoint } : {}),
    forcePathStyle: c.addressStyle === 'path',
    requestHandler: { connectionTimeout: c.connectTimeoutMs },
    ...(c.useAwsManagedIam ? {} : { credentials: { accessKeyId: c.accessKey!, secretAccessKey: c.secretKey! } }),
  });
}

function status(err: unknown): number | undefined {
  return err instanceof S3ServiceException ? err.$metadata.httpStatusCode : undefined;
}

/**
 * The bytes of `range` out of a body that starts at byte `from` and may run past the range's end,
 * reading no further than that end.
 */
function sliced(body: Readable, from: number, range: ByteRange): Readable {
  let at = from;
  const end = range.end ?? Number.MAX_SAFE_INTEGER;
  const cut = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      const lo = Math.max(range.start - at, 0);
      const hi = Math.min(end + 1 - at, chunk.length);
      at += chunk.length;
      if (hi > lo) this.push(chunk.subarray(lo, hi));
      if (at > end) {
        this.push(null);
        body.destroy();
      }
      cb();
    },
  });
  body.on('error', (err) => cut.destroy(err));
  return body.pipe(cut);
}

/**
 * Blobs as objects of one S3 bucket. A write is one PutObject, or for a body longer than one part a
 * multipart upload (`@aws-sdk/lib-storage`) that is completed only when the body ended cleanly and
 * aborted otherwise: S3 shows an object only once PutObject or CompleteMultipartUpload succeeded,
 * so a failed write leaves nothing readable. Reads stream the object's body as it arrives.
 */
export class S3Blobs implements Blobs {
  readonly #client: S3Client;
  readonly #config: S3StorageConfig;

  constructor(config: S3StorageConfig, client: S3Client = s3Client(config)) {
    this.#config = config;
    this.#client = client;
  }

  /**
   * Start-up check that the bucket answers: a missing bucket names `S3_BUCKET_NAME`, an endpoint
   * that does not answer names `S3_ENDPOINT`. Refused credentials name the keys.
   */
  async check(): Promise<void> {
    const c = this.#config;
    try {
      await this.#client.send(new HeadBucketCommand({ Bucket: c.bucket }));
    } catch (err) {
      const code = status(err);
      if (code === 404) throw new Error(`S3_BUCKET_NAME: bucket "${c.bucket}" does not exist at ${c.endpoint ?? `AWS ${c.region}`}`);
      if (code === 403 || code === 401) {
        const who = c.useAwsManagedIam ? 'the default AWS credential chain (S3_USE_AWS_MANAGED_IAM=true)' : 'S3_ACCESS_KEY / S3_SECRET_KEY';
        throw new Error(`S3_BUCKET_NAME: access to bucket "${c.bucket}" was refused for ${who} (HTTP ${code})`);
      }
      if (code !== undefined) throw new Error(`S3_BUCKET_NAME: bucket "${c.bucket}" answered HTTP ${code}: ${(err as Error).message}`);
      const where = c.endpoint ? `S3_ENDPOINT ${c.endpoint}` : `S3_REGION ${c.region}`;
      throw new Error(`${where}: the S3 service did not answer: ${(err as Error).message}`);
    }
  }

  async put(key: string, body: Readable): Promise<number> {
    let bytes = 0;
    const counter = new Transform({
      transform(chunk: Buffer, _enc, cb) {
        bytes += chunk.length;
        cb(null, chunk);
      },
    });
    // The pipeline owns `body`'s errors from here on (before any await): an error destroys the
    // counter, the upload's read of it fails, and the multipart upload is aborted.
    let bodyError: unknown;
    const fed = pipeline(body, counter).catch((err: unknown) => {
      bodyError ??= err;
    });
    const upload = new Upload({
      client: this.#client,
      params: { Bucket: this.#config.bucket, Key: key, Body: counter },
      partSize: this.#config.partBytes,
      queueSize: this.#config.partConcurrency,
      leavePartsOnError: false,
    });
    try {
      await upload.done();
    } catch (err) {
      counter.destroy();
      await fed;
      throw bodyError ?? err;
    }
    await fed;
    if (bodyError !== undefined) throw bodyError;
    return bytes;
  }

  async #object(key: string, range?: ByteRange): Promise<GetObjectCommandOutput | 'empty' | undefined> {
    if (range) checkRange(range);
    try {
      return await this.#client.send(
        new GetObjectCommand({ Bucket: this.#config.bucket, Key: key, ...(range ? { Range: `bytes=${range.start}-${range.end ?? ''}` } : {}) }),
      );
    } catch (err) {
      const code = status(err);
      if (code === 404) return undefined;
      // A range starting past the last byte (or any range of an empty object).
      if (code === 416) return 'empty';
      throw err;
    }
  }

  async get(key: string, range?: ByteRange): Promise<Readable | undefined> {
    const out = await this.#object(key, range);
    if (out === undefined) return undefined;
    if (out === 'empty' || !out.Body) return Readable.from([]);
    const body = out.Body as Readable;
    if (!range) return body;
    // HTTP lets a server ignore Range and send the whole object (200 without Content-Range), and
    // some S3-compatible servers answer a wider range than asked (s3rver reads `bytes=0-0` as
    // `bytes=0-`): what the answer holds beyond the range is cut here.
    const answered = /^bytes (\d+)-(\d+)\//.exec(out.ContentRange ?? '');
    const from = answered ? Number(answered[1]) : 0;
    if (answered && from === range.start && (range.end === undefined || Number(answered[2]) <= range.end)) return body;
    if (from > range.start) throw new Error(`S3 answered bytes from ${from} for a range starting at ${range.start}`);
    return sliced(body, from, range);
  }

  async read(key: string): Promise<Buffer | undefined> {
    const out = await this.#object(key);
    if (out === undefined) return undefined;
    if (out === 'empty' || !out.Body) return Buffer.alloc(0);
    return Buffer.from(await out.Body.transformToByteArray());
  }

  async delete(key: string): Promise<void> {
    await this.#client.send(new DeleteObjectCommand({ Bucket: this.#config.bucket, Key: key }));
  }

  close(): void {
    this.#client.destroy();
  }
}
