import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { TestServer } from '../helpers/server.js';
import { BROWSER_TESTS, noticeWithoutBrowser } from '../helpers/browser.js';
import { seriousA11yFindings } from '../helpers/web-app-browser.js';
import { consoleBrowser, type ConsoleBrowser } from '../helpers/console.js';

/**
 * The knowledge pages in a real browser: upload a document and watch its status and progress
 * reach completed (the page polls), run a retrieval test, read and disable a chunk, create a
 * knowledge key (shown once) and revoke it; the keyboard; axe-core.
 */
noticeWithoutBrowser('the console knowledge browser tests are');

const SHOTS = process.env.SAVE_WEB_SCREENSHOTS === '1';

describe.runIf(BROWSER_TESTS)('console knowledge in a browser', { timeout: 180_000 }, () => {
  let cb: ConsoleBrowser;
  let s: TestServer;

  beforeAll(async () => {
    cb = await consoleBrowser({
      setup: async (server) => {
        await server.runtime.datasets.create(await server.runtime.apps.workspaceId(), { name: 'Staff handbook', indexingTechnique: 'economy', createdBy: 'test' });
      },
      members: [{ name: 'Ada', email: 'ada@example.test', role: 'admin' }],
      loginAs: 'ada@example.test',
      context: { viewport: { width: 1280, height: 900 }, locale: 'en-US' },
    });
    s = cb.s;
  }, 120_000);
  afterAll(async () => {
    await cb?.close();
  });

  it('uploads a document and watches it reach completed, runs a retrieval test, disables a chunk', async () => {
    const page = cb.page;
    await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Knowledge' }).click();
    await page.getByRole('link', { name: 'Staff handbook' }).click();
    await page.getByRole('heading', { name: 'Staff handbook', level: 1 }).waitFor();
    expect(await seriousA11yFindings(page)).toEqual([]);

    const text = ['# Leave', '', 'Every employee has 25 days of paid leave a year.', '', '# Travel', '', 'Book trains for trips under four hours; flights need approval.', '', '# Equipment', '', 'Laptops are replaced every three years.'].join('\n');
    await page.getByLabel(/^File \(/).setInputFiles({ name: 'handbook.md', mimeType: 'text/markdown', buffer: Buffer.from(text) });
    await page.getByRole('button', { name: 'Upload' }).click();
    await page.getByText('handbook.md uploaded; indexing starts').waitFor();
    // the row appears, and the page's polling brings it to completed with its chunk count
    const row = page.getByRole('row').filter({ hasText: 'handbook.md' });
    await row.locator('[data-status="completed"]').waitFor({ timeout: 30_000 });
    expect(await row.getByText('available').count()).toBe(1);
    expect(await row.getByText(/^\d+ of \d+ chunks$/).textContent()).toMatch(/^(\d+) of \1 chunks$/);

    // retrieval test (keyboard: type, Enter)
    await page.getByRole('searchbox', { name: 'Query' }).fill('how many days of paid leave');
    await page.keyboard.press('Enter');
    const results = page.getByRole('list', { name: 'Retrieved chunks' });
    await results.waitFor();
    expect(await results.getByRole('listitem').first().textContent()).toContain('25 days of paid leave');
    expect(await results.getByText(/^Score \d/).count()).toBeGreaterThan(0);
    expect(await seriousA11yFindings(page)).toEqual([]);
    if (SHOTS) await page.screenshot({ path: 'docs/console-knowledge.png', fullPage: true });

    // the document's chunks: edit one, disable it, then see it under "disabled"
    await row.getByRole('link', { name: 'handbook.md' }).click();
    const chunks = page.getByRole('list', { name: 'Chunks of this document' });
    await chunks.waitFor();
    // edit a chunk's text
    await page.getByRole('button', { name: 'Edit #1' }).click();
    await page.getByRole('dialog').getByLabel('Content').fill('Every employee has 30 days of paid leave a year.');
    await page.getByRole('dialog').getByRole('button', { name: 'Save' }).click();
    await chunks.getByText('Every employee has 30 days of paid leave a year.').waitFor();
    // disable it: it shows under "disabled"
    await page.getByRole('button', { name: 'Disable #1' }).click();
    await page.getByRole('button', { name: 'Enable #1' }).waitFor();
    await page.getByLabel('Show').selectOption('false');
    await expect.poll(() => chunks.getByRole('listitem').count()).toBe(1);
    expect(await chunks.getByText('disabled', { exact: true }).count()).toBe(1);
    expect(await seriousA11yFindings(page)).toEqual([]);
  });

  it('creates a knowledge key shown once, which works on the Service API, and revokes it', async () => {
    const page = cb.page;
    await page.goto(`${s.url}/console/knowledge`);
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.getByText('Copy the key now: it is not shown again.').waitFor();
    const token = (await page.locator('.key-once code, .key-once pre').first().textContent())!.trim();
    expect(token).toMatch(/^dataset-/);
    expect((await fetch(`${s.api}/datasets`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
    const masked = page.getByRole('table', { name: 'Knowledge API keys' }).getByRole('row').nth(1);
    expect(await masked.textContent()).not.toContain(token);
    expect(await seriousA11yFindings(page)).toEqual([]);
    await masked.getByRole('button', { name: /^Revoke/ }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Revoke' }).click();
    await page.getByText('Key revoked').waitFor();
    expect((await fetch(`${s.api}/datasets`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(401);
  });
});
