import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { ConsoleMember } from '../../console/console-auth-service.js';
import type { Runtime } from '../../runtime.js';
import { requireJson } from '../json-body.js';
import { clearSessionCookie, consoleAuth, consoleMember, setSessionCookie } from './console-auth.js';

/** The runtime members these routes use. */
export type ConsoleSessionDeps = Pick<Runtime, 'clock' | 'config' | 'consoleAuth'>;

/** `GET /console/api/session`'s answer (log-in answers the same). */
async function sessionBody(runtime: ConsoleSessionDeps, account: ConsoleMember, csrfToken: string, expiresAt: number) {
  const ws = await runtime.consoleAuth.workspace(account.workspaceId);
  return {
    account: { id: account.id, name: account.name, email: account.email, role: account.role },
    csrf_token: csrfToken,
    expires_at: Math.floor(expiresAt / 1000),
    workspace: { id: ws.id, name: ws.name },
  };
}

/**
 * Log-in, log-out and the current session. Log-in is the one console route without a session; its
 * body must be JSON (a cross-site form cannot send that), and it answers the session with its CSRF
 * token and sets the `dovetail_console_session` cookie.
 */
export const consoleSessionRoutes: FastifyPluginAsync<{ runtime: ConsoleSessionDeps }> = async (app, { runtime }) => {
  const { passwordMaxLength } = runtime.config.console;
  const LoginBody = Type.Object({
    email: Type.String({ minLength: 1, maxLength: 254 }),
    password: Type.String({ minLength: 1, maxLength: passwordMaxLength }),
  });
  app.post<{ Body: { email: string; password: string } }>('/login', { preValidation: requireJson, schema: { body: LoginBody } }, async (request, reply) => {
    reply.header('cache-control', 'no-store');
    const s = await runtime.consoleAuth.login({ email: request.body.email, password: request.body.password, address: request.ip });
    setSessionCookie(request, reply, s.token, s.expiresAt, runtime.clock.now());
    return { result: 'success', ...(await sessionBody(runtime, s.account, s.csrfToken, s.expiresAt)) };
  });

  await app.register(async (authed) => {
    authed.addHook('onRequest', consoleAuth(runtime));
    authed.get('/session', async (request: FastifyRequest) => {
      const s = request.consoleSession!;
      return sessionBody(runtime, consoleMember(request), s.csrfToken, s.expiresAt);
    });
    authed.post('/logout', async (request, reply) => {
      await runtime.consoleAuth.logout(request.consoleSession!.token);
      clearSessionCookie(request, reply);
      return { result: 'success' };
    });
  });
};
