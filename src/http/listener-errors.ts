import type { Socket } from 'node:net';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import type { HttpServerConfig } from '../config.js';
import { errorHandler, type ErrorBody } from './errors.js';

/**
 * Errors raised before a route runs — by the router (a path parameter over `HTTP_MAX_PARAM_LENGTH`,
 * a malformed escape) or by Node's HTTP parser (a request line + headers over `HTTP_MAX_HEADER_SIZE`,
 * garbage) — answered in Dify's `{code, message, status}` envelope instead of Fastify's shape.
 */
export function listenerErrors(limits: HttpServerConfig) {
  /** Fastify's `frameworkErrors`: the router's complaints, through the single error handler. */
  const frameworkErrors = (error: FastifyError, request: FastifyRequest, reply: FastifyReply): void => {
    const body: ErrorBody | undefined =
      error.code === 'FST_ERR_MAX_PARAM_LENGTH'
        ? { code: 'request_uri_too_large', message: `A path parameter is longer than ${limits.maxParamLength} characters (HTTP_MAX_PARAM_LENGTH).`, status: 414 }
        : error.code === 'FST_ERR_BAD_URL'
          ? { code: 'bad_request', message: 'The request path is not a valid URL (a malformed %-escape).', status: 400 }
          : undefined;
    if (!body) return errorHandler(error, request, reply);
    void reply.code(body.status).type('application/json').send(body);
  };

  /** Node's `clientError`: the request never became one; answer on the socket and close it. */
  const clientErrorHandler = (err: NodeJS.ErrnoException, socket: Socket): void => {
    if (err.code === 'ECONNRESET' || socket.destroyed) return;
    const body: ErrorBody =
      err.code === 'HPE_HEADER_OVERFLOW'
        ? { code: 'request_header_fields_too_large', message: `The request line and headers exceed ${limits.maxHeaderBytes} bytes (HTTP_MAX_HEADER_SIZE).`, status: 431 }
        : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? { code: 'request_timeout', message: 'The request was not received in time.', status: 408 }
          : { code: 'bad_request', message: 'The request could not be parsed as HTTP.', status: 400 };
    const text = JSON.stringify(body);
    const reason = { 400: 'Bad Request', 408: 'Request Timeout', 431: 'Request Header Fields Too Large' }[body.status];
    if (socket.writable) {
      socket.write(`HTTP/1.1 ${body.status} ${reason}\r\nContent-Length: ${Buffer.byteLength(text)}\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n${text}`);
    }
    socket.destroy();
  };

  return { frameworkErrors, clientErrorHandler };
}
