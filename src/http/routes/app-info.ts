import type { FastifyPluginAsync } from 'fastify';
import { appInfo, appParameters } from '../../apps/parameters.js';
import type { Runtime } from '../../runtime.js';
import { requireApp } from '../auth.js';

/** `GET /info`, `GET /parameters`, `GET /meta` for app keys. */
export const appInfoRoutes: FastifyPluginAsync<{ runtime: Runtime }> = async (app, { runtime }) => {
  const paramsCache = new WeakMap<object, string>();

  app.get('/info', async (request) => appInfo(requireApp(request)));

  app.get('/parameters', async (request, reply) => {
    const a = requireApp(request);
    let body = paramsCache.get(a);
    if (body === undefined) {
      body = JSON.stringify(appParameters(a, runtime.config.upload));
      paramsCache.set(a, body);
    }
    return reply.type('application/json').send(body);
  });

  app.get('/meta', async () => ({ tool_icons: {} }));
};
