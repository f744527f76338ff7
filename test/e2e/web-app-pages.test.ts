import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.js';
import { siteCode } from '../helpers/web-app-browser.js';

/** The web app pages' routes: the shells, their headers (strict CSP; only /chatbot/ framable), the bundles and /embed.min.js. */
describe('web app page routes', () => {
  let s: TestServer;
  let code: string;
  beforeAll(async () => {
    s = await startServer();
    const { appId } = await s.importApp('app:\n  mode: chat\n  name: Pages\nkind: app\nversion: 0.3.1\nmodel_config:\n  model: { provider: mock, name: mock-echo, mode: chat }\n');
    code = await siteCode(s, appId);
  });
  afterAll(async () => {
    await s?.close();
  });

  it('serves each page as a shell loading its own script and stylesheet, with a strict CSP that refuses framing', async () => {
    for (const page of ['chat', 'completion', 'workflow']) {
      const r = await fetch(`${s.url}/${page}/${code}`);
      expect(r.status).toBe(200);
      expect(r.headers.get('content-type')).toContain('text/html');
      const csp = r.headers.get('content-security-policy')!;
      expect(csp).toContain("script-src 'self'");
      expect(csp).toContain("frame-ancestors 'none'");
      expect(csp).not.toMatch(/unsafe-(inline|eval)/);
      expect(r.headers.get('x-frame-options')).toBe('DENY');
      const html = await r.text();
      expect(html).toMatch(new RegExp(`<script defer src="/web-app/${page}\\.js\\?v=[0-9a-f]{12}"></script>`));
      expect(html).not.toMatch(/<script>|<style>|https?:\/\//);
    }
  });

  it('lets any site frame /chatbot/ (the embed bubble), and only it', async () => {
    const r = await fetch(`${s.url}/chatbot/${code}`);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-security-policy')).toContain('frame-ancestors *');
    expect(r.headers.get('x-frame-options')).toBeNull();
    expect(await r.text()).toContain('data-page="chatbot"');
  });

  it('answers a code no site has with the same shell and status 404', async () => {
    const r = await fetch(`${s.url}/chat/NoSuchCode000000`);
    expect(r.status).toBe(404);
    expect(r.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    expect(await r.text()).toContain('/web-app/chat.js');
  });

  it('serves the bundles under a content hash (cached for good) and /embed.min.js (cached an hour)', async () => {
    const html = await (await fetch(`${s.url}/chat/${code}`)).text();
    const src = /src="(\/web-app\/chat\.js\?v=[0-9a-f]+)"/.exec(html)![1]!;
    const js = await fetch(`${s.url}${src}`);
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toContain('text/javascript');
    expect(js.headers.get('cache-control')).toContain('immutable');
    const body = Buffer.from(await js.arrayBuffer());
    // the budget: a page's script at most 150 KB gzipped
    expect(gzipSync(body).length).toBeLessThan(150 * 1024);
    // sent gzipped to a client that accepts it (fetch asks for it and unpacks it)
    expect(js.headers.get('content-encoding')).toBe('gzip');
    expect(body.toString()).toContain('dify-chatbot-iframe-ready');
    expect((await fetch(`${s.url}/web-app/chat.js?v=old`)).headers.get('cache-control')).toBe('public, max-age=300');
    expect((await fetch(`${s.url}/web-app/nope.js`)).status).toBe(404);
    for (const path of ['/embed.min.js', '/embed.js']) {
      const e = await fetch(`${s.url}${path}`, { headers: { 'accept-encoding': 'identity' } });
      expect(e.status).toBe(200);
      expect(e.headers.get('cache-control')).toBe('public, max-age=3600');
      expect(await e.text()).toContain('difyChatbotConfig');
    }
  });
});
