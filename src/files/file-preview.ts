import type { Readable } from 'node:stream';
import type { App } from '../apps/app-service.js';
import type { Blobs } from './blobs/blobs.js';
import { fileAccessDenied, fileNotFound, rangeNotSatisfiable } from './errors.js';
import { parseByteRange } from './byte-range.js';
import type { UploadedFile, UploadService } from './upload-service.js';
import { isUuid } from '../infra/ids.js';

/** Which uploads the messages of an app were sent with (`MessageStore` implements it). */
export interface MessageFileReferences {
  referencesUpload(appId: string, fileId: string): Promise<boolean>;
}

/** A file ready to be sent: its bytes and the headers Dify sends with them. */
export interface FilePreview {
  readonly file: UploadedFile;
  /** 200, or 206 for a `Range` request (its `content-range` and `content-length` in `headers`). */
  readonly status: 200 | 206;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Readable;
}

/**
 * Opens `file` to be sent: the whole file, or with a `Range` header (`range`) the one range it asks
 * for (206; a range past the end is 416 `range_not_satisfiable`). Undefined when the stored bytes
 * are missing.
 */
export async function openPreview(blobs: Blobs, file: UploadedFile, asAttachment: boolean, range: string | undefined): Promise<FilePreview | undefined> {
  const headers = previewHeaders(file, asAttachment);
  const r = parseByteRange(range, file.size);
  if (r === 'unsatisfiable') throw rangeNotSatisfiable(file.size, range!);
  const body = await blobs.get(file.blobKey, r);
  if (!body) return undefined;
  if (!r) return { file, status: 200, headers, body };
  return { file, status: 206, headers: { ...headers, 'content-length': String(r.end - r.start + 1), 'content-range': `bytes ${r.start}-${r.end}/${file.size}` }, body };
}

/** Types Dify marks `Accept-Ranges: bytes` (it still answers every request with the whole file). */
const SEEKABLE_TYPES: ReadonlySet<string> = new Set([
  'audio/mpeg', 'audio/wav', 'audio/mp4', 'audio/ogg', 'audio/flac', 'audio/aac',
  'video/mp4', 'video/webm', 'video/quicktime', 'audio/x-m4a',
]);
const HTML_TYPES: ReadonlySet<string> = new Set(['text/html', 'application/xhtml+xml']);
const HTML_EXTENSIONS: ReadonlySet<string> = new Set(['html', 'htm']);
/**
 * Inert inside `<img>`, script-bearing when opened top-level (Dify's `harden_served_file`, which
 * lists these three; a browser renders every `…+xml` type as XML, where XHTML `<script>` runs, so
 * those are treated alike).
 */
const SCRIPTABLE_TYPES: ReadonlySet<string> = new Set(['image/svg+xml', 'text/xml', 'application/xml', 'text/xsl']);
const SCRIPTABLE_EXTENSIONS: ReadonlySet<string> = new Set(['svg', 'svgz', 'xml']);
const INERT_DOCUMENT_CSP = "default-src 'none'; style-src 'unsafe-inline'; sandbox";
/** Werkzeug adds `; charset=utf-8` to these (and to every `text/*` and `*+xml`) type. */
const CHARSET_TYPES: ReadonlySet<string> = new Set([
  'application/ecmascript', 'application/javascript', 'application/sql', 'application/xml',
  'application/xml-dtd', 'application/xml-external-parsed-entity',
]);

/** Python's `urllib.parse.quote` (safe `/`): `encodeURIComponent` leaves `!'()*` as they are. */
export function pyQuote(s: string): string {
  return encodeURIComponent(s)
    .replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
    .replaceAll('%2F', '/');
}

/** `type/subtype` with optional `; name=value` parameters (RFC 9110 tokens and quoted strings). */
const MEDIA_TYPE = /^[\w!#$%&'*+.^`|~-]+\/[\w!#$%&'*+.^`|~-]+(?:[ \t]*;[ \t]*[\w!#$%&'*+.^`|~-]+=(?:[\w!#$%&'*+.^`|~-]+|"[\t !#-[\]-~]*"))*$/;

/** The stored type as a header value; an upload's type is the client's word, so one that is not a media type is sent as bytes. */
function servedType(mimeType: string): string {
  return MEDIA_TYPE.test(mimeType.trim()) ? mimeType.trim() : 'application/octet-stream';
}

function bareType(mimeType: string): string {
  return mimeType.split(';', 1)[0]!.trim().toLowerCase();
}

function contentType(mimeType: string): string {
  const bare = bareType(mimeType);
  const text = bare.startsWith('text/') || bare.endsWith('+xml') || CHARSET_TYPES.has(bare);
  return text && !/charset=/i.test(mimeType) ? `${mimeType}; charset=utf-8` : mimeType;
}

function hasExtension(f: UploadedFile, set: ReadonlySet<string>): boolean {
  const fromName = /\.([^.]+)$/.exec(f.name)?.[1]?.toLowerCase();
  return set.has(f.extension.toLowerCase()) || (fromName !== undefined && set.has(fromName));
}

/**
 * The headers of Dify's `GET /files/{id}/preview` response: the file's type (werkzeug's charset
 * rule), its size, `Accept-Ranges` for audio and video, a one-hour public cache, and for
 * `as_attachment` a download under the file's name as `application/octet-stream`. HTML always
 * downloads; SVG and XML keep their type but are attachments with an inert CSP; `nosniff` always.
 */
export function previewHeaders(f: UploadedFile, asAttachment: boolean): Record<string, string> {
  const mimeType = servedType(f.mimeType);
  const h: Record<string, string> = { 'content-type': contentType(mimeType), 'content-length': String(f.size) };
  if (SEEKABLE_TYPES.has(mimeType)) h['accept-ranges'] = 'bytes';
  const attachment = f.name ? `attachment; filename*=UTF-8''${pyQuote(f.name)}` : 'attachment';
  if (asAttachment && f.name) {
    h['content-disposition'] = attachment;
    h['content-type'] = 'application/octet-stream';
  }
  h['x-content-type-options'] = 'nosniff';
  const bare = bareType(mimeType);
  if (HTML_TYPES.has(bare) || hasExtension(f, HTML_EXTENSIONS)) {
    h['content-disposition'] = attachment;
    h['content-type'] = 'application/octet-stream';
  } else if (SCRIPTABLE_TYPES.has(bare) || bare.endsWith('+xml') || hasExtension(f, SCRIPTABLE_EXTENSIONS)) {
    h['content-disposition'] = attachment;
    h['content-security-policy'] = INERT_DOCUMENT_CSP;
  }
  h['cache-control'] = 'public, max-age=3600';
  return h;
}

/**
 * `GET /files/{file_id}/preview`: an upload is readable through the app it was uploaded to, once a
 * message of that app was sent with it (Dify: "a file is reachable only through the app whose
 * messages reference it"). 404 `file_not_found` for unknown files and files no message of the app
 * references; 403 `file_access_denied` for another app's or workspace's file.
 */
export class FilePreviewService {
  readonly #uploads: UploadService;
  readonly #blobs: Blobs;
  readonly #references: MessageFileReferences;

  constructor(uploads: UploadService, blobs: Blobs, references: MessageFileReferences) {
    this.#uploads = uploads;
    this.#blobs = blobs;
    this.#references = references;
  }

  /** `range`: the request's `Range` header (one byte range is served; see `openPreview`). */
  async open(app: App, fileId: string, asAttachment: boolean, range?: string): Promise<FilePreview> {
    const file = isUuid(fileId) ? await this.#uploads.find(fileId) : undefined;
    if (!file) throw fileNotFound('File not found in message context');
    if (file.workspaceId !== app.workspaceId) throw fileAccessDenied('File access denied: tenant mismatch');
    if (file.appId !== null && file.appId !== app.id) throw fileAccessDenied('File access denied: not owned by requesting app');
    // Uploads without an app (knowledge documents, CLI) are never sent with a message of an app.
    if (file.appId === null || !(await this.#references.referencesUpload(app.id, file.id))) {
      throw fileNotFound('File not found in message context');
    }
    const preview = await openPreview(this.#blobs, file, asAttachment, range);
    if (!preview) throw fileNotFound('Failed to load file content: the stored file is missing');
    return preview;
  }
}
