import type { Kysely } from 'kysely';
import type { Database, UploadFileTable } from '../store/schema.js';

export interface UploadedFile {
  readonly id: string;
  readonly workspaceId: string;
  readonly appId: string | null;
  readonly name: string;
  readonly size: number;
  readonly extension: string;
  readonly mimeType: string;
  readonly blobKey: string;
  readonly createdBy: string;
  readonly createdAt: number;
}

export function toUploadedFile(r: UploadFileTable): UploadedFile {
  return {
    id: r.id,
    workspaceId: r.workspace_id,
    appId: r.app_id,
    name: r.name,
    size: r.size,
    extension: r.extension,
    mimeType: r.mime_type,
    blobKey: r.blob_key,
    createdBy: r.created_by,
    createdAt: r.created_at,
  };
}

/** The `upload_files` table: the records of uploaded files (their bytes are in the blob store). */
export class FileStore {
  readonly #db: Kysely<Database>;

  constructor(db: Kysely<Database>) {
    this.#db = db;
  }

  async insert(row: UploadFileTable): Promise<UploadedFile> {
    await this.#db.insertInto('upload_files').values(row).execute();
    return toUploadedFile(row);
  }

  async delete(id: string): Promise<void> {
    await this.#db.deleteFrom('upload_files').where('id', '=', id).execute();
  }

  async find(id: string): Promise<UploadedFile | undefined> {
    const row = await this.#db.selectFrom('upload_files').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? toUploadedFile(row) : undefined;
  }

  /** Deletes an app's upload records (`app delete --purge`; the bytes stay in the blob store). */
  async purgeApp(appId: string): Promise<void> {
    await this.#db.deleteFrom('upload_files').where('app_id', '=', appId).execute();
  }
}
