import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { FileUrlConfig } from '../config.js';
import type { Clock } from '../infra/clock.js';
import { invalidParam, notFound } from '../infra/errors.js';
import { FILE_URL_KEY, type ServerKeys } from '../infra/server-keys.js';
import type { Blobs } from './blobs/blobs.js';
import { openPreview, type FilePreview } from './file-preview.js';
import type { UploadService } from './upload-service.js';
import { isUuid } from '../infra/ids.js';


/** The query of a signed URL, as received. */
export interface SignedQuery {
  readonly timestamp?: string;
  readonly nonce?: string;
  readonly sign?: string;
  readonly as_attachment?: string;
}

/**
 * Signed, key-less file URLs, as Dify's `get_signed_file_url`:
 * `{FILES_URL}/files/{id}/file-preview?timestamp=…&nonce=…&sign=…[&as_attachment=true]`, the sign
 * being HMAC-SHA256 of `file-preview|{id}|{timestamp}|{nonce}` (URL-safe base64), good for
 * `FILES_ACCESS_TIMEOUT` seconds. The key is `SECRET_KEY`, or one made on first use and kept in
 * the database, so every instance of a deployment signs and checks alike.
 */
export class FileUrls {
  readonly #keys: ServerKeys;
  readonly #config: FileUrlConfig;
  readonly #clock: Clock;
  readonly #uploads: UploadService;
  readonly #blobs: Blobs;

  constructor(deps: { keys: ServerKeys; config: FileUrlConfig; clock: Clock; uploads: UploadService; blobs: Blobs }) {
    this.#keys = deps.keys;
    this.#config = deps.config;
    this.#clock = deps.clock;
    this.#uploads = deps.uploads;
    this.#blobs = deps.blobs;
  }

  /** A URL for upload `fileId`; `origin` (the request's) stands in when `FILES_URL` is not set. */
  async sign(fileId: string, origin: string, asAttachment: boolean): Promise<string> {
    const timestamp = String(Math.floor(this.#clock.now() / 1000));
    const nonce = randomBytes(16).toString('hex');
    const sign = await this.#signature(fileId, timestamp, nonce);
    const query = new URLSearchParams({ timestamp, nonce, sign, ...(asAttachment ? { as_attachment: 'true' } : {}) });
    return `${this.#config.baseUrl ?? origin}/files/${fileId}/file-preview?${query}`;
  }

  /**
   * The file behind a signed URL. A wrong or expired signature and an unknown file are the same
   * 404 (Dify: "File not found or signature is invalid"); a missing parameter is a 400 naming it.
   * `range`: the request's `Range` header (see `openPreview`).
   */
  async open(fileId: string, q: SignedQuery, range?: string): Promise<FilePreview> {
    for (const name of ['timestamp', 'nonce', 'sign'] as const) {
      if (!q[name]) throw invalidParam(`${name} is required.`);
    }
    if (!(await this.#valid(fileId, q.timestamp!, q.nonce!, q.sign!))) throw notFound('File not found or signature is invalid');
    const file = await this.#uploads.find(fileId);
    const preview = file ? await openPreview(this.#blobs, file, q.as_attachment === 'true', range) : undefined;
    if (!preview) throw notFound('File not found or signature is invalid');
    return preview;
  }

  async #valid(fileId: string, timestamp: string, nonce: string, sign: string): Promise<boolean> {
    if (!isUuid(fileId) || !/^\d{1,12}$/.test(timestamp)) return false;
    const expected = Buffer.from(await this.#signature(fileId, timestamp, nonce));
    const given = Buffer.from(sign);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return false;
    const age = Math.floor(this.#clock.now() / 1000) - Number(timestamp);
    return age >= 0 && age <= this.#config.accessTimeoutSeconds;
  }

  async #signature(fileId: string, timestamp: string, nonce: string): Promise<string> {
    const mac = createHmac('sha256', await this.#keyBytes()).update(`file-preview|${fileId}|${timestamp}|${nonce}`).digest('base64');
    return mac.replaceAll('+', '-').replaceAll('/', '_');
  }

  #keyBytes(): Promise<Buffer> {
    return this.#keys.key(FILE_URL_KEY);
  }
}
