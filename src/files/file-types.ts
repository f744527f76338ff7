import type { UploadLimits } from '../config.js';

export const FILE_CATEGORIES = ['image', 'video', 'audio', 'document', 'custom'] as const;
export type FileCategory = (typeof FILE_CATEGORIES)[number];

export const CATEGORY_EXTENSIONS: Record<Exclude<FileCategory, 'custom'>, readonly string[]> = {
  image: ['jpg', 'jpeg', 'png', 'webp', 'gif', 'svg'],
  video: ['mp4', 'mov', 'mpeg', 'webm'],
  audio: ['mp3', 'm4a', 'wav', 'amr', 'mpga'],
  document: ['txt', 'markdown', 'md', 'mdx', 'pdf', 'html', 'htm', 'xlsx', 'xls', 'vtt', 'properties', 'doc', 'docx', 'csv', 'eml', 'msg', 'pptx', 'xml', 'epub', 'ppt', 'json'],
};

/** Lower-case extension without the dot ('' when the name has none). */
export function extensionOf(name: string): string {
  const i = name.lastIndexOf('.');
  return i <= 0 || i === name.length - 1 ? '' : name.slice(i + 1).toLowerCase();
}

/** Dify's file category of an extension (`custom` when it is in no list). */
export function categoryOf(extension: string): FileCategory {
  const ext = extension.toLowerCase().replace(/^\./, '');
  for (const [cat, exts] of Object.entries(CATEGORY_EXTENSIONS)) if (exts.includes(ext)) return cat as FileCategory;
  return 'custom';
}

/** The size limit in bytes for a file of this extension, and the category it was counted under. */
export function sizeLimitFor(extension: string, limits: UploadLimits): { category: FileCategory; bytes: number } {
  const category = categoryOf(extension);
  const bytes =
    category === 'image' ? limits.imageBytes : category === 'video' ? limits.videoBytes : category === 'audio' ? limits.audioBytes : limits.fileBytes;
  return { category, bytes };
}
