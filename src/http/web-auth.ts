import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { EndUser } from '../apps/end-users.js';
import type { Runtime } from '../runtime.js';
import { badRequest, notFound, unauthorized } from '../infra/errors.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The end user of a web-app request, from its passport (set by `webAuth`; null on every other route). */
    passport: EndUser | null;
  }
}

/** Declares the decoration `webAuth` fills; call once on the root instance. */
export function declarePassportDecoration(app: FastifyInstance): void {
  app.decorateRequest('passport', null);
}

/** The header the web app names its app by (Dify's `HEADER_NAME_APP_CODE`). */
export const APP_CODE_HEADER = 'x-app-code';
/** The header Dify's newer web app sends its passport in (else `Authorization: Bearer`). */
export const PASSPORT_HEADER = 'x-app-passport';

const NOT_FOUND = 'The requested URL was not found on the server. If you entered the URL manually please check your spelling and try again.';

/** The passport of a request: `X-App-Passport`, else `Authorization: Bearer …` (Dify's order, without its cookie). */
export function passportToken(request: FastifyRequest): string | undefined {
  const header = request.headers[PASSPORT_HEADER];
  if (typeof header === 'string' && header !== '') return header;
  const auth = request.headers.authorization?.trim();
  if (!auth) return undefined;
  const [scheme, ...rest] = auth.split(/\s+/);
  return scheme!.toLowerCase() === 'bearer' && rest.length > 0 ? rest.join(' ') : undefined;
}

/** The app code a request names (`X-App-Code`), if any. */
export function appCodeOf(request: FastifyRequest): string | undefined {
  const v = request.headers[APP_CODE_HEADER];
  return typeof v === 'string' && v !== '' ? v : undefined;
}

/** The runtime members the passport hook uses. */
export type WebAuthDeps = Pick<Runtime, 'apps' | 'endUsers' | 'passports' | 'sites'>;

/**
 * onRequest hook of the web app's API (`/api`, Dify's `decode_jwt_token`): the passport is checked
 * (a 401 with Dify's messages when missing, malformed, expired or signed by another server), it
 * must be of the app `X-App-Code` names when the header is sent (401 otherwise), of the site's
 * current code (400 "Site URL is no longer valid." after `--reset-code`), and the site must be on
 * (400 "Site is disabled."). The request then acts for the passport's app and end user.
 */
export function webAuth(runtime: WebAuthDeps) {
  return async (request: FastifyRequest): Promise<void> => {
    const token = passportToken(request);
    if (!token) throw unauthorized('App token is missing.');
    const claims = await runtime.passports.verify(token);
    const code = appCodeOf(request);
    if (code !== undefined && code !== claims.appCode) throw unauthorized('The passport is not for the app X-App-Code names.');
    const [app, site] = await Promise.all([runtime.apps.find(claims.appId), runtime.sites.ofApp(claims.appId)]);
    if (!app) throw notFound(NOT_FOUND);
    if (!site || site.code !== claims.appCode) throw badRequest('Site URL is no longer valid.');
    if (!site.enabled) throw badRequest('Site is disabled.');
    const endUser = await runtime.endUsers.ofApp(app.id, claims.endUserId);
    if (!endUser) throw notFound(NOT_FOUND);
    request.app = app;
    request.passport = endUser;
  };
}
