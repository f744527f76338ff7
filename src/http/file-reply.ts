import { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FilePreview } from '../files/file-preview.js';

/** Sends a file with its headers; for a HEAD request the file is not read. */
export function sendFile(request: FastifyRequest, reply: FastifyReply, preview: FilePreview): FastifyReply {
  reply.code(200).headers(preview.headers);
  // Fastify's HEAD route reads a Node stream to its end but cancels a web stream (and keeps the
  // Content-Length): the file is then not read for a HEAD.
  return reply.send(request.method === 'HEAD' ? Readable.toWeb(preview.body) : preview.body);
}

/** The origin this request came to (`http://host:port`), for URLs the server hands out when `FILES_URL` is not set. */
export function requestOrigin(request: FastifyRequest): string {
  return `${request.protocol}://${request.host}`;
}
