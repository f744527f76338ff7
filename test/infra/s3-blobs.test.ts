import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { S3Blobs } from '../../src/files/blobs/s3-blobs.js';
import { openBlobs } from '../../src/files/blobs/open-blobs.js';
import { readStorageConfig, type S3StorageConfig } from '../../src/files/blobs/storage-config.js';
import { startS3, type S3TestServer } from '../helpers/s3-server.js';
import { describeBlobsContract } from './blobs.contract.js';
import { freePort } from '../helpers/server.js';

/** S3Blobs against a real S3-protocol server (s3rver) started here. */

let s3: S3TestServer;
beforeAll(async () => {
  s3 = await startS3();
});
afterAll(async () => s3?.close());

const settings = (extra: Record<string, string> = {}) => {
  const env: Record<string, string> = { ...s3.env(), S3_MULTIPART_PART_SIZE: '5', ...extra };
  return readStorageConfig((k) => env[k]) as S3StorageConfig;
};

describeBlobsContract(
  's3',
  async () => new S3Blobs(settings()),
  async (b) => (b as S3Blobs).close(),
  // Three 5 MB parts (S3's smallest part size) and a bit.
  { largeBytes: 12 * 1024 * 1024, atomicSameKeyWrites: false },
);

describe('S3 storage settings', () => {
  const boot = (env: Record<string, string>) => () => loadConfig({ DOVETAIL_CONFIG: undefined as unknown as string, ...env });

  it('STORAGE_TYPE defaults to local disk; opendal with the fs scheme is local disk too', () => {
    expect(loadConfig({}).storage).toEqual({ type: 'local' });
    expect(loadConfig({ STORAGE_TYPE: 'opendal', OPENDAL_SCHEME: 'fs' }).storage).toEqual({ type: 'local' });
  });

  it('bad or missing settings fail start-up naming the setting', () => {
    const base = { STORAGE_TYPE: 's3', S3_BUCKET_NAME: 'files', S3_ACCESS_KEY: 'a', S3_SECRET_KEY: 'b' };
    const cases: [Record<string, string>, RegExp][] = [
      [{ STORAGE_TYPE: 'azure-blob' }, /^STORAGE_TYPE must be local, opendal or s3, got "azure-blob"/],
      [{ STORAGE_TYPE: 'opendal', OPENDAL_SCHEME: 's3' }, /^OPENDAL_SCHEME must be fs/],
      [{ STORAGE_TYPE: 's3' }, /^S3_BUCKET_NAME is required/],
      [{ ...base, S3_BUCKET_NAME: 'No_Such' }, /^S3_BUCKET_NAME must be a valid bucket name/],
      [{ ...base, S3_ACCESS_KEY: '' }, /^S3_ACCESS_KEY is required/],
      [{ ...base, S3_SECRET_KEY: '' }, /^S3_SECRET_KEY is required/],
      [{ ...base, S3_ENDPOINT: 'minio:9000' }, /^S3_ENDPOINT must be an http\(s\) URL/],
      [{ ...base, S3_ADDRESS_STYLE: 'dns' }, /^S3_ADDRESS_STYLE must be auto, path or virtual/],
      [{ ...base, S3_USE_AWS_MANAGED_IAM: 'maybe' }, /^S3_USE_AWS_MANAGED_IAM must be true or false/],
      [{ ...base, S3_MULTIPART_PART_SIZE: '4' }, /^S3_MULTIPART_PART_SIZE must be at least 5, got 4/],
      [{ ...base, S3_MULTIPART_CONCURRENCY: '0' }, /^S3_MULTIPART_CONCURRENCY must be at least 1/],
      [{ ...base, S3_CONNECT_TIMEOUT: 'soon' }, /^S3_CONNECT_TIMEOUT must be an integer/],
    ];
    for (const [env, message] of cases) {
      expect(boot(env)).toThrow(ConfigError);
      expect(boot(env)).toThrow(message);
    }
    // The default credential chain needs no keys.
    expect(loadConfig({ STORAGE_TYPE: 's3', S3_BUCKET_NAME: 'files', S3_USE_AWS_MANAGED_IAM: 'true' }).storage).toMatchObject({ type: 's3', useAwsManagedIam: true, region: 'us-east-1', addressStyle: 'auto' });
  });

  it('start-up checks the bucket: a missing bucket names S3_BUCKET_NAME, a silent endpoint S3_ENDPOINT', async () => {
    await expect(openBlobs(settings({ S3_BUCKET_NAME: 'no-such-bucket' }), '.')).rejects.toThrow(/^S3_BUCKET_NAME: bucket "no-such-bucket" does not exist/);
    const closed = `http://127.0.0.1:${await freePort()}`;
    await expect(openBlobs(settings({ S3_ENDPOINT: closed }), '.')).rejects.toThrow(new RegExp(`^S3_ENDPOINT ${closed}: the S3 service did not answer`));
    const ok = await openBlobs(settings(), '.');
    expect(ok.blobs).toBeInstanceOf(S3Blobs);
    await ok.close();
  });
});
