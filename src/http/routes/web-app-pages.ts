import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { Runtime } from '../../runtime.js';
import { webAppShell, webAssets, type WebAsset, type WebPage } from '../../web/web-app-assets.js';
import { webAppPageHeaders } from '../web-form-access.js';

/** The runtime members these routes use (server.ts hands them nothing else). */
export type WebAppPageRouteDeps = Pick<Runtime, 'logger' | 'sites'>;

interface CodeParams {
  code: string;
}

/** An asset's bytes, gzipped when the client accepts it (the bundles are gzipped once, at load). */
function sendAsset(request: FastifyRequest, reply: FastifyReply, asset: WebAsset): FastifyReply {
  reply.type(asset.type).header('x-content-type-options', 'nosniff').header('vary', 'accept-encoding');
  if (/\bgzip\b/.test(String(request.headers['accept-encoding'] ?? ''))) return reply.header('content-encoding', 'gzip').send(asset.gzip);
  return reply.send(asset.body);
}

const NOT_BUILT = 'The web app pages are not built: run `npm run build` (it bundles web/ into dist/web-app/).';

/**
 * The web app's pages for people, as Dify serves them: `/chat/{code}`, `/chatbot/{code}` (the same
 * chat for an iframe: the only page other sites may frame), `/completion/{code}`, `/workflow/{code}`;
 * their bundles under `/web-app/`; and `/embed.min.js` (Dify's chat bubble script, also as
 * `/embed.js`). A page is a static shell: its script reads the site and the app through `/api`
 * with the browser's passport, which answers a disabled site as Dify does; a code no site has is
 * the same shell with status 404 (its script shows the passport's refusal).
 */
export const webAppPageRoutes: FastifyPluginAsync<{ runtime: WebAppPageRouteDeps }> = async (app, { runtime }) => {
  if (webAssets().size === 0) runtime.logger.warn(NOT_BUILT);

  const page = (kind: WebPage) => async (request: FastifyRequest<{ Params: CodeParams }>, reply: FastifyReply) => {
    const html = webAppShell(kind);
    webAppPageHeaders(reply, kind === 'chatbot');
    if (!html) return reply.code(503).type('text/plain; charset=utf-8').send(NOT_BUILT);
    const known = /^[A-Za-z0-9_-]{1,64}$/.test(request.params.code) && (await runtime.sites.byCode(request.params.code)) !== undefined;
    return reply.code(known ? 200 : 404).type('text/html; charset=utf-8').send(html);
  };
  for (const kind of ['chat', 'chatbot', 'completion', 'workflow'] as const) {
    app.get<{ Params: CodeParams }>(`/${kind}/:code`, page(kind));
  }

  app.get<{ Params: { file: string }; Querystring: { v?: string } }>('/web-app/:file', async (request, reply) => {
    const asset = webAssets().get(request.params.file);
    if (!asset || request.params.file === 'embed.min.js') return reply.code(404).send({ code: 'not_found', message: 'The requested URL was not found on the server.', status: 404 });
    const immutable = request.query.v === asset.hash;
    return sendAsset(request, reply.header('cache-control', immutable ? 'public, max-age=31536000, immutable' : 'public, max-age=300'), asset);
  });

  const embed = async (request: FastifyRequest, reply: FastifyReply) => {
    const asset = webAssets().get('embed.min.js');
    if (!asset) return reply.code(503).type('text/plain; charset=utf-8').send(NOT_BUILT);
    // loaded by other sites' pages (a plain <script src>), so cached briefly: a new version reaches them within the hour
    return sendAsset(request, reply.header('cache-control', 'public, max-age=3600').header('cross-origin-resource-policy', 'cross-origin'), asset);
  };
  app.get('/embed.min.js', embed);
  app.get('/embed.js', embed);
};
