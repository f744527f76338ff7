import { randomUUID } from 'node:crypto';
import type { FastifyPluginAsync } from 'fastify';
import { Type, type Static } from '@sinclair/typebox';
import { appParameters, appSite } from '../../apps/parameters.js';
import { defineError, notFound, unauthorized } from '../../infra/errors.js';
import type { Runtime } from '../../runtime.js';
import { requireApp } from '../auth.js';
import { appCodeOf } from '../web-auth.js';

/** The runtime members the passport route uses (server.ts hands it nothing else). */
export type PassportRouteDeps = Pick<Runtime, 'apps' | 'config' | 'endUsers' | 'passports' | 'rateLimiter' | 'sites'>;
/** The runtime members the web app's info routes use. */
export type WebAppInfoRouteDeps = Pick<Runtime, 'config' | 'sites'>;

const NOT_FOUND = 'The requested URL was not found on the server. If you entered the URL manually please check your spelling and try again.';

/** 429: too many passports asked for from one address (`WEB_APP_PASSPORT_RATE_LIMIT_PER_MINUTE`). */
export const passportRateLimited = defineError(
  'too_many_requests',
  429,
  (max: number) => `Too many passports requested from this address; at most WEB_APP_PASSPORT_RATE_LIMIT_PER_MINUTE (${max}) a minute.`,
  () => ({ 'retry-after': '60' }),
);

const PassportQuery = Type.Object({ user_id: Type.Optional(Type.String({ maxLength: 255, description: "The embedding site's user id (`systemVariables.user_id`): the same id gets the same end user." })) });
const AccessModeQuery = Type.Object({ appId: Type.Optional(Type.String()), appCode: Type.Optional(Type.String()) });

/**
 * `GET /api/passport` (Dify's web passport, no credential: the site's code in `X-App-Code`): a new
 * end user per call, or with `user_id` the app's end user of that id (created on first sight), and
 * a signed token for it. A missing code is Dify's 401; an unknown or disabled site its 404.
 * `GET /api/webapp/access-mode` and `/api/webapp/permission` answer as Dify without enterprise
 * web-app auth: every site is public.
 */
export const passportRoutes: FastifyPluginAsync<{ runtime: PassportRouteDeps }> = async (app, { runtime }) => {
  app.get<{ Querystring: Static<typeof PassportQuery> }>('/passport', { schema: { querystring: PassportQuery } }, async (request) => {
    const code = appCodeOf(request);
    if (code === undefined) throw unauthorized('X-App-Code header is missing.');
    // each call may add an end user: limited per client address
    const max = runtime.config.webApp.passportRateLimitPerMinute;
    if (!(await runtime.rateLimiter.hit(`web-passport:${request.ip}`, max, 60_000))) throw passportRateLimited(max);
    const site = await runtime.sites.byCode(code);
    if (!site || !site.enabled) throw notFound(NOT_FOUND);
    const a = await runtime.apps.find(site.appId);
    if (!a || a.status !== 'normal') throw notFound(NOT_FOUND);
    const userId = request.query.user_id || undefined;
    const endUser = await runtime.endUsers.getOrCreate(a.id, userId ?? randomUUID());
    return { access_token: await runtime.passports.issue({ appId: a.id, appCode: site.code, endUserId: endUser.id }) };
  });

  app.get<{ Querystring: Static<typeof AccessModeQuery> }>('/webapp/access-mode', { schema: { querystring: AccessModeQuery } }, async () => ({ accessMode: 'public' }));
  app.get('/webapp/permission', async () => ({ result: true }));
};

/**
 * `GET /api/site` (Dify's web shape: the app id, the passport's end user, the site's settings;
 * `model_config` null as Dify's when the prompt is not public), `GET /api/parameters` and
 * `GET /api/meta`, for the passport's app.
 */
export const webAppInfoRoutes: FastifyPluginAsync<{ runtime: WebAppInfoRouteDeps }> = async (app, { runtime }) => {
  app.get('/site', async (request) => {
    const a = requireApp(request);
    const site = (await runtime.sites.ofApp(a.id))!;
    return {
      app_id: a.id,
      end_user_id: request.passport!.id,
      enable_site: site.enabled,
      site: appSite(site.settings, { web: true }),
      model_config: null,
      plan: 'basic',
      can_replace_logo: false,
      custom_config: null,
    };
  });
  app.get('/parameters', async (request) => appParameters(requireApp(request), runtime.config.upload));
  app.get('/meta', async () => ({ tool_icons: {} }));
};
