import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser } from 'playwright-core';
import { BROWSER_TESTS, CHROMIUM_ARGS, noticeWithoutBrowser, requireBrowser } from '../helpers/browser.js';
import { startServer, type TestServer } from '../helpers/server.js';

/** `GET /docs` in a real browser (test/helpers/browser.ts: skipped with a notice without one, except in CI). */
noticeWithoutBrowser('the /docs browser test is');

let s: TestServer;
let browser: Browser | undefined;

beforeAll(async () => {
  s = await startServer();
  if (BROWSER_TESTS) browser = await chromium.launch({ executablePath: requireBrowser(), args: CHROMIUM_ARGS });
});
afterAll(async () => {
  await browser?.close();
  await s?.close();
});

describe('GET /docs (API reference page)', () => {
  it.skipIf(!BROWSER_TESTS)('renders the operations from /v1/openapi.json with every asset from this server', async () => {
    expect(browser, 'Chromium is required in CI (.ci/run installs it)').toBeDefined();
    const page = await browser!.newPage();
    const requested: string[] = [];
    page.on('request', (r) => requested.push(r.url()));
    const origin = s.api.replace(/\/v1$/, '');
    const r = await page.goto(`${origin}/docs`);
    expect(r?.status()).toBe(200);
    // Swagger UI lists each operation as an "opblock" with its path
    await page.waitForSelector('.opblock-summary-path', { timeout: 30_000 });
    const paths = await page.$$eval('.opblock-summary-path', (els) => els.map((e) => e.getAttribute('data-path') ?? e.textContent ?? ''));
    expect(paths.map((p) => p.replace(/\u200b/g, ''))).toEqual(expect.arrayContaining(['/v1/chat-messages', '/v1/workflows/run', '/v1/datasets']));
    expect(await page.title()).toMatch(/Swagger UI/);
    // grouped under Dify's tags, with Dify's summaries
    const tags = await page.$$eval('.opblock-tag', (els) => els.map((e) => e.getAttribute('data-tag') ?? ''));
    expect(tags).toEqual(expect.arrayContaining(['Chat Messages', 'Workflow Runs', 'Knowledge Bases']));
    expect(await page.$$eval('.opblock-summary-description', (els) => els.map((e) => e.textContent ?? ''))).toContain('Send Chat Message');
    // no request left the server (no CDN, no online validator)
    expect(requested.length).toBeGreaterThan(2);
    expect(requested.filter((u) => new URL(u).hostname !== '127.0.0.1')).toEqual([]);
    await page.close();
  });
});
