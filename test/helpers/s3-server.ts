import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import S3rver from 's3rver';

export interface S3TestServer {
  /** `http://127.0.0.1:port`, for `S3_ENDPOINT`. */
  readonly endpoint: string;
  /** The settings of a server storing in `bucket` (created at start) with path-style addresses. */
  env(bucket?: string): Record<string, string>;
  close(): Promise<void>;
}

export const S3_TEST_BUCKET = 'dovetail-test';
/** s3rver's fixed credentials (it checks the signature with them). */
export const S3_TEST_KEY = 'S3RVER';

/** A real S3-protocol server (s3rver) on a free loopback port, with its objects in a temp directory. */
export async function startS3(buckets: readonly string[] = [S3_TEST_BUCKET]): Promise<S3TestServer> {
  const directory = mkdtempSync(path.join(os.tmpdir(), 'dovetail-s3-'));
  const server = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory, configureBuckets: buckets.map((name) => ({ name, configs: [] })) });
  const { port } = await server.run();
  const endpoint = `http://127.0.0.1:${port}`;
  return {
    endpoint,
    env: (bucket = S3_TEST_BUCKET) => ({
      STORAGE_TYPE: 's3',
      S3_ENDPOINT: endpoint,
      S3_BUCKET_NAME: bucket,
      S3_ACCESS_KEY: S3_TEST_KEY,
      S3_SECRET_KEY: S3_TEST_KEY,
      S3_REGION: 'us-east-1',
      S3_ADDRESS_STYLE: 'path',
    }),
    async close() {
      await server.close();
      rmSync(directory, { recursive: true, force: true });
    },
  };
}
