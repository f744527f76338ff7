import { pipeline, Transform, type Readable } from 'node:stream';
import type { Kysely } from 'kysely';
import type { UploadLimits } from '../config.js';
import type { Database, UploadFileTable } from '../store/schema.js';
import { FileStore, type UploadedFile } from './file-store.js';

export { toUploadedFile, type UploadedFile } from './file-store.js';
import type { Clock } from '../infra/clock.js';
import { toSeconds } from '../infra/clock.js';
import { newId } from '../infra/ids.js';
import { invalidParam } from '../infra/errors.js';
import type { Blobs } from './blobs/blobs.js';
import { fileTooLarge } from './errors.js';
import { extensionOf, sizeLimitFor } from './file-types.js';

export interface ReceiveInput {
  readonly filename: string;
  readonly mimeType: string;
  readonly body: Readable;
}

/** Bytes stored in the blob store but not yet recorded; `commit` or `abandon` it. */
export interface PendingUpload {
  readonly id: string;
  readonly name: string;
  readonly extension: string;
  readonly mimeType: string;
  readonly blobKey: string;
  readonly size: number;
}

export interface CommitInput {
  readonly workspaceId: string;
  readonly appId: string | null;
  /** End-user id (or an account name). */
  readonly createdBy: string;
  readonly createdByRole: 'end_user' | 'account';
}

const MAX_NAME = 200;

/** Dify's upload object (`FileResponse`). */
export function fileResponse(f: UploadedFile): Record<string, unknown> {
  return {
    id: f.id,
    reference: null,
    name: f.name,
    size: f.size,
    extension: f.extension,
    mime_type: f.mimeType,
    created_by: f.createdBy,
    created_at: toSeconds(f.createdAt),
    preview_url: null,
    source_url: null,
    original_url: null,
    user_id: null,
    tenant_id: f.workspaceId,
    conversation_id: null,
    file_key: null,
  };
}

/** Counts bytes through the stream and fails it as soon as it passes `limit`. */
function limitBytes(limit: number, onTooLarge: () => Error): Transform {
  let seen = 0;
  return new Transform({
    transform(chunk: Buffer, _enc, cb) {
      seen += chunk.length;
      if (seen > limit) cb(onTooLarge());
      else cb(null, chunk);
    },
  });
}

/** Streams uploads to the blob store under per-category size limits; a failed upload leaves nothing. */
export class UploadService {
  readonly #store: FileStore;
  readonly #blobs: Blobs;
  readonly #limits: UploadLimits;
  readonly #clock: Clock;

  constructor(db: Kysely<Database>, blobs: Blobs, limits: UploadLimits, clock: Clock) {
    this.#store = new FileStore(db);
    this.#blobs = blobs;
    this.#limits = limits;
    this.#clock = clock;
  }

  get limits(): UploadLimits {
    return this.#limits;
  }

  /** Checks the name before any byte is read; throws invalid_param naming the problem. */
  checkName(filename: string): { name: string; extension: string } {
    if (/[/\\]/.test(filename)) throw invalidParam('Filename contains invalid characters');
    const extension = extensionOf(filename);
    if (extension && this.#limits.extensionBlacklist.includes(extension)) {
      throw invalidParam(`File extension '.${extension}' is not allowed for security reasons`);
    }
    const name = filename.length > MAX_NAME ? filename.slice(0, MAX_NAME - extension.length - 1) + (extension ? `.${extension}` : '') : filename;
    return { name, extension };
  }

  /** Streams the bytes to the blob store under the size limit of the file's category. */
  async receive(input: ReceiveInput): Promise<PendingUpload> {
    const { name, extension } = this.checkName(input.filename);
    const { category, bytes } = sizeLimitFor(extension, this.#limits);
    const id = newId();
    const blobKey = `uploads/${id.slice(0, 2)}/${id}${extension ? `.${extension}` : ''}`;
    const limiter = limitBytes(bytes, () => fileTooLarge(category, bytes));
    // A client that aborts mid-upload errors the source (perhaps already): pipeline hands that to
    // the limiter, and the blob store then discards the partial file.
    pipeline(input.body, limiter, () => undefined);
    try {
      const size = await this.#blobs.put(blobKey, limiter);
      return { id, name, extension, mimeType: input.mimeType, blobKey, size };
    } catch (err) {
      input.body.unpipe(limiter);
      input.body.resume();
      throw err;
    }
  }

  /** Records a received file; on failure the blob is removed. */
  async commit(pending: PendingUpload, owner: CommitInput): Promise<UploadedFile> {
    const row: UploadFileTable = {
      id: pending.id,
      workspace_id: owner.workspaceId,
      app_id: owner.appId,
      name: pending.name,
      size: pending.size,
      extension: pending.extension,
      mime_type: pending.mimeType,
      blob_key: pending.blobKey,
      created_by: owner.createdBy,
      created_by_role: owner.createdByRole,
      created_at: this.#clock.now(),
    };
    try {
      return await this.#store.insert(row);
    } catch (err) {
      await this.abandon(pending);
      throw err;
    }
  }

  /** Drops a received file that will not be committed. */
  async abandon(pending: PendingUpload): Promise<void> {
    await this.#blobs.delete(pending.blobKey);
  }

  /** Receives and commits in one step (CLI and knowledge uploads). */
  async upload(input: ReceiveInput & CommitInput): Promise<UploadedFile> {
    return this.commit(await this.receive(input), input);
  }

  find(id: string): Promise<UploadedFile | undefined> {
    return this.#store.find(id);
  }

  /** Deletes a recorded file: its bytes first, then its record (a failure in between leaves a record to retry). */
  async remove(id: string): Promise<void> {
    const f = await this.#store.find(id);
    if (!f) return;
    await this.#blobs.delete(f.blobKey);
    await this.#store.delete(id);
  }

  async read(file: UploadedFile): Promise<Buffer | undefined> {
    return this.#blobs.read(file.blobKey);
  }
}
