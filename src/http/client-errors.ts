import type { Socket } from 'node:net';
import { requestTimeout } from '../infra/errors.js';
import { toErrorBody } from './errors.js';

const REASONS: Record<number, string> = { 400: 'Bad Request', 408: 'Request Timeout', 431: 'Request Header Fields Too Large' };

/**
 * Fastify's `clientErrorHandler`: errors Node raises on a connection before (or while) a request
 * reaches a route, answered in Dify's envelope, then the connection is closed. A request whose
 * headers and body are not all received within `HTTP_BODY_TIMEOUT_SECONDS` is a 408.
 */
export function clientErrorHandler(bodyTimeoutSeconds: number): (err: NodeJS.ErrnoException, socket: Socket) => void {
  return (err, socket) => {
    if (err.code === 'ECONNRESET' || socket.destroyed) return;
    const { body } = toErrorBody(
      err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? requestTimeout(bodyTimeoutSeconds)
        : err.code === 'HPE_HEADER_OVERFLOW'
          ? { statusCode: 431, message: 'The request headers are larger than the server accepts.' }
          : { statusCode: 400, message: 'The request could not be parsed as HTTP/1.1.' },
    );
    // A response that has begun (a route answered, a stream is open) cannot be replaced: only close.
    const started = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent === true;
    if (socket.writable && !started) {
      const json = JSON.stringify(body);
      socket.write(
        `HTTP/1.1 ${body.status} ${REASONS[body.status] ?? 'Bad Request'}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(json)}\r\nConnection: close\r\n\r\n${json}`,
      );
    }
    socket.destroySoon();
  };
}
