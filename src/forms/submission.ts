import { Readable } from 'node:stream';
import type { UploadLimits } from '../config.js';
import { categoryOf, extensionOf, sizeLimitFor } from '../files/file-types.js';
import { fetchRemote, RemoteFetchError } from '../files/remote-fetch.js';
import type { UploadedFile, UploadService } from '../files/upload-service.js';
import { invalidFormData } from './errors.js';
import type { FormAction, FormInput } from './form-definition.js';

/** A file value as nodes after the Human Input node see it (Dify's File mapping). */
export interface FormFileValue {
  readonly dify_model_identity: '__dify__file__';
  readonly id: string;
  readonly type: string;
  readonly transfer_method: 'local_file' | 'remote_url';
  readonly remote_url: string | null;
  readonly related_id: string;
  readonly upload_file_id: string;
  readonly filename: string;
  readonly extension: string;
  readonly mime_type: string;
  readonly size: number;
  readonly url: string | null;
}

export interface SubmissionContext {
  readonly workspaceId: string;
  readonly appId: string;
  /** The submitting end user's id (local files must be theirs). */
  readonly endUserId: string;
  readonly uploads: UploadService;
  readonly limits: UploadLimits;
  readonly allowHosts: readonly string[];
}

function obj(v: unknown): Record<string, unknown> | undefined {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}

/** Checks in Dify's order: the action first, then that every input is present. */
export function checkActionAndPresence(actions: readonly FormAction[], inputs: readonly FormInput[], action: string, values: Record<string, unknown>): void {
  if (!actions.some((a) => a.id === action)) throw invalidFormData(`Invalid action: ${action}`);
  const missing = inputs.map((i) => i.output_variable_name).filter((name) => !(name in values) || values[name] === null || values[name] === undefined);
  if (missing.length > 0) throw invalidFormData(`Missing required inputs: ${missing.join(', ')}`);
}

function fileValue(f: UploadedFile, method: 'local_file' | 'remote_url', remoteUrl: string | null): FormFileValue {
  return {
    dify_model_identity: '__dify__file__',
    id: f.id,
    type: categoryOf(f.extension),
    transfer_method: method,
    remote_url: remoteUrl,
    related_id: f.id,
    upload_file_id: f.id,
    filename: f.name,
    extension: f.extension ? `.${f.extension}` : '',
    mime_type: f.mimeType,
    size: f.size,
    url: remoteUrl,
  };
}

function checkType(input: FormInput, name: string, extension: string, field: string): void {
  const types = input.allowed_file_types ?? [];
  if (types.length === 0) return;
  const category = categoryOf(extension);
  const exts = (input.allowed_file_extensions ?? []).map((e) => e.toLowerCase().replace(/^\./, ''));
  const ok = types.includes(category) || (types.includes('custom') && exts.includes(extension.toLowerCase()));
  if (!ok) {
    const allowed = [...types.filter((t) => t !== 'custom'), ...exts.map((e) => `.${e}`)].join(', ');
    throw invalidFormData(`${field}: file ${name} is not an allowed type (allowed: ${allowed})`);
  }
}

/** Validates one file reference and resolves it to a stored file (remote URLs are fetched now). */
async function resolveFile(input: FormInput, raw: unknown, field: string, ctx: SubmissionContext): Promise<FormFileValue> {
  const ref = obj(raw);
  if (!ref || typeof ref.transfer_method !== 'string') throw invalidFormData(`${field} must be a file reference with a transfer_method`);
  const method = ref.transfer_method;
  if (method !== 'local_file' && method !== 'remote_url') throw invalidFormData(`${field}: transfer_method must be local_file or remote_url, got ${method}`);
  const methods = input.allowed_file_upload_methods ?? [];
  if (methods.length > 0 && !methods.includes(method)) throw invalidFormData(`${field}: transfer method ${method} is not allowed (allowed: ${methods.join(', ')})`);
  if (method === 'local_file') {
    const id = ref.upload_file_id;
    if (typeof id !== 'string' || id === '') throw invalidFormData(`${field}: upload_file_id is required for local_file`);
    const f = await ctx.uploads.find(id);
    if (!f || f.appId !== ctx.appId || f.createdBy !== ctx.endUserId) throw invalidFormData(`${field}: upload_file_id ${id} is not a file uploaded by this user`);
    checkType(input, f.name, f.extension, field);
    return fileValue(f, 'local_file', null);
  }
  const url = ref.url;
  if (typeof url !== 'string' || url === '') throw invalidFormData(`${field}: url is required for remote_url`);
  const guessExt = extensionOf(new URL(url, 'http://x').pathname);
  const { bytes } = sizeLimitFor(guessExt, ctx.limits);
  let remote;
  try {
    remote = await fetchRemote(url, { maxBytes: bytes, allowHosts: ctx.allowHosts });
  } catch (err) {
    if (err instanceof RemoteFetchError) throw invalidFormData(`${field}: ${err.message}`);
    throw err;
  }
  const name = remote.filename || `remote${guessExt ? `.${guessExt}` : ''}`;
  const extension = extensionOf(name);
  const limit = sizeLimitFor(extension, ctx.limits);
  if (remote.body.length > limit.bytes) throw invalidFormData(`${field}: remote file is over the ${limit.category} limit of ${limit.bytes / (1024 * 1024)} MB`);
  checkType(input, name, extension, field);
  let stored: UploadedFile;
  try {
    stored = await ctx.uploads.upload({
      filename: name,
      mimeType: remote.mimeType || 'application/octet-stream',
      body: Readable.from([remote.body]),
      workspaceId: ctx.workspaceId,
      appId: ctx.appId,
      createdBy: ctx.endUserId,
      createdByRole: 'end_user',
    });
  } catch (err) {
    throw invalidFormData(`${field}: ${(err as Error).message}`);
  }
  return fileValue(stored, 'remote_url', remote.url);
}

/**
 * Validates every value against its input and returns the values nodes will see (files resolved).
 * Throws invalid_form_data naming the field; nothing is changed on failure.
 */
export async function resolveValues(inputs: readonly FormInput[], values: Record<string, unknown>, ctx: SubmissionContext): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  for (const input of inputs) {
    const name = input.output_variable_name;
    const v = values[name];
    switch (input.type as string) {
      // `text_input` / `text-input`: Dify's text field before file support (the page shows it as one line)
      case 'text_input':
      case 'text-input':
      case 'paragraph':
        if (typeof v !== 'string') throw invalidFormData(`${name} must be a string`);
        out[name] = v;
        break;
      case 'select':
        if (typeof v !== 'string') throw invalidFormData(`${name} must be a string`);
        if (input.options && input.options.length > 0 && !input.options.includes(v)) {
          throw invalidFormData(`${name} must be one of: ${input.options.join(', ')}`);
        }
        out[name] = v;
        break;
      case 'file':
        if (Array.isArray(v)) throw invalidFormData(`${name} must be a single file reference`);
        out[name] = await resolveFile(input, v, name, ctx);
        break;
      case 'file-list': {
        if (!Array.isArray(v)) throw invalidFormData(`${name} must be a list of file references`);
        const limit = input.number_limits ?? 0;
        if (limit > 0 && v.length > limit) throw invalidFormData(`${name} accepts at most ${limit} files, got ${v.length}`);
        const files: FormFileValue[] = [];
        for (let i = 0; i < v.length; i++) files.push(await resolveFile(input, v[i], `${name}[${i}]`, ctx));
        out[name] = files;
        break;
      }
      // not a Dify input type; a DSL that has it gets a number field on the page
      case 'number':
        if (typeof v !== 'number' || !Number.isFinite(v)) throw invalidFormData(`${name} must be a number`);
        out[name] = v;
        break;
      default:
        out[name] = v;
    }
  }
  return out;
}
