import type { FastifyInstance } from 'fastify';
import type { Runtime } from '../runtime.js';
import { endOpenStreams } from './sse.js';
import { serverShuttingDown } from '../infra/errors.js';

const shuttingDown = serverShuttingDown();
/** The last frame of a stream still open when the shutdown grace period ends (Dify's stream `error` event shape). */
export const SHUTDOWN_FRAME = Object.freeze({ event: 'error', status: shuttingDown.status, code: shuttingDown.code, message: shuttingDown.message });

/**
 * Graceful shutdown, in order: stop accepting connections (requests on kept-alive connections get
 * 503), let blocking requests and streams finish for up to `timeoutMs`, then hand the runs still
 * executing back (saved, continued by recovery on any instance or at the next start), end the open
 * streams with SHUTDOWN_FRAME, close the remaining connections, flush and close the runtime.
 */
export async function shutDownGracefully(app: FastifyInstance, runtime: Runtime, timeoutMs: number): Promise<void> {
  const log = runtime.logger;
  const closed = app.close();
  let timer: NodeJS.Timeout | undefined;
  const drained = await Promise.race([
    closed.then(() => true),
    new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), timeoutMs);
    }),
  ]);
  clearTimeout(timer);
  const handedBack = await runtime.runs.handBack();
  if (handedBack > 0) log.info({ runs: handedBack }, 'runs handed back; they continue at the next start or on another instance');
  if (!drained) {
    const ended = endOpenStreams(app.server, SHUTDOWN_FRAME);
    log.warn({ streams: ended, timeoutMs }, 'shutdown grace period over: open streams ended');
    app.server.closeAllConnections();
    await closed;
  }
  await runtime.close();
}
