import { createHash } from 'node:crypto';
import type { UploadedFile } from '../files/upload-service.js';
import { categoryOf, extensionOf } from '../files/file-types.js';
import { isObject } from '../infra/objects.js';
import { fileTypeOfMime } from '../files/tool-files.js';

const MEDIA = new Set(['image', 'video', 'audio']);

/** What listing a message's files needs: the stored uploads and signed preview URLs. */
export interface MessageFilePorts {
  find(id: string): Promise<UploadedFile | undefined>;
  /** A signed preview URL of upload `id` (`origin` stands in when `FILES_URL` is not set). */
  sign(id: string, origin: string): Promise<string>;
}

/** An item of `message_files` in `GET /messages` (Dify's `MessageFile` response fields). */
export interface MessageFileItem {
  readonly id: string;
  readonly filename: string;
  readonly type: string;
  readonly url: string | null;
  readonly mime_type: string | null;
  readonly size: number | null;
  readonly transfer_method: string;
  readonly belongs_to: 'user' | 'assistant';
  readonly upload_file_id: string | null;
}

/** Dify's `FileType` of an upload: image, video or audio by its MIME major type, else its extension's category. */
function typeOf(f: UploadedFile): string {
  const byMime = fileTypeOfMime(f.mimeType);
  return MEDIA.has(byMime) ? byMime : categoryOf(f.extension.replace(/^\./, ''));
}

/** A stable id for a file that has no stored row (a `remote_url` file): UUID-shaped, from the message and position. */
function derivedId(messageId: string, index: number): string {
  const h = createHash('sha256').update(`${messageId}:${index}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-${((parseInt(h[16]!, 16) & 3) | 8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/**
 * A message's `message_files`, as Dify lists them: the files the user sent with the query
 * (`belongs_to: "user"`) followed by the files an agent's tools made (`belongs_to: "assistant"`).
 * Stored files get a signed preview URL; a `remote_url` file keeps its URL, with its size unknown
 * (`-1`, no request is made). A stored file that no longer exists, or belongs to another app, is
 * left out.
 */
export async function messageFiles(
  ports: MessageFilePorts,
  origin: string,
  message: { readonly id: string; readonly appId: string; readonly files: readonly unknown[] },
  assistantFileIds: readonly string[] = [],
): Promise<MessageFileItem[]> {
  const items: MessageFileItem[] = [];
  for (const [i, ref] of message.files.entries()) {
    if (!isObject(ref)) continue;
    const method = typeof ref.transfer_method === 'string' ? ref.transfer_method : '';
    if (method === 'remote_url') {
      const url = typeof ref.url === 'string' ? ref.url : '';
      if (url === '') continue;
      let filename = '';
      try {
        filename = decodeURIComponent(new URL(url).pathname.split('/').pop() ?? '');
      } catch {
        filename = '';
      }
      const type = typeof ref.type === 'string' && ref.type ? ref.type : categoryOf(extensionOf(filename));
      items.push({ id: derivedId(message.id, i), filename, type, url, mime_type: null, size: -1, transfer_method: method, belongs_to: 'user', upload_file_id: null });
      continue;
    }
    const uploadId = typeof ref.upload_file_id === 'string' ? ref.upload_file_id : '';
    if (uploadId === '') continue;
    const item = await stored(ports, origin, message.appId, uploadId, method || 'local_file', 'user', typeof ref.type === 'string' && ref.type ? ref.type : undefined);
    if (item) items.push(item);
  }
  for (const id of assistantFileIds) {
    const item = await stored(ports, origin, message.appId, id, 'tool_file', 'assistant');
    if (item) items.push(item);
  }
  return items;
}

/** A stored file of the message's app (or app-less), described; another app's file is never signed. */
async function stored(ports: MessageFilePorts, origin: string, appId: string, id: string, method: string, belongsTo: 'user' | 'assistant', type?: string): Promise<MessageFileItem | undefined> {
  const f = await ports.find(id);
  if (!f || (f.appId !== null && f.appId !== appId)) return undefined;
  return {
    id: f.id,
    filename: f.name,
    type: type ?? typeOf(f),
    url: await ports.sign(f.id, origin),
    mime_type: f.mimeType,
    size: f.size,
    transfer_method: method,
    belongs_to: belongsTo,
    upload_file_id: f.id,
  };
}
