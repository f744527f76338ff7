import path from 'node:path';
import { ConfigError } from '../../config.js';
import type { Blobs } from './blobs.js';
import { DiskBlobs } from './disk-blobs.js';
import type { StorageConfig } from './storage-config.js';

/** The Blobs `STORAGE_TYPE` names, checked before the server starts; `close` releases its connections. */
export async function openBlobs(storage: StorageConfig, dataDir: string): Promise<{ blobs: Blobs; close(): Promise<void> }> {
  if (storage.type === 'local') return { blobs: new DiskBlobs(path.join(dataDir, 'files')), close: async () => undefined };
  // the AWS SDK is imported only by servers that store in S3
  const { S3Blobs } = await import('./s3-blobs.js');
  const s3 = new S3Blobs(storage);
  try {
    await s3.check();
  } catch (err) {
    s3.close();
    throw new ConfigError((err as Error).message);
  }
  return { blobs: s3, close: async () => s3.close() };
}
