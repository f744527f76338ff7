import { boolSetting, type SettingGet } from '../../infra/setting-values.js';
import { ConfigError } from '../../config-error.js';

/**
 * Where uploaded files are kept, under Dify's setting names. `STORAGE_TYPE=local` (default) keeps
 * them under `<DOVETAIL_DATA_DIR>/files`; `opendal` with `OPENDAL_SCHEME=fs` (Dify's default) means
 * the same. `STORAGE_TYPE=s3` keeps them in an S3 bucket (AWS or any S3-compatible server).
 */
export type StorageConfig = { readonly type: 'local' } | S3StorageConfig;

export interface S3StorageConfig {
  readonly type: 's3';
  /** `S3_ENDPOINT`: an http(s) URL of an S3-compatible server; unset = AWS for `S3_REGION`. */
  readonly endpoint: string | undefined;
  /** `S3_BUCKET_NAME` (required). */
  readonly bucket: string;
  /** `S3_REGION`, default `us-east-1` (as Dify). */
  readonly region: string;
  /** `S3_ADDRESS_STYLE`: `path` (`endpoint/bucket/key`), `virtual` (`bucket.endpoint/key`) or `auto` (default, as Dify: the SDK's choice). */
  readonly addressStyle: 'auto' | 'path' | 'virtual';
  /** `S3_USE_AWS_MANAGED_IAM` (default false): the SDK's default credential chain instead of the keys. */
  readonly useAwsManagedIam: boolean;
  /** `S3_ACCESS_KEY` / `S3_SECRET_KEY`; both required unless `useAwsManagedIam`. */
  readonly accessKey: string | undefined;
  readonly secretKey: string | undefined;
  /** Bytes of one multipart part (`S3_MULTIPART_PART_SIZE`, MB, default 8, at least S3's 5). Smaller files go in one PutObject. */
  readonly partBytes: number;
  /** Parts of one upload sent at once (`S3_MULTIPART_CONCURRENCY`, default 4); an upload buffers at most this many parts. */
  readonly partConcurrency: number;
  /** A connection to S3 must open within this many ms (`S3_CONNECT_TIMEOUT`, seconds, default 10); then the request fails. */
  readonly connectTimeoutMs: number;
}

type Get = SettingGet;

const MB = 1024 * 1024;

function int(get: Get, key: string, fallback: number, min: number): number {
  const raw = get(key);
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw.trim())) throw new ConfigError(`${key} must be an integer, got "${raw}"`);
  const n = Number(raw);
  if (n < min) throw new ConfigError(`${key} must be at least ${min}, got ${n}`);
  return n;
}

/** S3's bucket naming rules (the parts a typo breaks): 3-63 of a-z 0-9 . -, starting and ending with a letter or digit. */
const BUCKET_NAME = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

/** Reads the storage settings; throws an Error naming the first bad or missing setting. */
export function readStorageConfig(get: Get): StorageConfig {
  const type = (get('STORAGE_TYPE') ?? 'local').trim().toLowerCase();
  if (type === 'local') return { type: 'local' };
  if (type === 'opendal') {
    const scheme = get('OPENDAL_SCHEME') ?? 'fs';
    if (scheme !== 'fs') throw new ConfigError(`OPENDAL_SCHEME must be fs (files on local disk) with STORAGE_TYPE=opendal, got "${scheme}"; use STORAGE_TYPE=s3 for S3`);
    return { type: 'local' };
  }
  if (type !== 's3') throw new ConfigError(`STORAGE_TYPE must be local, opendal or s3, got "${type}"`);
  const bucket = get('S3_BUCKET_NAME');
  if (bucket === undefined) throw new ConfigError('S3_BUCKET_NAME is required with STORAGE_TYPE=s3');
  if (!BUCKET_NAME.test(bucket)) throw new ConfigError(`S3_BUCKET_NAME must be a valid bucket name (3-63 characters: a-z, 0-9, ".", "-"), got "${bucket}"`);
  const endpoint = get('S3_ENDPOINT')?.replace(/\/+$/, '');
  if (endpoint !== undefined) {
    let url: URL | undefined;
    try {
      url = new URL(endpoint);
    } catch {
      url = undefined;
    }
    if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) throw new ConfigError(`S3_ENDPOINT must be an http(s) URL, got "${endpoint}"`);
  }
  const style = (get('S3_ADDRESS_STYLE') ?? 'auto').trim().toLowerCase();
  if (style !== 'auto' && style !== 'path' && style !== 'virtual') throw new ConfigError(`S3_ADDRESS_STYLE must be auto, path or virtual, got "${style}"`);
  const useAwsManagedIam = boolSetting(get, 'S3_USE_AWS_MANAGED_IAM');
  const accessKey = get('S3_ACCESS_KEY');
  const secretKey = get('S3_SECRET_KEY');
  if (!useAwsManagedIam) {
    if (accessKey === undefined) throw new ConfigError('S3_ACCESS_KEY is required with STORAGE_TYPE=s3 (or set S3_USE_AWS_MANAGED_IAM=true for the default credential chain)');
    if (secretKey === undefined) throw new ConfigError('S3_SECRET_KEY is required with STORAGE_TYPE=s3 (or set S3_USE_AWS_MANAGED_IAM=true for the default credential chain)');
  }
  return {
    type: 's3',
    endpoint,
    bucket,
    region: get('S3_REGION') ?? 'us-east-1',
    addressStyle: style,
    useAwsManagedIam,
    accessKey,
    secretKey,
    partBytes: int(get, 'S3_MULTIPART_PART_SIZE', 8, 5) * MB,
    partConcurrency: int(get, 'S3_MULTIPART_CONCURRENCY', 4, 1),
    connectTimeoutMs: int(get, 'S3_CONNECT_TIMEOUT', 10, 1) * 1000,
  };
}
