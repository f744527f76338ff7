import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext } from 'playwright-core';
import { startServer, type TestServer } from '../helpers/server.js';
import { completionApp } from '../helpers/apps.js';
import { BROWSER_TESTS, CHROMIUM_ARGS, noticeWithoutBrowser, requireBrowser } from '../helpers/browser.js';
import { scrollsSideways, seriousA11yFindings } from '../helpers/web-app-browser.js';
import { createMember, DEFAULT_PASSWORD, loginPage } from '../helpers/console.js';

/** The console's shell in a real browser: the log-in page (with the mouse and with the keyboard only), the navigation, the language, log-out. */
noticeWithoutBrowser('the console shell browser tests are');

const SHOTS = process.env.SAVE_WEB_SCREENSHOTS === '1';

describe.runIf(BROWSER_TESTS)('console shell in a browser', { timeout: 180_000 }, () => {
  let s: TestServer;
  let browser: Browser;
  let context: BrowserContext;

  beforeAll(async () => {
    const executablePath = requireBrowser();
    s = await startServer();
    await s.importApp(completionApp());
    await createMember(s, { name: 'Olive', email: 'olive@example.test', role: 'owner' });
    await createMember(s, { name: 'Vera', email: 'vera@example.test', role: 'viewer' });
    const { chromium } = await import('playwright-core');
    browser = await chromium.launch({ executablePath, args: CHROMIUM_ARGS });
  }, 120_000);
  afterAll(async () => {
    await context?.close();
    await browser?.close();
    await s?.close();
  });

  it('a page of the console without a session goes to the log-in page; a wrong password is said; the right one opens the page asked for', async () => {
    context = await browser.newContext({ viewport: { width: 1280, height: 820 }, locale: 'en-US' });
    const page = await context.newPage();
    await page.goto(`${s.url}/console/apps`);
    await page.waitForURL(/\/console\/login\?next=%2Fconsole%2Fapps$/);
    await page.getByLabel('Email').fill('olive@example.test');
    await page.getByLabel('Password').fill('wrong password');
    await page.getByRole('button', { name: 'Log in' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toBe('The email or password is mismatched.');
    expect(await seriousA11yFindings(page)).toEqual([]);
    if (SHOTS) await page.screenshot({ path: 'docs/console-login.png' });

    await page.getByLabel('Password').fill(DEFAULT_PASSWORD);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.waitForURL(`${s.url}/console/apps`);
    await page.getByRole('link', { name: /Test writer/ }).waitFor();
    expect(await page.getByText('Signed in as Olive (owner)').isVisible()).toBe(true);
    expect(await seriousA11yFindings(page)).toEqual([]);
    if (SHOTS) await page.screenshot({ path: 'docs/console-shell.png' });

    // the language picker: the same page in Japanese, kept after a reload
    await page.getByLabel('Language').first().selectOption('ja');
    await page.getByRole('heading', { name: 'アプリ', level: 1 }).waitFor();
    await page.reload();
    await page.getByRole('heading', { name: 'アプリ', level: 1 }).waitFor();
    await page.getByLabel('言語').first().selectOption('en');

    // an app's page through the link (no reload: the console routes in the page)
    await page.getByRole('link', { name: /Test writer/ }).click();
    await page.waitForURL(/\/console\/apps\/[0-9a-f-]{36}$/);
    await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Overview' }).waitFor();

    await page.getByRole('button', { name: 'Log out' }).click();
    await page.waitForURL(`${s.url}/console/login`);
    await page.goto(`${s.url}/console/apps`);
    await page.waitForURL(/\/console\/login/);
    await context.close();
  });

  it('logs in with the keyboard only, and works at phone width (390 px)', async () => {
    context = await browser.newContext({ viewport: { width: 390, height: 844 }, locale: 'en-US', isMobile: true, hasTouch: true });
    const page = await context.newPage();
    await page.goto(`${s.url}/console/login`);
    await page.getByLabel('Email').waitFor();
    await page.keyboard.press('Tab'); // the language picker
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('login-email');
    await page.keyboard.type('vera@example.test');
    await page.keyboard.press('Tab');
    await page.keyboard.type(DEFAULT_PASSWORD);
    await page.keyboard.press('Enter');
    await page.locator('main[data-ready="true"]').waitFor();
    await page.getByRole('link', { name: /Test writer/ }).waitFor();
    expect(await scrollsSideways(page)).toBe(false);
    // the navigation is behind the menu button
    const menu = page.getByRole('button', { name: 'Menu' });
    expect(await menu.getAttribute('aria-expanded')).toBe('false');
    await menu.click();
    expect(await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Apps' }).isVisible()).toBe(true);
    expect(await seriousA11yFindings(page)).toEqual([]);
    if (SHOTS) await page.screenshot({ path: 'docs/console-phone.png' });
    await context.close();
  });

  it('the helper logs a page in', async () => {
    context = await browser.newContext({ viewport: { width: 1280, height: 820 }, locale: 'en-US' });
    const page = await context.newPage();
    await loginPage(page, s.url, 'olive@example.test');
    expect(new URL(page.url()).pathname).toBe('/console/apps');
    const r = await page.request.get(`${s.url}/console/api/session`);
    expect(((await r.json()) as { account: { name: string } }).account.name).toBe('Olive');
    await context.close();
  });

  it('serves the page with a strict CSP, and a JSON 404 for an unknown API path', async () => {
    const r = await fetch(`${s.url}/console/apps`);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-security-policy')).toBe("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'");
    expect(r.headers.get('x-frame-options')).toBe('DENY');
    const html = await r.text();
    expect(html).toMatch(/<script defer src="\/web-app\/console\.js\?v=[0-9a-f]{12}"><\/script>/);
    expect(html).not.toMatch(/<script>|style=/);
    const api = await fetch(`${s.url}/console/api/nope`);
    expect(api.status).toBe(404);
    expect(((await api.json()) as { code: string }).code).toBe('not_found');
  });
});
