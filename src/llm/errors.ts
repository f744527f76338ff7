import { defineError, ServiceError } from '../infra/errors.js';

/** A model-provider failure, reported with Dify's codes. `isProviderError` tells it apart. */
export class ProviderError extends ServiceError {
  override name = 'ProviderError';
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

export function isProviderError(err: unknown): err is ProviderError {
  return err instanceof ProviderError;
}
