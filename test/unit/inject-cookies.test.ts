import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { startServer } from '../helpers/server.js';

const require = createRequire(import.meta.url);

describe('fastify inject with the cookie override (package.json overrides light-my-request → cookie 1.x)', () => {
  it('the cookie package light-my-request loads supports Node 20 (no EBADENGINE on install)', () => {
    const lmr = path.dirname(require.resolve('light-my-request/package.json'));
    const cookiePkg = JSON.parse(readFileSync(createRequire(path.join(lmr, 'index.js')).resolve('cookie/package.json'), 'utf8')) as { version: string; engines?: { node?: string } };
    const min = /^>=\s*(\d+)/.exec(cookiePkg.engines?.node ?? '>=0')?.[1];
    expect(Number(min)).toBeLessThanOrEqual(20);
  });

  it('inject stringifies cookies through cookie 1.x, and app.inject reaches the real server', async () => {
    const { inject } = (await import('light-my-request')) as unknown as { inject: (d: (req: { headers: Record<string, string> }, res: { end(b: string): void }) => void, o: object) => Promise<{ payload: string }> };
    const echoed = await inject((req, res) => res.end(req.headers.cookie ?? ''), { url: '/', cookies: { session: 'a b;c', other: 'x' } });
    expect(echoed.payload).toBe('session=a%20b%3Bc; other=x');
    const s = await startServer();
    try {
      const r = await s.app.inject({ method: 'GET', url: '/health', cookies: { session: 'a' } });
      expect(r.statusCode).toBe(200);
      expect(r.json()).toEqual({ status: 'ok' });
    } finally {
      await s.close();
    }
  });
});
