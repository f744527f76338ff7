import type { FastifyInstance, FastifyRequest, preHandlerAsyncHookHandler } from 'fastify';
import type { Runtime } from '../runtime.js';
import { DEFAULT_USER, type EndUser } from '../apps/end-users.js';
import { requireApp } from './auth.js';
import { requireUser } from './user-arg.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The caller's `user` argument of an app route (set by a `callerUser` preHandler; null before it runs). */
    user: string | null;
    /** The caller's end user, created on first sight; resolved once per request (set by `callerUser`). */
    endUser: () => Promise<EndUser>;
    /** The caller's end user if it exists, never creating one (stop, lists); set by `callerUser`. */
    findEndUser: () => Promise<EndUser | undefined>;
  }
}

const withoutHook = (): never => {
  throw new Error('end-user route reached without the callerUser hook');
};

/** Declares the caller decorations; call once on the root instance. */
export function declareUserDecorations(app: FastifyInstance): void {
  app.decorateRequest('user', null);
  app.decorateRequest('endUser', withoutHook);
  app.decorateRequest('findEndUser', withoutHook);
}

/**
 * Where a route reads `user` (the body or the query string) and whether it must be given:
 * `required` answers Dify's `Arg user must be provided.` / `user must be a string` (400), `optional`
 * stands in `DEFAULT-USER` for an absent or empty one (the schema has already made it a string).
 */
export interface CallerUserOptions {
  readonly from: 'body' | 'query';
  readonly user: 'required' | 'optional';
}

/**
 * preHandler for app routes that act for an end user: reads `user` after the schema checks and
 * before the handler (where the routes checked it first), puts it on `request.user`, and the end
 * user behind `request.endUser()` / `request.findEndUser()`, looked up only when asked for.
 */
export function callerUser(runtime: Pick<Runtime, 'endUsers'>, options: CallerUserOptions): preHandlerAsyncHookHandler {
  return async (request) => {
    const a = requireApp(request);
    const passport = request.passport;
    if (passport) {
      // the web app's end user is its passport's; a `user` field is not read
      request.user = passport.sessionId;
      request.endUser = () => Promise.resolve(passport);
      request.findEndUser = () => Promise.resolve(passport);
      return;
    }
    const raw = (options.from === 'body' ? request.body : request.query) as { user?: unknown } | undefined;
    const user = options.user === 'required' ? requireUser(raw?.user) : (raw?.user as string | undefined) || DEFAULT_USER;
    let created: Promise<EndUser> | undefined;
    let found: Promise<EndUser | undefined> | undefined;
    request.user = user;
    request.endUser = () => (created ??= runtime.endUsers.getOrCreate(a.id, user));
    request.findEndUser = () => (found ??= runtime.endUsers.find(a.id, user));
  };
}

/**
 * The `user` a route acts for when it reads the field itself: the passport's end user on the web
 * app's API (`/api`), else the request's `given` field.
 */
export function userArg<T extends string | undefined>(request: FastifyRequest, given: T): string | T {
  return request.passport ? request.passport.sessionId : given;
}

/** The `user` of a route behind `callerUser`; the hook guarantees it is set. */
export function requireCaller(request: FastifyRequest): string {
  if (request.user === null) throw new Error('end-user route reached without the callerUser hook');
  return request.user;
}
