/**
 * A failure the API reports with Dify's envelope `{code, message, status}`. Domain modules declare
 * their errors with `defineError` in `src/<domain>/errors.ts`; only `src/http/errors.ts` turns
 * them into a response.
 */
export class ServiceError extends Error {
  override name = 'ServiceError';
  constructor(
    readonly code: string,
    readonly status: number,
    message: string,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
  }
}

const registry = new Map<string, number>();

/** All codes declared with `defineError`, with their HTTP status. */
export function declaredErrorCodes(): ReadonlyMap<string, number> {
  return registry;
}

/**
 * Declares a coded error. The factory's arguments fill the message, so each message names the
 * field or limit involved. A code is declared once: a second declaration throws when its module
 * loads (one code, one status and one place that says what it means; a module that needs the
 * error imports the declaring one).
 */
export function defineError<A extends unknown[]>(
  code: string,
  status: number,
  message: (...args: A) => string,
  headers?: (...args: A) => Record<string, string>,
): (...args: A) => ServiceError {
  if (registry.has(code)) throw new Error(`error code "${code}" is declared twice (defineError): import the module that declares it instead`);
  registry.set(code, status);
  return (...args: A) => new ServiceError(code, status, message(...args), headers?.(...args));
}

/** Errors every layer uses. */
export const invalidParam = defineError('invalid_param', 400, (message: string) => message);
export const notFound = defineError('not_found', 404, (message: string) => message);
export const forbidden = defineError('forbidden', 403, (message: string) => message);
export const badRequest = defineError('bad_request', 400, (message: string) => message);
export const unauthorized = defineError(
  'unauthorized',
  401,
  (message: string) => message,
  () => ({ 'www-authenticate': 'Bearer realm="api"' }),
);
/** 408: the request's headers and body did not all arrive within `HTTP_BODY_TIMEOUT_SECONDS`. */
export const requestTimeout = defineError(
  'request_timeout',
  408,
  (seconds: number) => `The request was not received within HTTP_BODY_TIMEOUT_SECONDS (${seconds} s).`,
);
/** The last frame of a stream still open when a graceful shutdown's grace period (`SHUTDOWN_TIMEOUT_SECONDS`) ends. */
export const serverShuttingDown = defineError(
  'server_shutting_down',
  503,
  () => 'The server is shutting down (SHUTDOWN_TIMEOUT_SECONDS elapsed). A workflow or chatflow run continues after the restart or on another instance: follow it with GET /v1/workflow/{workflow_run_id}/events.',
);
export const unsupportedMediaType = defineError('unsupported_media_type', 415, (message: string) => message);
export const methodNotAllowed = defineError(
  'method_not_allowed',
  405,
  () => 'The method is not allowed for the requested URL.',
);
export const internalServerError = defineError(
  'internal_server_error',
  500,
  () =>
    'The server encountered an internal error and was unable to complete your request. Either the server is overloaded or there is an error in the application.',
);
export const tooManyRequests = defineError(
  'too_many_requests',
  429,
  (appId: string, limit: number) =>
    `Too many requests. Please try again later. The current maximum concurrent requests allowed for ${appId} is ${limit}.`,
  () => ({ 'retry-after': '1' }),
);

/** A path parameter over `HTTP_MAX_PARAM_LENGTH` characters (the router refuses it before any route). */
export const requestUriTooLarge = defineError(
  'request_uri_too_large',
  414,
  (limit: number) => `A path parameter is longer than ${limit} characters (HTTP_MAX_PARAM_LENGTH).`,
);
/** A request line and headers over `HTTP_MAX_HEADER_SIZE` bytes (Node's parser refuses them). */
export const requestHeaderFieldsTooLarge = defineError(
  'request_header_fields_too_large',
  431,
  (limit: number) => `The request line and headers exceed ${limit} bytes (HTTP_MAX_HEADER_SIZE).`,
);
/** `GET /ready` while the database does not answer or migrations are pending (the reason follows). */
export const notReady = defineError('not_ready', 503, (reason: string) => `Not ready: ${reason}.`);
