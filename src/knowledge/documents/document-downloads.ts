import type { PassThrough, Readable } from 'node:stream';
import type { Blobs } from '../../files/blobs/blobs.js';
import type { FileUrls } from '../../files/file-urls.js';
import type { UploadedFile } from '../../files/upload-service.js';
import { invalidParam, notFound } from '../../infra/errors.js';
import type { DatasetTable, DocumentTable } from '../../store/schema.js';
import type { DocumentService } from './documents.js';

/**
 * A ZIP entry name for an upload: its base name (any directory part dropped, separators made `_`),
 * `file` when empty; a name already in the archive gets ` (1)`, ` (2)` … before its extension, as Dify.
 */
export function zipEntryName(name: string, used: Set<string>): string {
  const base = (name.split(/[/\\]/).pop() ?? '').trim() || 'file';
  let candidate = base;
  const dot = base.lastIndexOf('.');
  const [stem, ext] = dot > 0 ? [base.slice(0, dot), base.slice(dot)] : [base, ''];
  for (let i = 1; used.has(candidate); i++) candidate = `${stem} (${i})${ext}`;
  used.add(candidate);
  return candidate;
}

/**
 * The original files of knowledge documents: one as a signed URL (`GET …/documents/{id}/download`),
 * several as a ZIP archive streamed as it is built (`POST …/documents/download-zip`).
 */
export class DocumentDownloads {
  readonly #documents: DocumentService;
  readonly #urls: FileUrls;
  readonly #blobs: Blobs;
  readonly #zipMax: number;

  constructor(deps: { documents: DocumentService; urls: FileUrls; blobs: Blobs; zipMaxDocuments: number }) {
    this.#documents = deps.documents;
    this.#urls = deps.urls;
    this.#blobs = deps.blobs;
    this.#zipMax = deps.zipMaxDocuments;
  }

  /** A signed download URL (attachment) of the document's uploaded file. */
  async url(ds: DatasetTable, documentId: string, origin: string): Promise<string> {
    const doc = await this.#documents.get(ds.id, documentId);
    const file = await this.#fileOf(doc, 'Document does not have an uploaded file to download.', 'Uploaded file not found.');
    return this.#urls.sign(file.id, origin, true);
  }

  /**
   * The documents' files as one ZIP (deflated), in the order asked, each id once. Every document is
   * checked before a byte is sent: unknown → 404 `Document not found.`, one without an uploaded
   * file → 404 as Dify. A file that cannot be read once streaming has begun ends the archive early.
   */
  async zip(ds: DatasetTable, rawIds: unknown): Promise<{ name: string; body: Readable }> {
    const ids = this.#ids(rawIds);
    const files: UploadedFile[] = [];
    for (const id of ids) {
      const doc = await this.#documents.find(ds.id, id);
      if (!doc) throw notFound('Document not found.');
      const message = 'Only uploaded-file documents can be downloaded as ZIP.';
      files.push(await this.#fileOf(doc, message, message));
    }
    const { ZipFile } = await import('yazl'); // loaded with the first archive asked for, not at start
    const zip = new ZipFile();
    const body = zip.outputStream as PassThrough;
    // A file that cannot be read ends the response early (its headers are out); unhandled, yazl's
    // and the file stream's `error` events would take the process down.
    const fail = (err: Error) => body.destroy(err);
    zip.on('error', fail);
    const used = new Set<string>();
    for (const f of files) {
      zip.addReadStreamLazy(zipEntryName(f.name, used), { mtime: new Date(f.createdAt), compress: true }, (cb) => {
        this.#blobs.get(f.blobKey).then(
          (stream) => {
            if (!stream) return cb(new Error(`the stored file of ${f.name} is missing`), undefined as never);
            stream.once('error', fail);
            cb(null, stream);
          },
          (err: unknown) => cb(err, undefined as never),
        );
      });
    }
    zip.end();
    return { name: `${ds.name}.zip`, body };
  }

  #ids(raw: unknown): string[] {
    if (!Array.isArray(raw) || raw.length === 0) throw invalidParam('document_ids must be a non-empty list of document ids.');
    if (raw.length > this.#zipMax) throw invalidParam(`document_ids may list at most ${this.#zipMax} documents (KNOWLEDGE_DOWNLOAD_ZIP_MAX_DOCUMENTS).`);
    raw.forEach((id, i) => {
      if (typeof id !== 'string' || id === '') throw invalidParam(`document_ids[${i}] must be a document id.`);
    });
    return [...new Set(raw as string[])];
  }

  async #fileOf(doc: DocumentTable, notUpload: string, missing: string): Promise<UploadedFile> {
    if (doc.data_source_type !== 'upload_file' || !doc.upload_file_id) throw notFound(notUpload);
    const file = (await this.#documents.files([doc.upload_file_id])).get(doc.upload_file_id);
    if (!file) throw notFound(missing);
    return file;
  }
}
