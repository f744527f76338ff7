import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { ServiceError } from '../infra/errors.js';

/** The Dify error envelope. */
export interface ErrorBody {
  code: string;
  message: string;
  status: number;
}

const STATUS_CODES: Record<number, string> = {
  400: 'bad_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  408: 'request_timeout',
  409: 'conflict',
  411: 'length_required',
  412: 'precondition_failed',
  413: 'request_entity_too_large',
  414: 'request_uri_too_large',
  415: 'unsupported_media_type',
  422: 'unprocessable_entity',
  429: 'too_many_requests',
  431: 'request_header_fields_too_large',
};

const INVALID_JSON = 'Invalid JSON payload received or JSON payload is empty.';
const INTERNAL =
  'The server encountered an internal error and was unable to complete your request. Either the server is overloaded or there is an error in the application.';

interface AjvIssue {
  instancePath: string;
  keyword: string;
  message?: string;
  params: Record<string, unknown>;
}

/** Turns an Ajv issue into a sentence that names the field. */
export function describeValidation(issue: AjvIssue, context: string | undefined): string {
  const base = issue.instancePath.replace(/^\//, '').replaceAll('/', '.');
  const field =
    issue.keyword === 'required'
      ? [base, String(issue.params.missingProperty)].filter(Boolean).join('.')
      : issue.keyword === 'additionalProperties'
        ? [base, String(issue.params.additionalProperty)].filter(Boolean).join('.')
        : base || context || 'body';
  const p = issue.params;
  switch (issue.keyword) {
    case 'required':
      return `${field} is required`;
    case 'type':
      return `${field} must be ${p.type === 'integer' ? 'an integer' : `of type ${String(p.type)}`}`;
    case 'minimum':
      return `${field} must be greater than or equal to ${String(p.limit)}`;
    case 'maximum':
      return `${field} must be less than or equal to ${String(p.limit)}`;
    case 'minLength':
      return `${field} must be at least ${String(p.limit)} characters`;
    case 'maxLength':
      return `${field} must be at most ${String(p.limit)} characters`;
    case 'enum':
      return `${field} must be one of: ${(p.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`;
    case 'const':
      return `${field} must be ${JSON.stringify(p.allowedValue)}`;
    case 'anyOf':
    case 'oneOf':
      return `${field} has an invalid value`;
    case 'additionalProperties':
      return `${field} is not allowed`;
    case 'format':
      return `${field} must be a valid ${String(p.format)}`;
    default:
      return `${field} ${issue.message ?? 'is invalid'}`;
  }
}

/**
 * A union of literals (`Type.Union([Type.Literal(a), Type.Literal(b)])`) fails with one `const`
 * issue per member: the first issue, made an `enum` issue listing every allowed value (and `null`
 * when the union takes it), so the message names them all.
 */
export function unionOfConstants(issues: readonly AjvIssue[]): AjvIssue {
  const first = issues[0]!;
  if (first.keyword !== 'const') return first;
  const same = issues.filter((i) => i.instancePath === first.instancePath);
  const values = same.filter((i) => i.keyword === 'const').map((i) => i.params.allowedValue);
  if (same.some((i) => i.keyword === 'type' && i.params.type === 'null')) values.push(null);
  return values.length > 1 ? { ...first, keyword: 'enum', params: { allowedValues: values } } : first;
}


/** Longest error message sent; longer ones echo a value the client sent (cut, never dropped). */
export const ERROR_MESSAGE_MAX_CHARS = 1000;
/** Longest run of non-space characters kept in an error message (a value echoed back). */
export const ERROR_ECHO_MAX_CHARS = 100;

/**
 * Bounds a message: each run of non-space characters over `ERROR_ECHO_MAX_CHARS` (an echoed value)
 * is cut with `…`, then the whole to `ERROR_MESSAGE_MAX_CHARS`. Short messages pass unchanged, so a
 * 2 MB `conversation_id` answers a 400 of a few hundred bytes that still names the field.
 */
export function boundMessage(message: string): string {
  if (message.length <= ERROR_ECHO_MAX_CHARS) return message;
  const cut = message.replace(new RegExp(`\\S{${ERROR_ECHO_MAX_CHARS + 1},}`, 'g'), (run) => `${run.slice(0, ERROR_ECHO_MAX_CHARS)}…`);
  return cut.length <= ERROR_MESSAGE_MAX_CHARS ? cut : `${cut.slice(0, ERROR_MESSAGE_MAX_CHARS)}…`;
}

/** Maps any thrown value to status, envelope and extra headers, the message bounded (`boundMessage`). */
export function toErrorBody(err: unknown): { body: ErrorBody; headers: Record<string, string> } {
  const r = errorBodyOf(err);
  return { body: { ...r.body, message: boundMessage(r.body.message) }, headers: r.headers };
}

function errorBodyOf(err: unknown): { body: ErrorBody; headers: Record<string, string> } {
  if (err instanceof ServiceError) {
    return { body: { code: err.code, message: err.message, status: err.status }, headers: { ...err.headers } };
  }
  const fe = err as FastifyError & { validation?: AjvIssue[]; validationContext?: string };
  if (fe && Array.isArray(fe.validation) && fe.validation.length > 0) {
    return {
      body: { code: 'invalid_param', message: describeValidation(unionOfConstants(fe.validation), fe.validationContext), status: 400 },
      headers: {},
    };
  }
  switch (fe?.code) {
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return { body: { code: 'bad_request', message: INVALID_JSON, status: 400 }, headers: {} };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return {
        body: {
          code: 'unsupported_media_type',
          message: "Did not attempt to load JSON data because the request Content-Type was not 'application/json'.",
          status: 415,
        },
        headers: {},
      };
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return { body: { code: 'request_entity_too_large', message: 'The request body is larger than the server accepts.', status: 413 }, headers: {} };
    case 'FST_INVALID_MULTIPART_CONTENT_TYPE':
      return { body: { code: 'unsupported_media_type', message: 'The request must be multipart/form-data.', status: 415 }, headers: {} };
    default:
      break;
  }
  // PostgreSQL refuses NUL characters in text ("invalid byte sequence for encoding UTF8: 0x00").
  if (fe?.code === '22021' || fe?.code === '22P05') {
    return { body: { code: 'invalid_param', message: 'Text values must not contain NUL (\\u0000) characters.', status: 400 }, headers: {} };
  }
  if (fe instanceof SyntaxError || fe?.name === 'SyntaxError') {
    return { body: { code: 'bad_request', message: INVALID_JSON, status: 400 }, headers: {} };
  }
  const status = typeof fe?.statusCode === 'number' ? fe.statusCode : 500;
  if (status >= 400 && status < 500) {
    return { body: { code: STATUS_CODES[status] ?? 'bad_request', message: fe.message, status }, headers: {} };
  }
  return { body: { code: 'internal_server_error', message: INTERNAL, status: 500 }, headers: {} };
}

/** The single error handler: every failure leaves as `{code, message, status}`. */
export function errorHandler(err: unknown, request: FastifyRequest, reply: FastifyReply): void {
  const { body, headers } = toErrorBody(err);
  if (body.status >= 500) request.log.error({ err, reqId: request.id }, 'unhandled error');
  else request.log.info({ code: body.code, status: body.status }, 'request rejected');
  if (reply.sent || reply.raw.headersSent) return;
  void reply.code(body.status).headers(headers).type('application/json').send(body);
}
