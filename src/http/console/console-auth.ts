import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Role } from '../../accounts/account-store.js';
import { ROLES } from '../../accounts/account-store.js';
import { csrfMatches, type ConsoleMember } from '../../console/console-auth-service.js';
import { csrfTokenInvalid } from '../../console/errors.js';
import { forbidden, unauthorized } from '../../infra/errors.js';
import type { Runtime } from '../../runtime.js';

/** The console's session cookie (its value: a random token; the database keeps its SHA-256). */
export const SESSION_COOKIE = 'dovetail_console_session';
/** The cookie is sent only to the console's own paths. */
const COOKIE_PATH = '/console';
const UNSAFE = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

declare module 'fastify' {
  interface FastifyRequest {
    /** The signed-in console member (set by `consoleAuth`); null outside `/console/api`. */
    consoleAccount: ConsoleMember | null;
    /** The session's CSRF token and cookie token (set by `consoleAuth`). */
    consoleSession: { csrfToken: string; token: string; expiresAt: number } | null;
  }
}

export function declareConsoleDecorations(app: FastifyInstance): void {
  app.decorateRequest('consoleAccount', null);
  app.decorateRequest('consoleSession', null);
}

/** The value of one cookie of the request's `Cookie` header; undefined when absent. */
export function readCookie(request: FastifyRequest, name: string): string | undefined {
  const header = request.headers.cookie;
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() !== name) continue;
    const v = part.slice(eq + 1).trim();
    try {
      return decodeURIComponent(v.startsWith('"') && v.endsWith('"') ? v.slice(1, -1) : v);
    } catch {
      return undefined;
    }
  }
  return undefined;
}

/** `HttpOnly; SameSite=Lax`, `Secure` when the request came over HTTPS (the server's `TRUST_PROXY` decides whether a proxy's `X-Forwarded-Proto` counts). */
function cookieAttributes(request: FastifyRequest): string {
  return `Path=${COOKIE_PATH}; HttpOnly; SameSite=Lax${request.protocol === 'https' ? '; Secure' : ''}`;
}

export function setSessionCookie(request: FastifyRequest, reply: FastifyReply, token: string, expiresAt: number, now: number): void {
  const maxAge = Math.max(0, Math.floor((expiresAt - now) / 1000));
  reply.header('set-cookie', `${SESSION_COOKIE}=${token}; Max-Age=${maxAge}; ${cookieAttributes(request)}`);
}

export function clearSessionCookie(request: FastifyRequest, reply: FastifyReply): void {
  reply.header('set-cookie', `${SESSION_COOKIE}=; Max-Age=0; ${cookieAttributes(request)}`);
}

/**
 * The hook of every `/console/api` route but log-in: the session from the cookie (401
 * `unauthorized` without a valid one), and for POST, PUT, PATCH and DELETE the session's CSRF token
 * in `X-CSRF-Token` (403 `csrf_token_invalid` otherwise). Sets `request.consoleAccount`.
 */
export function consoleAuth(runtime: Pick<Runtime, 'consoleAuth'>) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    reply.header('cache-control', 'no-store');
    const token = readCookie(request, SESSION_COOKIE);
    const session = token ? await runtime.consoleAuth.session(token) : undefined;
    if (!token || !session) throw unauthorized('Not signed in, or the session has expired: log in at /console/login.');
    if (UNSAFE.has(request.method)) {
      const given = request.headers['x-csrf-token'];
      if (!csrfMatches(session.csrfToken, typeof given === 'string' ? given : undefined)) throw csrfTokenInvalid();
    }
    request.consoleAccount = session.account;
    request.consoleSession = { csrfToken: session.csrfToken, token, expiresAt: session.expiresAt };
  };
}

/** The signed-in member (a route behind `consoleAuth`). */
export function consoleMember(request: FastifyRequest): ConsoleMember {
  const a = request.consoleAccount;
  if (!a) throw unauthorized('Not signed in: log in at /console/login.');
  return a;
}

export function roleAtLeast(role: Role, min: Role): boolean {
  return ROLES.indexOf(role) >= ROLES.indexOf(min);
}

/**
 * preHandler: 403 `forbidden` unless the member's role is at least `min`
 * (viewer < editor < admin < owner).
 */
export function requireRole(min: Role) {
  return async (request: FastifyRequest): Promise<void> => {
    const a = consoleMember(request);
    if (!roleAtLeast(a.role, min)) throw forbidden(`This needs the ${min} role or higher; your role is ${a.role}.`);
  };
}
