import { defineError, ServiceError } from '../infra/errors.js';

/** A model-provider failure, reported with Dify's codes. `isProviderError` tells it apart. */
export class ProviderError extends ServiceError {
  override name = 'ProviderError';
  /** The provider could not be reached (no answer at all); a model node names itself in the message. */
  connection = false;
}

const NOT_INITIALIZED =
  'No valid model provider credentials found. Please go to Settings -> Model Provider to complete your provider credentials.';

const notInitialized = defineError('provider_not_initialize', 400, (detail?: string) => detail ?? NOT_INITIALIZED);
const requestFailed = defineError('completion_request_error', 400, (message: string) => message || 'Completion request failed.');

/** 400 `provider_not_initialize`: the provider has no credentials (or is unknown); the message says which. */
export function providerNotInitialize(detail?: string): ProviderError {
  const e = notInitialized(detail);
  return new ProviderError(e.code, e.status, e.message);
}

/** 400 `completion_request_error` carrying the upstream's message. */
export function completionRequestError(message: string): ProviderError {
  const e = requestFailed(message);
  return new ProviderError(e.code, e.status, e.message);
}

/** `host:port` of a base URL, or the URL as given when it does not parse. */
function hostOf(url: string | undefined): string {
  if (!url) return 'its default address';
  try {
    return new URL(url).host;
  } catch {
    return url;
  }
}

/** What a network failure says underneath the SDK's "Connection error." (the deepest cause, with its code). */
function causeOf(err: unknown): string {
  let e: unknown = err;
  for (let i = 0; i < 5; i++) {
    const next: unknown = e instanceof Error ? (e as { cause?: unknown }).cause : undefined;
    if (!(next instanceof Error)) break;
    e = next;
  }
  if (!(e instanceof Error)) return String(e);
  const code = (e as { code?: unknown }).code;
  return typeof code === 'string' && code && !e.message.includes(code) ? `${code}: ${e.message}` : e.message;
}

/**
 * 400 `completion_request_error` for a provider that could not be reached: names the provider, its
 * host and what the network said (the SDKs say only "Connection error.").
 */
export function providerConnectionError(provider: string, url: string | undefined, cause: unknown): ProviderError {
  const why = causeOf(cause);
  const e = requestFailed(`Cannot connect to model provider "${provider}" at ${hostOf(url)}${why && why !== 'Connection error.' ? `: ${why}` : ''}.`);
  const out = new ProviderError(e.code, e.status, e.message);
  out.connection = true;
  return out;
}

export function isProviderError(err: unknown): err is ProviderError {
  return err instanceof ProviderError;
}
