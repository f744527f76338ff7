import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import type { TestServer } from '../helpers/server.js';
import { completionApp } from '../helpers/apps.js';
import { reviewApp } from '../helpers/form-apps.js';
import { BROWSER_TESTS, noticeWithoutBrowser } from '../helpers/browser.js';
import { scrollsSideways, seriousA11yFindings } from '../helpers/web-app-browser.js';
import { consoleBrowser, type ConsoleBrowser } from '../helpers/console.js';
import { parseSse, dataFrames } from '../helpers/sse.js';

/**
 * The console's apps and forms pages in a real browser, as a person uses them: import a DSL file
 * with a warning and read it, create a key and call the Service API with it, the web app's link and
 * snippet, the forms waiting; axe-core on each page; screenshots under docs/ (SAVE_WEB_SCREENSHOTS=1).
 */
noticeWithoutBrowser('the console apps browser tests are');

const SHOTS = process.env.SAVE_WEB_SCREENSHOTS === '1';

describe.runIf(BROWSER_TESTS)('console apps in a browser', { timeout: 240_000 }, () => {
  let cb: ConsoleBrowser;
  let s: TestServer;
  let page: Page;
  let dir: string;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'console-dsl-'));
    cb = await consoleBrowser({
      setup: async (server) => {
        // a run paused on its Human Input form, for "Forms waiting"
        const { apiKey } = await server.importApp(reviewApp([{ id: 'web', type: 'webapp', enabled: true, config: {} }]));
        const r = await fetch(`${server.api}/workflows/run`, { method: 'POST', headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ inputs: { draft: 'spring catalogue' }, response_mode: 'streaming', user: 'u' }) });
        expect(dataFrames(parseSse(await r.text())).at(-1)?.event).toBe('workflow_paused');
      },
      members: [
        { name: 'Olive', email: 'olive@example.test', role: 'owner' },
        { name: 'Vera', email: 'vera@example.test', role: 'viewer' },
      ],
      loginAs: 'olive@example.test',
    });
    ({ s, page } = cb);
  }, 180_000);
  afterAll(async () => {
    await cb?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('imports a DSL file picked in the page and shows its warning as the CLI prints it', async () => {
    const file = path.join(dir, 'deep-writer.yml');
    writeFileSync(file, completionApp({ name: 'Deep writer', provider: 'deepseek', model: 'deepseek-chat' }));
    await page.getByRole('button', { name: 'Import DSL' }).click();
    const dialog = page.getByRole('dialog', { name: 'Import an app from a DSL file' });
    await dialog.getByLabel('DSL file (.yml)').setInputFiles(file);
    await dialog.getByText('“Deep writer”, a Text generator app.').waitFor();
    await dialog.getByRole('button', { name: 'Import' }).click();
    await dialog.getByText('Imported “Deep writer”.').waitFor();
    const line = dialog.locator('.warning-line').filter({ hasText: 'deepseek' });
    expect(await line.textContent()).toMatch(/^warning: model_config \(completion\): .*DEEPSEEK_API_KEY.* \[setting: DEEPSEEK_API_KEY\]$/);
    expect(await seriousA11yFindings(page)).toEqual([]);
    if (SHOTS) await page.screenshot({ path: 'docs/console-import.png' });
    await dialog.getByRole('link', { name: 'Open the app' }).click();
    await page.getByRole('heading', { name: 'Deep writer', level: 1 }).waitFor();
    await page.getByText('not configured', { exact: true }).waitFor();
    expect(await page.locator('.provider-list').textContent()).toContain('deepseek not configured set DEEPSEEK_API_KEY');
    expect(await seriousA11yFindings(page)).toEqual([]);
    if (SHOTS) await page.screenshot({ path: 'docs/console-app.png', fullPage: true });
  });

  it('creates a key, reads it once, and the Service API answers with it; the list shows it masked', async () => {
    await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'API keys' }).click();
    await page.getByRole('heading', { name: 'API keys', level: 1 }).waitFor();
    await page.getByText('No keys yet.').waitFor();
    await page.getByRole('button', { name: 'Create key' }).click();
    const dialog = page.getByRole('dialog', { name: 'Your new API key' });
    const key = (await dialog.locator('pre code').textContent())!;
    expect(key).toMatch(/^app-/);
    if (SHOTS) await page.screenshot({ path: 'docs/console-key.png' });
    await dialog.getByRole('button', { name: 'Close' }).click();
    const r = await fetch(`${s.api}/parameters`, { headers: { authorization: `Bearer ${key}` } });
    expect(r.status).toBe(200);
    const masked = (await page.locator('table code').first().textContent())!;
    expect(key.startsWith(masked.replace('…', ''))).toBe(true);
    expect(await page.content()).not.toContain(key);
    expect(await seriousA11yFindings(page)).toEqual([]);
  });

  it("the web app's link and its embed snippet", async () => {
    await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Web app' }).click();
    await page.getByRole('heading', { name: 'Web app', level: 1 }).waitFor();
    const link = (await page.locator('.site-line a').textContent())!;
    expect(link).toMatch(new RegExp(`/completion/[A-Za-z0-9]{16}$`));
    expect(await page.locator('.code-view pre').first().textContent()).toContain(`src="${link}"`);
    await page.getByRole('button', { name: 'Turn off' }).click();
    await page.getByRole('button', { name: 'Turn on' }).waitFor();
    expect(await seriousA11yFindings(page)).toEqual([]);
  });

  it("the web app's settings: an editor changes the title and sees it on the web app's page; a bad colour is named and its field marked", async () => {
    await page.getByRole('button', { name: 'Turn on' }).click();
    await page.getByRole('button', { name: 'Turn off' }).waitFor();
    const link = (await page.locator('.site-line a').textContent())!;
    const settings = page.getByRole('form', { name: 'Settings' });
    await settings.getByLabel('Title', { exact: true }).fill('Otter notes');
    await settings.getByLabel('Copyright').fill('© Otter Club');
    await settings.getByRole('button', { name: 'Save settings' }).click();
    await page.getByText('The web app’s settings were saved.').waitFor();
    expect((await s.runtime.sites.ofApp((await s.runtime.apps.list()).find((a) => a.name === 'Deep writer')!.id))!.settings).toMatchObject({ title: 'Otter notes', copyright: '© Otter Club' });
    // a refused setting: the server's message, the field marked and focused
    await settings.getByLabel('Icon background').fill('pink');
    await settings.getByRole('button', { name: 'Save settings' }).click();
    await expect.poll(() => settings.getByRole('alert').textContent()).toMatch(/^icon_background must be a colour/);
    expect(await settings.getByLabel('Icon background').getAttribute('aria-invalid')).toBe('true');
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('site-icon_background');
    expect(await seriousA11yFindings(page)).toEqual([]);
    if (SHOTS) await page.screenshot({ path: 'docs/console-site.png', fullPage: true });

    // the web app's page, as a visitor opens the link
    const visitor = await cb.newPage();
    await visitor.goto(`${s.url}${new URL(link).pathname}`);
    await visitor.getByRole('heading', { name: 'Otter notes' }).first().waitFor();
    expect(await visitor.getByText('© Otter Club').count()).toBeGreaterThan(0);
    await visitor.context().close();
  });

  it('lists the form waiting, with its link and deadline; the link opens the form page', async () => {
    await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Forms waiting' }).click();
    await page.getByRole('heading', { name: 'Forms waiting', level: 1 }).waitFor();
    const open = page.getByRole('link', { name: /^Open form: Review/ });
    await open.waitFor();
    const href = (await open.getAttribute('href'))!;
    expect(href).toMatch(/\/form\/[^/]+$/);
    // the link starts with APP_WEB_URL (the public address); the page behind its path is the form's
    expect((await fetch(`${s.url}${new URL(href).pathname}`)).status).toBe(200);
    expect(await seriousA11yFindings(page)).toEqual([]);
    if (SHOTS) await page.screenshot({ path: 'docs/console-forms.png' });
  });

  it('a viewer at phone width: the apps, no keys in the navigation, no link to a waiting form', async () => {
    const p = await cb.newPage({ email: 'vera@example.test', context: { viewport: { width: 390, height: 844 }, locale: 'en-US', isMobile: true, hasTouch: true } });
    await p.getByRole('link', { name: /Deep writer/ }).waitFor();
    expect(await scrollsSideways(p)).toBe(false);
    expect(await p.getByRole('button', { name: 'Import DSL' }).count()).toBe(0);
    if (SHOTS) await p.screenshot({ path: 'docs/console-apps-phone.png' });
    await p.getByRole('link', { name: /Deep writer/ }).click();
    await p.getByRole('heading', { name: 'Deep writer', level: 1 }).waitFor();
    await p.getByRole('button', { name: 'Menu' }).click();
    const nav = p.getByRole('navigation', { name: 'Console' });
    expect(await nav.getByRole('link', { name: 'API keys' }).count()).toBe(0);
    expect(await scrollsSideways(p)).toBe(false);
    await nav.getByRole('link', { name: 'Forms waiting' }).click();
    await p.getByText('link for editors').waitFor();
    expect(await seriousA11yFindings(p)).toEqual([]);
    await p.context().close();
  });
});
