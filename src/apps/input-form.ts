import type { DslDocument } from './dsl.js';
import { invalidParam } from '../infra/errors.js';
import { isObject } from '../infra/objects.js';

export const INPUT_TYPES = ['text-input', 'paragraph', 'select', 'number', 'file', 'file-list', 'checkbox', 'json_object'] as const;
export type InputType = (typeof INPUT_TYPES)[number];

/** One declared app input variable, normalized from `user_input_form` or a start node. */
export interface InputVariable {
  readonly type: InputType;
  readonly variable: string;
  readonly label: string;
  readonly required: boolean;
  readonly max_length?: number;
  readonly options?: readonly string[];
  readonly default?: unknown;
  readonly allowed_file_types?: readonly string[];
  readonly allowed_file_extensions?: readonly string[];
  readonly allowed_file_upload_methods?: readonly string[];
}

function normalizeType(t: unknown): InputType {
  if (t === 'text' || t === 'string') return 'text-input';
  if (t === 'external_data_tool') return 'text-input';
  return (INPUT_TYPES as readonly string[]).includes(String(t)) ? (t as InputType) : 'text-input';
}

function fromFields(type: unknown, f: Record<string, unknown>): InputVariable {
  const num = (v: unknown) => (typeof v === 'number' ? v : typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : undefined);
  const max = num(f.max_length);
  return {
    type: normalizeType(type),
    variable: String(f.variable ?? ''),
    label: String(f.label ?? f.variable ?? ''),
    required: f.required === true,
    ...(max !== undefined && max > 0 ? { max_length: max } : {}),
    ...(Array.isArray(f.options) ? { options: f.options.map(String) } : {}),
    ...(f.default !== undefined && f.default !== null && f.default !== '' ? { default: f.default } : {}),
    ...(Array.isArray(f.allowed_file_types) ? { allowed_file_types: f.allowed_file_types.map(String) } : {}),
    ...(Array.isArray(f.allowed_file_extensions) ? { allowed_file_extensions: f.allowed_file_extensions.map(String) } : {}),
    ...(Array.isArray(f.allowed_file_upload_methods) ? { allowed_file_upload_methods: f.allowed_file_upload_methods.map(String) } : {}),
  };
}

/** The app's declared input variables, in declaration order. */
export function inputVariables(doc: DslDocument): InputVariable[] {
  if (doc.workflow) {
    const start = doc.workflow.graph.nodes.find((n) => n.data.type === 'start');
    const vars = start?.data.variables;
    if (!Array.isArray(vars)) return [];
    return vars.filter(isObject).map((v) => fromFields(v.type, v));
  }
  const form = doc.model_config?.user_input_form;
  if (!Array.isArray(form)) return [];
  const out: InputVariable[] = [];
  for (const item of form) {
    if (!isObject(item)) continue;
    const [type, fields] = Object.entries(item)[0] ?? [];
    if (type && isObject(fields)) out.push(fromFields(type, fields));
  }
  return out;
}

/** Dify's wire shape: `[{"text-input": {label, variable, required, max_length, default}}, …]`. */
export function toUserInputForm(vars: readonly InputVariable[]): Record<string, Record<string, unknown>>[] {
  return vars.map((v) => {
    const { type, ...rest } = v;
    return { [type]: { ...rest, default: v.default ?? '' } };
  });
}

/** A file reference as callers send it in `inputs` or `files`. */
export interface FileRef {
  readonly type?: string;
  readonly transfer_method: string;
  readonly url?: string;
  readonly upload_file_id?: string;
}

function isFileRef(v: unknown): v is FileRef {
  return isObject(v) && typeof v.transfer_method === 'string';
}

/**
 * Validates caller inputs against the declared variables with Dify's messages (400 invalid_param).
 * Undeclared inputs are dropped, missing optional values take defaults, NUL bytes are stripped.
 * A `file-list` without its own `max_length` holds at most `maxFiles` (`WORKFLOW_FILE_UPLOAD_LIMIT`).
 */
export function validateInputs(vars: readonly InputVariable[], raw: unknown, maxFiles: number): Record<string, unknown> {
  if (raw === undefined || raw === null) raw = {};
  if (!isObject(raw)) throw invalidParam('inputs must be an object');
  const out: Record<string, unknown> = {};
  for (const v of vars) {
    let value = raw[v.variable];
    if (value === undefined || value === null || value === '') {
      if (v.required) throw invalidParam(`${v.variable} is required in input form`);
      out[v.variable] = v.default ?? (v.type === 'file-list' ? [] : v.type === 'file' ? null : '');
      continue;
    }
    switch (v.type) {
      case 'text-input':
      case 'paragraph':
      case 'select': {
        if (typeof value !== 'string') throw invalidParam(`(type '${v.type}') ${v.variable} in input form must be a string`);
        value = value.replaceAll('\x00', '');
        if (v.type === 'select' && v.options && !v.options.includes(value as string)) {
          throw invalidParam(`${v.variable} in input form must be one of the following: [${v.options.map((o) => `'${o}'`).join(', ')}]`);
        }
        if (v.max_length !== undefined && (value as string).length > v.max_length) {
          throw invalidParam(`${v.variable} in input form must be less than ${v.max_length} characters`);
        }
        break;
      }
      case 'number': {
        const n = typeof value === 'number' ? value : typeof value === 'string' && value.trim() !== '' ? Number(value) : NaN;
        if (!Number.isFinite(n)) throw invalidParam(`${v.variable} in input form must be a valid number`);
        value = n;
        break;
      }
      case 'checkbox':
        if (typeof value !== 'boolean') throw invalidParam(`${v.variable} in input form must be a boolean`);
        break;
      case 'json_object':
        if (!isObject(value)) throw invalidParam(`${v.variable} in input form must be a dict`);
        break;
      case 'file':
        if (!isFileRef(value)) throw invalidParam(`${v.variable} in input form must be a file`);
        break;
      case 'file-list':
        if (!Array.isArray(value) || !value.every(isFileRef)) throw invalidParam(`${v.variable} in input form must be a list of files`);
        if (v.max_length !== undefined && value.length > v.max_length) {
          throw invalidParam(`${v.variable} in input form must be less than ${v.max_length} files`);
        }
        if (v.max_length === undefined && value.length > maxFiles) {
          throw invalidParam(`${v.variable} in input form must be less than ${maxFiles} files (WORKFLOW_FILE_UPLOAD_LIMIT=${maxFiles})`);
        }
        break;
    }
    out[v.variable] = value;
  }
  return out;
}
