import multipart from '@fastify/multipart';
import type { Readable } from 'node:stream';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { filenameNotExists, noFileUploaded, tooManyFiles, unsupportedFileType } from '../files/errors.js';
import type { PendingUpload, UploadService } from '../files/upload-service.js';

/**
 * Registers routes that take multipart forms, in a scope of their own with @fastify/multipart: its
 * hooks (one per request on the way in and one on the way out) stay off every other route. There
 * a multipart body is not read (the server's root parser): a JSON route answers its 415 and a
 * route without a body ignores it, as Dify.
 */
export async function multipartRoutes(app: FastifyInstance, routes: (scope: FastifyInstance) => void): Promise<void> {
  await app.register(async (scope) => {
    scope.removeContentTypeParser('multipart/form-data');
    await scope.register(multipart, {
      limits: { fields: 20, fieldSize: 1024 * 1024, parts: 30, fileSize: Number.MAX_SAFE_INTEGER },
      throwFileSizeLimit: false,
      preservePath: true,
    });
    routes(scope);
  });
}

export interface UploadForm {
  /** The streamed `file` part, not yet recorded: commit or abandon it. Undefined when there was none. */
  readonly pending: PendingUpload | undefined;
  /** Text fields by name (the last value wins). */
  readonly fields: Readonly<Record<string, string>>;
}

/**
 * Reads a multipart form with one `file` part and text fields in any order, Dify's checks in Dify's
 * order: the file streams to the blob store under the upload limits; more than one file field is
 * `too_many_files`; a file part without a MIME type or a name is refused. `accept` may refuse a
 * file by name before any byte is stored. On any failure the received file is abandoned.
 */
export async function readUploadForm(
  request: FastifyRequest,
  uploads: UploadService,
  accept: (filename: string) => void = () => undefined,
): Promise<UploadForm> {
  if (!request.isMultipart()) throw noFileUploaded();
  let pending: PendingUpload | undefined;
  try {
    const form = await readFileForm(request, async ({ filename, mimeType, body }) => {
      if (!mimeType) throw unsupportedFileType();
      if (!filename) throw filenameNotExists();
      try {
        accept(filename);
      } catch (err) {
        body.resume();
        throw err;
      }
      return (pending = await uploads.receive({ filename, mimeType, body }));
    });
    // With no `file` part at all the caller answers no_file_uploaded, as Dify checks that first.
    if (form.fileFields.size > 1 && form.fileFields.has('file')) throw tooManyFiles();
    return { pending: form.file, fields: form.fields };
  } catch (err) {
    if (pending) await uploads.abandon(pending);
    throw err;
  }
}

/**
 * Reads a multipart form with one `file` part handed to `read` as it streams, and text fields in
 * any order. Other file parts are skipped (`fileFields` names every file part seen). `file` is
 * undefined when there was none (also for a body that is not multipart).
 */
export async function readFileForm<T>(
  request: FastifyRequest,
  read: (file: { filename: string | undefined; mimeType: string; body: Readable }) => Promise<T>,
): Promise<{ file: T | undefined; fields: Readonly<Record<string, string>>; fileFields: ReadonlySet<string> }> {
  const fields: Record<string, string> = {};
  const fileFields = new Set<string>();
  let file: T | undefined;
  if (!request.isMultipart()) return { file, fields, fileFields };
  let seen = false;
  for await (const part of request.parts()) {
    if (part.type === 'field') {
      if (typeof part.value === 'string') fields[part.fieldname] = part.value;
      continue;
    }
    fileFields.add(part.fieldname);
    if (seen || part.fieldname !== 'file') {
      part.file.resume();
      continue;
    }
    seen = true;
    file = await read({ filename: part.filename || undefined, mimeType: part.mimetype ?? '', body: part.file });
  }
  return { file, fields, fileFields };
}
