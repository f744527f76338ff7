import { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import ipaddr from 'ipaddr.js';
import type { FilePreview } from '../files/file-preview.js';

/** Sends a file with its headers; for a HEAD request the file is not read. */
export function sendFile(request: FastifyRequest, reply: FastifyReply, preview: FilePreview): FastifyReply {
  reply.code(preview.status).headers(preview.headers);
  // Fastify's HEAD route reads a Node stream to its end but cancels a web stream (and keeps the
  // Content-Length): the file is then not read for a HEAD.
  return reply.send(request.method === 'HEAD' ? Readable.toWeb(preview.body) : preview.body);
}

function unmapped(ip: string): string {
  return ip.startsWith('::ffff:') && ip.includes('.') ? ip.slice(7) : ip;
}

/** True when the peer of this connection is a proxy `TRUST_PROXY` names (`true` trusts any). */
function fromTrustedProxy(request: FastifyRequest, trustProxy: boolean | readonly string[]): boolean {
  if (typeof trustProxy === 'boolean') return trustProxy;
  const peer = request.socket.remoteAddress;
  if (!peer || !ipaddr.isValid(peer)) return false;
  const addr = ipaddr.process(peer);
  return trustProxy.some((entry) => {
    try {
      const [net, bits] = entry.includes('/') ? ipaddr.parseCIDR(entry) : [ipaddr.process(entry), addr.kind() === 'ipv4' ? 32 : 128];
      return net.kind() === addr.kind() && addr.match(net, bits);
    } catch {
      return false;
    }
  });
}

/**
 * The origin for URLs the server hands out when `FILES_URL` is not set: the host the client named
 * (or `X-Forwarded-Host`) only when the request came through a proxy `TRUST_PROXY` trusts; else the
 * address and port the connection reached, which no client header can change.
 */
export function requestOrigin(request: FastifyRequest, trustProxy: boolean | readonly string[]): string {
  if (fromTrustedProxy(request, trustProxy)) return `${request.protocol}://${request.host}`;
  const local = unmapped(request.socket.localAddress ?? '127.0.0.1');
  const host = local.includes(':') ? `[${local}]` : local;
  return `${request.protocol}://${host}:${request.socket.localPort ?? 80}`;
}
