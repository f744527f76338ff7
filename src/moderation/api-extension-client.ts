import { RemoteFetchError, sendRemote } from '../files/remote-fetch.js';
import { invalidParam } from '../infra/errors.js';
import { isObject } from '../infra/objects.js';
import type { ApiBasedExtension, ModerationConfig } from './moderation-config.js';

/** The points of Dify's API-based extension protocol Dovetail calls. */
export const EXTENSION_POINTS = ['app.moderation.input', 'app.moderation.output', 'app.external_data_tool.query'] as const;
export type ExtensionPoint = (typeof EXTENSION_POINTS)[number];

/** A request to an extension named by a DSL: the id and the DSL setting that names it (for errors). */
export interface ExtensionRef {
  readonly id: string;
  /** Where the DSL names the extension, e.g. `sensitive_word_avoidance.config.api_based_extension_id`. */
  readonly setting: string;
}

/** The extension `ref` names, or a 400 `invalid_param` naming the id, the DSL setting and `api_based_extensions`. */
export function requireExtension(extensions: readonly ApiBasedExtension[], ref: ExtensionRef): ApiBasedExtension {
  const found = ref.id === '' ? undefined : extensions.find((e) => e.id === ref.id);
  if (found) return found;
  const what = ref.id === '' ? 'no API-based extension id' : `API-based extension "${ref.id}", which is not configured here`;
  throw invalidParam(`${ref.setting} names ${what}: add {id: ${ref.id === '' ? '…' : ref.id}, name, api_endpoint, api_key} to api_based_extensions in dovetail.yaml`);
}

/**
 * Dify's API-based extension requestor: `POST <api_endpoint>` with `Authorization: Bearer <api_key>`
 * and `{"point", "params"}`; a 200 JSON object is the answer. Every request goes through the SSRF
 * guard (`SSRF_ALLOW_HOSTS`), with `API_EXTENSION_TIMEOUT` and `API_EXTENSION_RESPONSE_MAX_SIZE`.
 * Failures are 400 `invalid_param` (Dify raises `ValueError`) naming the extension and the point;
 * the key never appears in them.
 */
export class ApiExtensionClient {
  readonly #config: ModerationConfig;
  readonly #allowHosts: readonly string[];

  constructor(config: ModerationConfig, allowHosts: readonly string[]) {
    this.#config = config;
    this.#allowHosts = allowHosts;
  }

  /** The configured extension `ref` names (see `requireExtension`). */
  extension(ref: ExtensionRef): ApiBasedExtension {
    return requireExtension(this.#config.extensions, ref);
  }

  async call(ref: ExtensionRef, point: ExtensionPoint, params: Record<string, unknown>, signal?: AbortSignal): Promise<Record<string, unknown>> {
    const ext = this.extension(ref);
    const c = this.#config;
    const fail = (why: string) => invalidParam(`API-based extension "${ext.id}" (${point}): ${why.split(ext.apiKey).join('***')}`);
    let res;
    try {
      res = await sendRemote(
        {
          method: 'POST',
          url: ext.apiEndpoint,
          headers: { 'content-type': 'application/json', authorization: `Bearer ${ext.apiKey}`, 'user-agent': 'Dovetail' },
          body: JSON.stringify({ point, params }),
        },
        {
          maxBytes: c.extensionMaxResponseBytes,
          limitName: 'API_EXTENSION_RESPONSE_MAX_SIZE',
          allowHosts: this.#allowHosts,
          connectTimeoutMs: c.extensionTimeoutSeconds * 1000,
          readTimeoutMs: c.extensionTimeoutSeconds * 1000,
          totalTimeoutMs: c.extensionTimeoutSeconds * 1000,
          totalTimeoutName: `API_EXTENSION_TIMEOUT=${c.extensionTimeoutSeconds}`,
          ...(signal ? { signal } : {}),
        },
      );
    } catch (err) {
      if (signal?.aborted) throw err;
      throw fail(err instanceof RemoteFetchError ? err.message : `request connection error: ${(err as Error).message}`);
    }
    const text = res.body.toString('utf8');
    if (res.status !== 200) throw fail(`request error, status_code: ${res.status}, content: ${text.slice(0, 100)}`);
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw fail(`the answer is not JSON: ${text.slice(0, 100)}`);
    }
    if (!isObject(parsed)) throw fail('the answer is not a JSON object');
    return parsed;
  }
}
