import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { notFound } from '../../infra/errors.js';
import type { Runtime } from '../../runtime.js';
import { consoleShell } from '../../web/console-shell.js';

/** The runtime members these routes use (server.ts hands them nothing else). */
export type ConsolePageRouteDeps = Pick<Runtime, 'logger'>;

const NOT_BUILT = 'The console pages are not built: run `npm run build` (it bundles web/ into dist/web-app/).';

/** The console page's headers: our own script and style only, no framing, no referrer, never cached. */
function consolePageHeaders(reply: FastifyReply): FastifyReply {
  return reply
    .header('content-security-policy', "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
    .header('x-frame-options', 'DENY')
    .header('referrer-policy', 'no-referrer')
    .header('x-content-type-options', 'nosniff')
    .header('cache-control', 'no-store');
}

/**
 * The console's pages: `/console` and every path under it (the page routes by path itself), one
 * shell whose bundle is served with the web app's under `/web-app/`. `/console/api/…` is the
 * console's JSON API (src/http/console/); an unknown path there is a JSON 404, not the page.
 */
export const consolePageRoutes: FastifyPluginAsync<{ runtime: ConsolePageRouteDeps }> = async (app, { runtime }) => {
  if (consoleShell() === null) runtime.logger.warn(NOT_BUILT);
  const page = async (request: FastifyRequest, reply: FastifyReply) => {
    if (request.url.startsWith('/console/api/') || request.url === '/console/api') throw notFound('The requested URL was not found on the server.');
    consolePageHeaders(reply);
    const html = consoleShell();
    if (!html) return reply.code(503).type('text/plain; charset=utf-8').send(NOT_BUILT);
    return reply.type('text/html; charset=utf-8').send(html);
  };
  app.get('/console', page);
  app.get('/console/*', page);
};
