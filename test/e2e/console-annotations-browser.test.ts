import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import type { TestServer } from '../helpers/server.js';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { BROWSER_TESTS, noticeWithoutBrowser } from '../helpers/browser.js';
import { seriousA11yFindings } from '../helpers/web-app-browser.js';
import { consoleBrowser, type ConsoleBrowser } from '../helpers/console.js';

/**
 * The annotation pages in a real browser: an answer given through the Service API improved into
 * an annotation from the app's log, annotation reply turned on and its job watched to completion, the next identical
 * question (Service API) answered from the annotation, its hit in the history; CSV export and
 * import; the keyboard; axe-core.
 */
noticeWithoutBrowser('the console annotation browser tests are');

const SHOTS = process.env.SAVE_WEB_SCREENSHOTS === '1';

const chatApp = `app:
  mode: chat
  name: Support desk
kind: app
version: 0.3.1
model_config:
  model:
    provider: langgenius/openai/openai
    name: gpt-4o-mini
    mode: chat
  pre_prompt: 'You are helpful.'
`;

describe.runIf(BROWSER_TESTS)('console annotations in a browser', { timeout: 180_000 }, () => {
  let cb: ConsoleBrowser;
  let s: TestServer;
  let fake: FakeOpenAI;
  let appId: string;
  let key: string;

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    cb = await consoleBrowser({
      server: { env: { OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: fake.baseUrl, EMBEDDINGS_BASE_URL: fake.baseUrl, EMBEDDINGS_MODEL: 'text-embedding-3-small' } },
      setup: async (server) => {
        ({ appId, apiKey: key } = await server.importApp(chatApp));
      },
      members: [{ name: 'Eddie', email: 'eddie@example.test', role: 'editor' }],
      loginAs: 'eddie@example.test',
      context: { viewport: { width: 1280, height: 900 }, locale: 'en-US', acceptDownloads: true },
    });
    s = cb.s;
  }, 120_000);
  afterAll(async () => {
    await cb?.close();
    await fake?.close();
  });

  async function ask(query: string): Promise<{ answer: string; message_id: string }> {
    const r = await fetch(`${s.api}/chat-messages`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ query, inputs: {}, user: 'customer', response_mode: 'blocking' }) });
    expect(r.status).toBe(200);
    return r.json();
  }

  const row = (page: Page, text: string) => page.getByRole('row').filter({ hasText: text });

  it('improves an answer, turns reply on, and the next identical question is answered from the annotation', async () => {
    const first = await ask('Do you deliver on Sundays?');
    expect(first.answer).toContain('echo:');

    const page = cb.page;

    // the app's log: open the conversation, "Improve this answer" on the answer
    await page.goto(`${s.url}/console/apps/${appId}/logs`);
    await page.getByRole('link', { name: 'Open conversation Do you deliver on Sundays?' }).click();
    const drawer = page.getByRole('dialog');
    await drawer.getByRole('button', { name: 'Improve this answer' }).click();
    const better = page.getByLabel('Better answer');
    expect(await better.inputValue()).toBe(first.answer);
    await better.fill('No, we deliver Monday to Saturday.');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByText('Saved as an annotation').waitFor();
    expect(await seriousA11yFindings(page)).toEqual([]);
    await page.keyboard.press('Escape');

    // the same form as a page (a link to one message): it says the message has an annotation already
    await page.goto(`${s.url}/console/apps/${appId}/annotations/improve/${first.message_id}`);
    await page.getByText('This message has an annotation already; saving edits it.').waitFor();
    expect(await page.getByLabel('Better answer').inputValue()).toBe('No, we deliver Monday to Saturday.');

    // the annotations page: the annotation listed; turn reply on and watch the job finish
    await page.getByRole('link', { name: 'Annotations' }).first().click();
    await row(page, 'Do you deliver on Sundays?').waitFor();
    await page.getByLabel('Answer matching questions from annotations').check();
    await page.getByLabel('Score threshold (0 to 1)').fill('0.9');
    await page.getByLabel('Embedding model').selectOption('text-embedding-3-small');
    await page.getByRole('button', { name: 'Apply settings' }).click();
    await page.getByRole('status').getByText('completed').waitFor();
    await page.getByText('1 of 1 annotations embedded').first().waitFor();

    // the next identical question, through the Service API, is answered from the annotation
    const next = await ask('Do you deliver on Sundays?');
    expect(next.answer).toBe('No, we deliver Monday to Saturday.');
    await page.reload();
    const r = row(page, 'Do you deliver on Sundays?');
    await r.waitFor();
    expect(await r.getByRole('cell').nth(2).textContent()).toBe('1');
    await r.getByRole('button', { name: /^Hit history/ }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByRole('row').filter({ hasText: 'Do you deliver on Sundays?' }).waitFor();
    expect(await seriousA11yFindings(page)).toEqual([]);
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });
    if (SHOTS) await page.screenshot({ path: 'docs/console-annotations.png', fullPage: true });
  });

  it('exports CSV as a download and imports a CSV file; searches with the keyboard', async () => {
    const page = cb.page;
    await page.goto(`${s.url}/console/apps/${appId}/annotations`);
    await row(page, 'Do you deliver on Sundays?').waitFor();

    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'Export CSV' }).click()]);
    const exported = readFileSync((await download.path())!, 'utf8');
    expect(exported).toBe('\ufeffquestion,answer\r\nDo you deliver on Sundays?,"No, we deliver Monday to Saturday."\r\n');

    await page.getByLabel(/^CSV file/).setInputFiles({ name: 'faq.csv', mimeType: 'text/csv', buffer: Buffer.from('question,answer\nWhere is the shop?,"12 Quay Street, Leith"\nIs parking free?,Yes\n') });
    await page.getByRole('button', { name: 'Import CSV' }).click();
    await page.getByText('2 annotations imported').waitFor();
    await row(page, 'Where is the shop?').waitFor();

    // a bad file: the error names the row
    await page.getByLabel(/^CSV file/).setInputFiles({ name: 'bad.csv', mimeType: 'text/csv', buffer: Buffer.from('question,answer\nq1,a1\nq2,\n') });
    await page.getByRole('button', { name: 'Import CSV' }).click();
    await expect.poll(() => page.getByRole('alert').filter({ hasText: 'row 3' }).count()).toBe(1);

    // keyboard only: from the search box, type and press Enter
    await page.getByRole('searchbox', { name: 'Search questions and answers' }).focus();
    await page.keyboard.type('parking');
    await page.keyboard.press('Enter');
    await expect.poll(() => page.getByRole('row').count()).toBe(2); // the header and one row
    await row(page, 'Is parking free?').waitFor();
    // Tab reaches the row's buttons in order
    for (let i = 0; i < 40; i++) {
      await page.keyboard.press('Tab');
      if ((await page.evaluate(() => document.activeElement?.getAttribute('aria-label'))) === 'Edit: Is parking free?') break;
    }
    expect(await page.evaluate(() => document.activeElement?.getAttribute('aria-label'))).toBe('Edit: Is parking free?');
    await page.keyboard.press('Enter');
    await page.getByRole('dialog').getByLabel('Answer').fill('Yes, for two hours.');
    await page.getByRole('dialog').getByRole('button', { name: 'Save' }).click();
    await row(page, 'Yes, for two hours.').waitFor();
    expect(await seriousA11yFindings(page)).toEqual([]);
  });
});
