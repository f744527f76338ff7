import { invalidParam } from '../infra/errors.js';
import { isObject, objectOf } from '../infra/objects.js';
import type { App } from './app-service.js';
import { appFeatures } from './parameters.js';

/**
 * The limits a request's top-level `files` must keep, from the app's `file_upload` feature (Dify's
 * `FileUploadConfigManager.convert` + `file_factory.build_from_mappings`), checked before any file
 * is looked up or fetched.
 */
interface FileUploadRules {
  /** Most files; `source` names where the number comes from (for the message). */
  readonly maxFiles: number;
  readonly source: string;
  /** Transfer methods allowed (empty: any), and the app setting they come from. */
  readonly methods: readonly string[];
  readonly methodsSource: string;
  /** File types allowed (empty: any; `custom` files always pass, as Dify). */
  readonly types: readonly string[];
}

const positive = (v: unknown): number | undefined => (typeof v === 'number' && Number.isInteger(v) && v > 0 ? v : undefined);
const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);

/**
 * An app's rules: with `file_upload.enabled`, its `number_limits`, `allowed_file_upload_methods`
 * and `allowed_file_types`; the legacy `image` block (chat and completion apps) gives its
 * `number_limits` and `transfer_methods` when enabled. Without a number, at most `defaultMax`
 * (`WORKFLOW_FILE_UPLOAD_LIMIT`): Dify has no bound then, and each `remote_url` is a fetch.
 */
function rulesOf(app: App, defaultMax: number): FileUploadRules {
  const fu = objectOf(appFeatures(app).file_upload);
  const image = objectOf(fu.image);
  if (fu.enabled === true) {
    const n = positive(fu.number_limits);
    return {
      maxFiles: n ?? defaultMax,
      source: n !== undefined ? "the app's file_upload.number_limits" : 'WORKFLOW_FILE_UPLOAD_LIMIT',
      methods: strings(fu.allowed_file_upload_methods),
      methodsSource: 'file_upload.allowed_file_upload_methods',
      types: strings(fu.allowed_file_types),
    };
  }
  if (image.enabled === true) {
    const n = positive(image.number_limits);
    return { maxFiles: n ?? defaultMax, source: n !== undefined ? "the app's file_upload.image.number_limits" : 'WORKFLOW_FILE_UPLOAD_LIMIT', methods: strings(image.transfer_methods), methodsSource: 'file_upload.image.transfer_methods', types: [] };
  }
  return { maxFiles: defaultMax, source: 'WORKFLOW_FILE_UPLOAD_LIMIT', methods: [], methodsSource: '', types: [] };
}

/**
 * Checks a request's top-level `files` against the app's file upload settings before anything is
 * read or fetched: their number (the whole list, before any item is looked at), each item's
 * `transfer_method` and `type`. Throws 400 `invalid_param` naming the field and the limit (Dify's
 * `ValueError` → 400 `invalid_param`, its text "Number of files exceeds the maximum limit N").
 */
export function checkRequestFiles(app: App, files: readonly unknown[] | null | undefined, defaultMax: number): void {
  if (!files || files.length === 0) return;
  const r = rulesOf(app, defaultMax);
  if (files.length > r.maxFiles) {
    throw invalidParam(`files: Number of files exceeds the maximum limit ${r.maxFiles} (${r.source}=${r.maxFiles}); got ${files.length}`);
  }
  for (const [i, f] of files.entries()) {
    if (!isObject(f)) continue;
    const method = f.transfer_method;
    if (r.methods.length > 0 && typeof method === 'string' && !r.methods.includes(method)) {
      throw invalidParam(`files[${i}].transfer_method ${method} is not allowed (the app's ${r.methodsSource}: ${r.methods.join(', ')})`);
    }
    const type = typeof f.type === 'string' && f.type !== '' ? f.type : 'custom';
    if (r.types.length > 0 && type !== 'custom' && !r.types.includes(type)) {
      throw invalidParam(`files[${i}].type ${type} is not allowed (the app's file_upload.allowed_file_types: ${r.types.join(', ')})`);
    }
  }
}
