import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock, startServer, type TestServer } from '../helpers/server.js';

const LIMIT = { WEB_FORM_SUBMIT_RATE_LIMIT_MAX_ATTEMPTS: '3', WEB_FORM_SUBMIT_RATE_LIMIT_WINDOW_SECONDS: '60' };
const MESSAGE =
  'Too many form requests from this address: at most 3 per 60 seconds (WEB_FORM_SUBMIT_RATE_LIMIT_MAX_ATTEMPTS, WEB_FORM_SUBMIT_RATE_LIMIT_WINDOW_SECONDS). Please try again later.';

const get = (s: TestServer, token = 'no-such-token') => fetch(`${s.url}/api/form/human_input/${token}`);

describe('web form rate limit (one instance, in memory)', () => {
  let s: TestServer;
  const clock = new ManualClock();
  beforeAll(async () => {
    s = await startServer({ clock, env: LIMIT });
  });
  afterAll(async () => s?.close());

  it('answers 429 naming the settings past the limit, on the API and the page, until the window ends', async () => {
    for (let i = 0; i < 3; i++) expect((await get(s)).status).toBe(404);
    const limited = await get(s);
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('60');
    expect(await limited.json()).toEqual({ code: 'web_form_rate_limit_exceeded', message: MESSAGE, status: 429 });
    const post = await fetch(`${s.url}/api/form/human_input/x`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"inputs":{},"action":"a"}' });
    expect(post.status).toBe(429);
    const page = await fetch(`${s.url}/form/x`);
    expect(page.status).toBe(429);
    expect(page.headers.get('content-type')).toContain('text/html');
    expect(await page.text()).toContain('Too many requests');
    // the page's own script and style are not counted
    expect((await fetch(`${s.url}/form/-/form.js`)).status).toBe(200);
    clock.advance(60_000);
    expect((await get(s)).status).toBe(404);
  });
});

describe.skipIf(!process.env.TEST_REDIS_URL)('web form rate limit shared by two instances through Redis', () => {
  let a: TestServer;
  let b: TestServer;
  beforeAll(async () => {
    // a prefix of this file's own: the same file may run at the same time on the other storage
    const env = { ...LIMIT, REDIS_URL: process.env.TEST_REDIS_URL!, REDIS_KEY_PREFIX: `dovetail-test-${Math.random().toString(36).slice(2)}:` };
    a = await startServer({ env });
    b = await startServer({ env });
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
  });

  it('counts the requests of one address across instances', async () => {
    expect((await get(a)).status).toBe(404);
    expect((await get(a)).status).toBe(404);
    expect((await get(b)).status).toBe(404);
    expect((await get(b)).status).toBe(429);
    const onA = await get(a);
    expect(onA.status).toBe(429);
    expect((await onA.json()).code).toBe('web_form_rate_limit_exceeded');
  });
});
