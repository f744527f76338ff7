import type { UploadLimits } from '../config.js';
import type { RunFiles } from '../engine/types.js';
import { isObject } from '../infra/objects.js';
import { SUPPORTED_EXTENSIONS } from '../knowledge/ingest/parse/index.js';
import type { DocumentParser } from '../knowledge/ingest/parse/document-parser.js';
import { categoryOf, extensionOf, sizeLimitFor } from './file-types.js';
import { fetchRemote, RemoteFetchError } from './remote-fetch.js';
import type { UploadedFile, UploadService } from './upload-service.js';

/** Transfer methods whose file is stored here (`tool_file`: a tool's output, stored like an upload). */
const STORED = new Set(['local_file', 'tool_file']);

interface Resolved {
  readonly mapping: Record<string, unknown>;
  readonly stored: UploadedFile | undefined;
  readonly url: string | undefined;
}

/**
 * The engine's file port: a caller's file reference or a Dify File mapping resolved to the stored
 * upload (uploaded through the same app, or a tool file of its runs) or to its remote URL, described as Dify's File mapping and read
 * through the knowledge parsers (on a worker thread, within the `PARSE_*` limits). Remote bytes come through the SSRF guard, capped by the upload
 * size limits (`UPLOAD_FILE_SIZE_LIMIT`, …).
 */
export class UploadRunFiles implements RunFiles {
  readonly #uploads: UploadService;
  readonly #limits: UploadLimits;
  readonly #allowHosts: readonly string[];
  readonly #parser: DocumentParser;
  readonly #owns: (f: UploadedFile, scope: string) => boolean;

  /**
   * `owns`: whether a stored file may be read by the caller `scope` names (default: the app's own
   * uploads and tool files; knowledge pipelines read their workspace's app-less uploads).
   */
  constructor(deps: { uploads: UploadService; limits: UploadLimits; allowHosts: readonly string[]; parser: DocumentParser; owns?: (f: UploadedFile, scope: string) => boolean }) {
    this.#owns = deps.owns ?? ((f, appId) => f.appId === appId);
    this.#uploads = deps.uploads;
    this.#parser = deps.parser;
    this.#limits = deps.limits;
    this.#allowHosts = deps.allowHosts;
  }

  async describe(ref: unknown, appId: string): Promise<Record<string, unknown>> {
    return (await this.#resolve(ref, appId)).mapping;
  }

  async extractText(ref: unknown, appId: string, signal: AbortSignal): Promise<string> {
    const r = await this.#resolve(ref, appId);
    const ext = String(r.mapping.extension ?? '').replace(/^\./, '').toLowerCase();
    if (ext === '') throw new Error(`file ${String(r.mapping.filename)} has no extension, so its type is unknown`);
    // Dify's message for a type no extractor reads
    if (!SUPPORTED_EXTENSIONS.includes(ext)) throw new Error(`Unsupported Extension Type: .${ext}`);
    let bytes: Buffer | undefined;
    if (r.stored) {
      bytes = await this.#uploads.read(r.stored);
      if (!bytes) throw new Error(`file ${r.stored.id} is no longer stored`);
    } else {
      try {
        bytes = (await fetchRemote(r.url!, { maxBytes: sizeLimitFor(ext, this.#limits).bytes, allowHosts: this.#allowHosts, signal })).body;
      } catch (err) {
        if (err instanceof RemoteFetchError) throw new Error(`cannot fetch ${r.url}: ${err.message}`);
        throw err;
      }
    }
    return this.#parser.parse(bytes, ext, { name: String(r.mapping.filename || `file.${ext}`), allowEmpty: true, signal });
  }

  async #resolve(ref: unknown, appId: string): Promise<Resolved> {
    if (!isObject(ref) || typeof ref.transfer_method !== 'string') throw new Error('not a file (no transfer_method)');
    const method = ref.transfer_method;
    if (STORED.has(method)) {
      const id = [ref.upload_file_id, ref.related_id, ref.id].find((x): x is string => typeof x === 'string' && x !== '');
      if (!id) throw new Error(`a ${method} file needs upload_file_id`);
      const f = await this.#uploads.find(id);
      // only this app's uploads and tool files: a knowledge document's file (no app) is not the app's to read
      if (!f || !this.#owns(f, appId)) throw new Error(`file ${id} not found`);
      return { stored: f, url: undefined, mapping: mapping(ref, method, f.id, f.name, f.extension, f.mimeType, f.size, null) };
    }
    if (method === 'remote_url') {
      const url = typeof ref.url === 'string' && ref.url ? ref.url : typeof ref.remote_url === 'string' ? ref.remote_url : '';
      if (!/^https?:\/\//i.test(url)) throw new Error('a remote_url file needs an http(s) url');
      const name = typeof ref.filename === 'string' && ref.filename ? ref.filename : decodeURIComponent(new URL(url).pathname.split('/').pop() ?? '');
      const ext = typeof ref.extension === 'string' && ref.extension ? ref.extension.replace(/^\./, '') : extensionOf(name);
      const mime = typeof ref.mime_type === 'string' ? ref.mime_type : '';
      const size = typeof ref.size === 'number' ? ref.size : -1;
      return { stored: undefined, url, mapping: mapping(ref, method, typeof ref.id === 'string' ? ref.id : '', name, ext, mime, size, url) };
    }
    throw new Error(`transfer_method ${method} is not supported (supported: local_file, remote_url, tool_file)`);
  }
}

function mapping(ref: Record<string, unknown>, method: string, id: string, filename: string, ext: string, mime: string, size: number, url: string | null): Record<string, unknown> {
  return {
    dify_model_identity: '__dify__file__',
    id: typeof ref.id === 'string' ? ref.id : id,
    type: typeof ref.type === 'string' && ref.type ? ref.type : categoryOf(ext),
    transfer_method: method,
    remote_url: url,
    related_id: method === 'remote_url' ? null : id,
    ...(method === 'local_file' ? { upload_file_id: id } : {}),
    filename,
    extension: ext ? `.${ext}` : '',
    mime_type: mime,
    size,
    url,
  };
}
