import type { Socket } from 'node:net';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import type { HttpServerConfig } from '../config.js';
import { badRequest, requestHeaderFieldsTooLarge, requestTimeout, requestUriTooLarge } from '../infra/errors.js';
import { errorHandler, toErrorBody } from './errors.js';

const REASONS: Record<number, string> = { 400: 'Bad Request', 408: 'Request Timeout', 431: 'Request Header Fields Too Large' };

/**
 * Errors raised before a route runs — by the router (a path parameter over `HTTP_MAX_PARAM_LENGTH`,
 * a malformed escape) or by Node's HTTP parser (a request line + headers over `HTTP_MAX_HEADER_SIZE`,
 * garbage, a request whose headers and body did not all arrive within `HTTP_BODY_TIMEOUT_SECONDS`)
 * — answered in Dify's `{code, message, status}` envelope instead of Fastify's shape.
 */
export function listenerErrors(limits: HttpServerConfig, bodyTimeoutSeconds: number) {
  /** Fastify's `frameworkErrors`: the router's complaints, through the single error handler. */
  const frameworkErrors = (error: FastifyError, request: FastifyRequest, reply: FastifyReply): void => {
    const mapped =
      error.code === 'FST_ERR_MAX_PARAM_LENGTH'
        ? requestUriTooLarge(limits.maxParamLength)
        : error.code === 'FST_ERR_BAD_URL'
          ? badRequest('The request path is not a valid URL (a malformed %-escape).')
          : error;
    errorHandler(mapped, request, reply);
  };

  /** Node's `clientError`: the request never became one; answer on the socket and close it. */
  const clientErrorHandler = (err: NodeJS.ErrnoException, socket: Socket): void => {
    if (err.code === 'ECONNRESET' || socket.destroyed) return;
    const mapped =
      err.code === 'HPE_HEADER_OVERFLOW'
        ? requestHeaderFieldsTooLarge(limits.maxHeaderBytes)
        : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? requestTimeout(bodyTimeoutSeconds)
          : badRequest('The request could not be parsed as HTTP.');
    const { body } = toErrorBody(mapped);
    const text = JSON.stringify(body);
    // A response that has begun (a route answered, a stream is open) cannot be replaced: only close.
    const started = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent === true;
    if (socket.writable && !started) {
      socket.write(`HTTP/1.1 ${body.status} ${REASONS[body.status] ?? 'Error'}\r\nContent-Length: ${Buffer.byteLength(text)}\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n${text}`);
    }
    socket.destroySoon();
  };

  return { frameworkErrors, clientErrorHandler };
}
