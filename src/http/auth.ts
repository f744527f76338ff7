import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { App } from '../apps/app-service.js';
import type { KeyType, ResolvedKey } from '../apps/key-service.js';
import type { Runtime } from '../runtime.js';
import { forbidden, unauthorized } from '../infra/errors.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The app of an app-key request (set by the auth hook; null before it runs). */
    app: App | null;
    /** The key of the request (set by the auth hook; null before it runs). */
    apiKey: ResolvedKey | null;
  }
}

/** Declares the request decorations the auth hooks fill; call once on the root instance. */
export function declareAuthDecorations(app: FastifyInstance): void {
  app.decorateRequest('app', null);
  app.decorateRequest('apiKey', null);
}

/** Parses `Authorization: Bearer <key>` with Dify's messages. */
export function bearerToken(request: FastifyRequest): string {
  const header = request.headers.authorization;
  if (!header || !/\s/.test(header.trim())) {
    throw unauthorized("Authorization header must be provided and start with 'Bearer'");
  }
  const [scheme, ...rest] = header.trim().split(/\s+/);
  if (scheme!.toLowerCase() !== 'bearer') throw unauthorized("Authorization scheme must be 'Bearer'");
  return rest.join(' ');
}

/** The runtime members the knowledge-key hook uses. */
export type DatasetAuthDeps = Pick<Runtime, 'keys'>;
/** The runtime members the app-key hook uses. */
export type AppAuthDeps = Pick<Runtime, 'apps' | 'keys'>;

async function resolveKey(runtime: DatasetAuthDeps, request: FastifyRequest, scope: KeyType): Promise<ResolvedKey> {
  const token = bearerToken(request);
  const key = await runtime.keys.resolve(token, scope);
  if (!key) throw unauthorized('Access token is invalid');
  request.apiKey = key;
  return key;
}

/** onRequest hook for app-key routes: token → app exists → status normal → API enabled. */
export function appAuth(runtime: AppAuthDeps) {
  return async (request: FastifyRequest): Promise<void> => {
    const key = await resolveKey(runtime, request, 'app');
    const app = key.appId ? await runtime.apps.find(key.appId) : undefined;
    if (!app) throw forbidden('The app no longer exists.');
    if (app.status !== 'normal') throw forbidden("The app's status is abnormal.");
    if (!app.enableApi) throw forbidden("The app's API service has been disabled.");
    request.app = app;
  };
}

/** onRequest hook for knowledge-key routes. */
export function datasetAuth(runtime: DatasetAuthDeps) {
  return async (request: FastifyRequest): Promise<void> => {
    await resolveKey(runtime, request, 'dataset');
  };
}

/** The app of an app-key route; the hook guarantees it is set. */
export function requireApp(request: FastifyRequest): App {
  if (!request.app) throw new Error('app-key route reached without the app auth hook');
  return request.app;
}

/** The key of a knowledge route; the hook guarantees it is set. */
export function requireKey(request: FastifyRequest): ResolvedKey {
  if (!request.apiKey) throw new Error('knowledge route reached without the dataset auth hook');
  return request.apiKey;
}
