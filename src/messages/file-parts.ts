import { invalidParam } from '../infra/errors.js';
import type { UploadService } from '../files/upload-service.js';
import type { ContentPart } from '../llm/model-provider.js';
import { isObject } from '../infra/objects.js';

const IMAGE_EXT = /\.(png|jpe?g|gif|webp|bmp|svg)(\?|#|$)/i;

/**
 * Turns file references (`remote_url` with `url`, `local_file` with `upload_file_id` from
 * /files/upload) into image parts for vision models. Remote URLs are passed to the model as they
 * are (the model fetches them); uploads are inlined as `data:` URLs. Non-image files are skipped.
 * A reference that names no file, or a file not uploaded through this app (another app's, a
 * knowledge document's), is a 400 naming `field`.
 */
export async function imageParts(refs: readonly unknown[], appId: string, uploads: UploadService, field: string, detail: 'low' | 'high' = 'high'): Promise<ContentPart[]> {
  const parts: ContentPart[] = [];
  for (const [i, ref] of refs.entries()) {
    const where = `${field}[${i}]`;
    if (!isObject(ref)) throw invalidParam(`${where} must be a file object`);
    const type = typeof ref.type === 'string' ? ref.type : undefined;
    if (ref.transfer_method === 'remote_url') {
      if (typeof ref.url !== 'string' || !/^https?:\/\//i.test(ref.url)) throw invalidParam(`${where}.url must be an http(s) URL`);
      if (type === 'image' || (type === undefined && IMAGE_EXT.test(ref.url))) parts.push({ type: 'image', url: ref.url, detail });
    } else if (ref.transfer_method === 'local_file') {
      if (typeof ref.upload_file_id !== 'string' || ref.upload_file_id === '') throw invalidParam(`${where}.upload_file_id is required for local_file`);
      const file = await uploads.find(ref.upload_file_id);
      if (!file || file.appId !== appId) throw invalidParam(`${where}.upload_file_id: file ${ref.upload_file_id} not found`);
      if (!file.mimeType.startsWith('image/')) continue;
      const bytes = await uploads.read(file);
      if (!bytes) throw invalidParam(`${where}.upload_file_id: file ${ref.upload_file_id} not found`);
      parts.push({ type: 'image', url: `data:${file.mimeType};base64,${bytes.toString('base64')}`, detail });
    } else {
      throw invalidParam(`${where}.transfer_method must be one of: "remote_url", "local_file"`);
    }
  }
  return parts;
}
