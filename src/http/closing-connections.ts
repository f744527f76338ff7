import diagnostics from 'node:diagnostics_channel';
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';

/** Servers that have begun to close. */
const closing = new WeakSet<Server>();

/** A response that finishes while its server closes ends its connection (after the last byte). */
function onResponseFinish(message: unknown): void {
  const { server, socket } = message as { server: Server; socket: Socket };
  if (closing.has(server)) socket.destroySoon();
}

/**
 * Subscribed when a server of this process first begins to close: while the channel has no
 * subscriber, Node builds no message for it, so a serving process pays nothing per response.
 */
let subscribed = false;

/**
 * Lets a closing server's kept-alive connections go, so that `close()` (and a graceful shutdown)
 * ends when the last response does rather than when the last client lets go of its connection
 * (clients keep one for the `Keep-Alive: timeout` the server sends, 72 s). Node's `close()` closes
 * only the connections idle at that moment, and counts a connection that has not sent a byte yet
 * (a client's spare one) as busy. Here, when the close begins, every connection without a response
 * in progress is closed; every response that finishes later closes its own.
 */
export function releaseConnectionsOnClose(app: FastifyInstance): void {
  const server = app.server;
  const open = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    open.add(socket);
    socket.once('close', () => open.delete(socket));
  });
  app.addHook('preClose', (done) => {
    closing.add(server);
    if (!subscribed) {
      subscribed = true;
      diagnostics.subscribe('http.server.response.finish', onResponseFinish);
    }
    // `_httpMessage`: the response the connection is serving (Node's own idle check reads it too)
    for (const socket of open) if (!(socket as { _httpMessage?: unknown })._httpMessage) socket.destroy();
    done();
  });
}
