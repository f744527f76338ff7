import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import type { App } from '../../src/apps/app-service.js';
import type { EndUser } from '../../src/apps/end-users.js';
import { declareAuthDecorations } from '../../src/http/auth.js';
import { errorHandler } from '../../src/http/errors.js';
import { callerUser, declareUserDecorations, requireCaller, type CallerUserOptions } from '../../src/http/request-user.js';

/** An end-user service that counts its calls. */
function fakeEndUsers() {
  const calls = { getOrCreate: 0, find: 0 };
  const users = new Map<string, EndUser>();
  return {
    calls,
    endUsers: {
      async getOrCreate(appId: string, user: string): Promise<EndUser> {
        calls.getOrCreate++;
        const u = users.get(user) ?? { id: `eu-${user}`, appId, sessionId: user };
        users.set(user, u);
        return u;
      },
      async find(_appId: string, user: string): Promise<EndUser | undefined> {
        calls.find++;
        return users.get(user);
      },
    },
  };
}

let app: FastifyInstance | undefined;
afterEach(async () => app?.close());

async function serve(options: CallerUserOptions, handler: (request: FastifyRequest) => Promise<unknown>) {
  const fake = fakeEndUsers();
  app = Fastify();
  declareAuthDecorations(app);
  declareUserDecorations(app);
  app.setErrorHandler(errorHandler);
  app.addHook('onRequest', async (request) => {
    request.app = { id: 'app-1' } as App;
  });
  const preHandler = callerUser(fake as never, options);
  app.route({ method: ['GET', 'POST'], url: '/x', preHandler, handler: (request) => handler(request) });
  await app.ready();
  return fake;
}

describe('callerUser', () => {
  it('a required user is checked with Dify messages before the handler', async () => {
    let reached = false;
    await serve({ from: 'body', user: 'required' }, async () => (reached = true));
    const missing = await app!.inject({ method: 'POST', url: '/x', payload: { query: 'q' } });
    expect(missing.json()).toEqual({ code: 'invalid_param', message: 'Arg user must be provided.', status: 400 });
    const notString = await app!.inject({ method: 'POST', url: '/x', payload: { user: 1 } });
    expect(notString.json()).toEqual({ code: 'invalid_param', message: 'user must be a string', status: 400 });
    expect(reached).toBe(false);
  });

  it('resolves the end user once, only when asked, and finding never creates one', async () => {
    const fake = await serve({ from: 'query', user: 'required' }, async (request) => {
      const before = await request.findEndUser();
      const a = await request.endUser();
      const b = await request.endUser();
      return { user: requireCaller(request), before: before ?? null, same: a === b, id: a.id };
    });
    const r = await app!.inject({ method: 'GET', url: '/x?user=alice' });
    expect(r.json()).toEqual({ user: 'alice', before: null, same: true, id: 'eu-alice' });
    expect(fake.calls).toEqual({ getOrCreate: 1, find: 1 });
  });

  it('an optional user stands in DEFAULT-USER when absent or empty', async () => {
    const fake = await serve({ from: 'query', user: 'optional' }, async (request) => requireCaller(request));
    expect((await app!.inject({ method: 'GET', url: '/x' })).body).toBe('DEFAULT-USER');
    expect((await app!.inject({ method: 'GET', url: '/x?user=' })).body).toBe('DEFAULT-USER');
    expect((await app!.inject({ method: 'GET', url: '/x?user=bob' })).body).toBe('bob');
    expect(fake.calls).toEqual({ getOrCreate: 0, find: 0 });
  });
});
