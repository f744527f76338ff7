import multipart, { type Multipart } from '@fastify/multipart';
import type { Readable } from 'node:stream';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { filenameNotExists, noFileUploaded, tooManyFiles, unsupportedFileType } from '../files/errors.js';
import type { PendingUpload, UploadService } from '../files/upload-service.js';
import { badRequest, ServiceError } from '../infra/errors.js';

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
 * The 400 for a body the multipart parser could not read (busboy's and @fastify/multipart's
 * errors, which carry no status): a body that ends before its closing boundary, a Content-Type
 * without a boundary, a client that hangs up mid-form, a malformed part header.
 */
export function malformedMultipart(err: unknown): ServiceError {
  const message = err instanceof Error ? err.message : String(err);
  if (/boundary not found/i.test(message)) return badRequest('The multipart body cannot be read: its Content-Type has no boundary parameter.');
  if (/unexpected end|terminated early|closed before/i.test(message)) return badRequest('The multipart body ended before its closing boundary.');
  return badRequest(`The multipart body cannot be read: ${message.slice(0, 200)}`);
}

/** A parser error becomes `malformedMultipart`; our own coded errors and the parser's limits (413) pass through. */
function asMultipartError(err: unknown): unknown {
  if (err instanceof ServiceError) return err;
  const status = (err as { statusCode?: unknown } | undefined)?.statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500 && status !== 400) return err;
  return malformedMultipart(err);
}

/**
 * Reads a multipart form with one `file` part handed to `read` as it streams, and text fields in
 * any order. Other file parts are skipped (`fileFields` names every file part seen). `file` is
 * undefined when there was none (also for a body that is not multipart).
 *
 * A body the parser cannot read is a 400 (`malformedMultipart`), wherever it breaks: between parts
 * (the iterator rejects) or inside the file part (the part's stream errors while `read` consumes
 * it; whatever `read` then throws is a consequence of the broken body, unless it is a coded error).
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
  let parts: AsyncIterator<Multipart>;
  try {
    parts = request.parts()[Symbol.asyncIterator]();
  } catch (err) {
    throw asMultipartError(err);
  }
  for (;;) {
    let next: IteratorResult<Multipart>;
    try {
      next = await parts.next();
    } catch (err) {
      throw asMultipartError(err);
    }
    if (next.done) break;
    const part = next.value;
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
    // The parser may have failed this part before we got it (the whole body arrived while an
    // async hook ran): its error was emitted already, so read it from the stream.
    let bodyError: unknown = part.file.errored ?? (part.file.destroyed && !part.file.readableEnded ? new Error('Unexpected end of multipart data') : undefined);
    if (bodyError !== undefined) throw asMultipartError(bodyError);
    part.file.once('error', (err) => (bodyError ??= err));
    try {
      file = await read({ filename: part.filename || undefined, mimeType: part.mimetype ?? '', body: part.file });
    } catch (err) {
      if (bodyError !== undefined && !(err instanceof ServiceError)) throw asMultipartError(bodyError);
      throw err;
    }
  }
  return { file, fields, fileFields };
}
