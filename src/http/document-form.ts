import type { FastifyRequest } from 'fastify';
import type { Runtime } from '../runtime.js';
import type { DatasetTable } from '../store/schema.js';
import { invalidParam } from '../infra/errors.js';
import { noFileUploaded, unsupportedFileType } from '../files/errors.js';
import { readUploadForm } from './multipart-upload.js';
import { extensionOf } from '../files/file-types.js';
import type { PendingUpload, UploadedFile } from '../files/upload-service.js';
import { SUPPORTED_EXTENSIONS } from '../knowledge/ingest/parse/index.js';
import type { Accepted, DocumentOptions } from '../knowledge/documents/documents.js';

/*
 * The multipart document form of Dify's `create-by-file` / `update-by-file` (`file` + a `data`
 * JSON string): read by the Service API's document routes and the console's upload alike, so a
 * file uploaded in the console goes through the same checks, parsers and indexing job.
 */

export interface DocumentForm {
  readonly pending: PendingUpload | undefined;
  readonly data: Record<string, unknown>;
}

export function parseData(raw: string | undefined): Record<string, unknown> {
  if (raw === undefined || raw.trim() === '') return {};
  let v: unknown;
  try {
    v = JSON.parse(raw);
  } catch (err) {
    throw invalidParam(`data must be a JSON string: ${(err as Error).message}`);
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw invalidParam('data must be a JSON object.');
  return v as Record<string, unknown>;
}

export function options(d: Record<string, unknown>): DocumentOptions {
  return { name: d.name, processRule: d.process_rule, docForm: d.doc_form, docLanguage: d.doc_language, indexingTechnique: d.indexing_technique };
}

/**
 * Reads a multipart document form (`file` + `data` JSON string, in any order). The file streams to
 * the blob store under the upload limits; the caller commits or abandons it.
 */
export async function readForm(runtime: Pick<Runtime, 'uploads'>, request: FastifyRequest): Promise<DocumentForm> {
  const form = await readUploadForm(request, runtime.uploads, (filename) => {
    if (!SUPPORTED_EXTENSIONS.includes(extensionOf(filename))) {
      throw unsupportedFileType(`Knowledge documents must be one of: ${SUPPORTED_EXTENSIONS.join(', ')}.`);
    }
  });
  try {
    return { pending: form.pending, data: parseData(form.fields.data) };
  } catch (err) {
    if (form.pending) await runtime.uploads.abandon(form.pending);
    throw err;
  }
}

/**
 * Creates a document from a multipart form (`POST …/document/create-by-file`): the options are
 * checked before the streamed file is kept; a refused request leaves no file behind.
 */
export async function createDocumentFromForm(runtime: Pick<Runtime, 'uploads' | 'documents'>, ds: DatasetTable, request: FastifyRequest, createdBy: string): Promise<Accepted> {
  const form = await readForm(runtime, request);
  try {
    await runtime.documents.checkOptions(ds, options(form.data));
    if (!form.pending) throw noFileUploaded();
  } catch (err) {
    if (form.pending) await runtime.uploads.abandon(form.pending);
    throw err;
  }
  const file: UploadedFile = await runtime.uploads.commit(form.pending, { workspaceId: ds.workspace_id, appId: null, createdBy, createdByRole: 'account' });
  return runtime.documents.create(ds, file, options(form.data), createdBy);
}
