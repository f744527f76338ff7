import { defineError } from '../infra/errors.js';

export const noFileUploaded = defineError('no_file_uploaded', 400, () => 'Please upload your file.');
export const tooManyFiles = defineError('too_many_files', 400, () => 'Only one file is allowed.');
export const filenameNotExists = defineError('filename_not_exists_error', 400, () => 'The specified filename does not exist.');
export const unsupportedFileType = defineError(
  'unsupported_file_type',
  415,
  (detail?: string) => `File type not allowed.${detail ? ` ${detail}` : ''}`,
);
export const fileTooLarge = defineError(
  'file_too_large',
  413,
  (category: string, limitBytes: number) =>
    `File size exceeded. ${category} files must be at most ${limitBytes / (1024 * 1024)} MB.`,
);
/** 404 `file_not_found` (Dify's `FileNotFoundError`); the message says which lookup failed. */
export const fileNotFound = defineError('file_not_found', 404, (detail: string) => detail);
/** 416 for a `Range` that starts past the file's end, with the `Content-Range` of the whole size (RFC 9110). */
export const rangeNotSatisfiable = defineError(
  'range_not_satisfiable',
  416,
  (size: number, range: string) => `Range not satisfiable: "${range}" starts past the end of the file (${size} bytes).`,
  (size: number) => ({ 'content-range': `bytes */${size}` }),
);
/** 403 `file_access_denied` (Dify's `FileAccessDeniedError`): the file is another app's or workspace's. */
export const fileAccessDenied = defineError('file_access_denied', 403, (detail: string) => detail);
export const remoteFileUploadFailed = defineError('remote_file_upload_failed', 400, (detail: string) => detail);
