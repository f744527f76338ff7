import type { FastifyPluginAsync } from 'fastify';
import { Type, type Static } from '@sinclair/typebox';
import { appInfo, appParameters, appSite } from '../../apps/parameters.js';
import type { Runtime } from '../../runtime.js';
import { requireApp } from '../auth.js';
import { DEFAULT_USER } from '../../apps/end-users.js';
import { notFound } from '../../infra/errors.js';

/** The runtime members these routes use (server.ts hands them nothing else). */
export type AppInfoRouteDeps = Pick<Runtime, 'config' | 'endUsers' | 'sites'>;

const EndUserParams = Type.Object({ end_user_id: Type.String({ description: "The end user's id." }) });

/** `GET /info`, `/parameters`, `/meta`, `/site` and `/end-users/{id}` for app keys. */
export const appInfoRoutes: FastifyPluginAsync<{ runtime: AppInfoRouteDeps }> = async (app, { runtime }) => {
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

  app.get('/site', async (request) => appSite((await runtime.sites.forApp(requireApp(request))).settings));

  app.get<{ Params: Static<typeof EndUserParams> }>('/end-users/:end_user_id', { schema: { params: EndUserParams } }, async (request) => {
    const a = requireApp(request);
    const u = await runtime.endUsers.ofApp(a.id, request.params.end_user_id);
    if (!u) throw notFound('End user not found.');
    const at = new Date(u.createdAt).toISOString();
    return {
      id: u.id,
      tenant_id: a.workspaceId,
      app_id: u.appId,
      type: 'service_api',
      external_user_id: u.sessionId,
      name: null,
      is_anonymous: u.sessionId === DEFAULT_USER,
      session_id: u.sessionId,
      created_at: at,
      updated_at: at,
    };
  });
};
