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

if (!process.env.TEST_REDIS_URL) process.stderr.write('[dovetail tests] NOTICE: TEST_REDIS_URL is not set; the web form rate limit across two instances is not tested.\n');

describe.skipIf(!process.env.TEST_REDIS_URL)('web form rate limit shared by two instances through Redis', () => {
  let a: TestServer;
  let b: TestServer;
  // Behind a trusted proxy the client address comes from X-Forwarded-For: two addresses, counted apart.
  const run = Math.floor(Math.random() * 250) + 1;
  const client = `198.51.100.${run}`;
  const other = `203.0.113.${run}`;
  const from = (s: TestServer, ip: string) => fetch(`${s.url}/api/form/human_input/no-such-token`, { headers: { 'x-forwarded-for': ip } });
  beforeAll(async () => {
    // a key prefix of this file's own: the same file may run at the same time on the other storage
    const env = { ...LIMIT, REDIS_URL: process.env.TEST_REDIS_URL!, REDIS_KEY_PREFIX: `dovetail-test-${Math.random().toString(36).slice(2)}:`, TRUST_PROXY: '127.0.0.1' };
    a = await startServer({ env });
    b = await startServer({ env });
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
  });

  it('counts the requests of one address across instances, and each address on its own', async () => {
    expect((await from(a, client)).status).toBe(404);
    expect((await from(a, client)).status).toBe(404);
    expect((await from(b, client)).status).toBe(404);
    expect((await from(b, client)).status).toBe(429);
    const onA = await from(a, client);
    expect(onA.status).toBe(429);
    expect(await onA.json()).toEqual({ code: 'web_form_rate_limit_exceeded', message: MESSAGE, status: 429 });
    // the page on the other instance is limited too
    expect((await fetch(`${b.url}/form/no-such-token`, { headers: { 'x-forwarded-for': client } })).status).toBe(429);
    // another address is not
    expect((await from(b, other)).status).toBe(404);
  });
});
