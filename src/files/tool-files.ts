import { Readable } from 'node:stream';
import type { ToolCaller, ToolFiles, ToolFileValue } from '../tools/tool.js';
import type { FileUrls } from './file-urls.js';
import { extensionOf } from './file-types.js';
import type { UploadService } from './upload-service.js';

/** Extensions of the MIME types tools commonly answer with (Python's `guess_extension`, reduced). */
const MIME_EXTENSIONS: Readonly<Record<string, string>> = {
  'image/png': 'png',
  'image/jpeg': 'jpg',
  'image/gif': 'gif',
  'image/webp': 'webp',
  'image/svg+xml': 'svg',
  'application/pdf': 'pdf',
  'application/json': 'json',
  'text/plain': 'txt',
  'text/csv': 'csv',
  'text/html': 'html',
  'text/markdown': 'md',
  'audio/mpeg': 'mp3',
  'audio/wav': 'wav',
  'video/mp4': 'mp4',
};

/** Dify's `get_file_type_by_mime_type`: image / video / audio by the major type, text and PDF documents, else custom. */
export function fileTypeOfMime(mime: string): string {
  const m = mime.toLowerCase();
  if (m.startsWith('image/')) return 'image';
  if (m.startsWith('video/')) return 'video';
  if (m.startsWith('audio/')) return 'audio';
  if (m.startsWith('text/') || m === 'application/pdf') return 'document';
  return 'custom';
}

/**
 * Tool files: the bytes of a tool's `blob` message stored like an upload of the calling app (same
 * blob store, same size limits per category, same extension blacklist) and described as Dify's
 * `tool_file` mapping, with a signed preview URL (relative unless `FILES_URL` is set).
 */
export class UploadToolFiles implements ToolFiles {
  constructor(private readonly deps: { uploads: UploadService; urls: FileUrls; workspaceId: () => Promise<string> }) {}

  async save(blob: { readonly data: Uint8Array; readonly mimeType: string; readonly filename: string }, caller: ToolCaller | undefined): Promise<ToolFileValue> {
    const mime = blob.mimeType.split(';')[0]!.trim().toLowerCase() || 'application/octet-stream';
    const base = (blob.filename || 'file').replace(/[/\\]/g, '_');
    const filename = extensionOf(base) || !MIME_EXTENSIONS[mime] ? base : `${base}.${MIME_EXTENSIONS[mime]}`;
    const stored = await this.deps.uploads.upload({
      filename,
      mimeType: mime,
      body: Readable.from([Buffer.from(blob.data)]),
      workspaceId: caller?.workspaceId ?? (await this.deps.workspaceId()),
      appId: caller?.appId ?? null,
      createdBy: caller?.endUserId ?? 'tool',
      createdByRole: 'end_user',
    });
    const url = await this.deps.urls.sign(stored.id, '', false);
    return {
      dify_model_identity: '__dify__file__',
      id: stored.id,
      tenant_id: stored.workspaceId,
      type: fileTypeOfMime(mime),
      transfer_method: 'tool_file',
      remote_url: url,
      related_id: stored.id,
      filename: stored.name,
      extension: stored.extension ? `.${stored.extension}` : '',
      mime_type: mime,
      size: stored.size,
      url,
    };
  }
}
