import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { freePort, ManualClock, startServer, type TestServer } from '../helpers/server.js';
import { dataFrames, parseSse, readSse, type SseFrame } from '../helpers/sse.js';
import { startSmtpPeer, smtpEnv, type SmtpPeer } from '../helpers/smtp-peer.js';
import { reviewApp } from '../helpers/form-apps.js';
import { BROWSER_TESTS, CHROMIUM_ARGS, noticeWithoutBrowser, requireBrowser } from '../helpers/browser.js';

/** The form page in a real browser (test/helpers/browser.ts: skipped with a notice without one, except in CI). */
noticeWithoutBrowser('the form page browser tests are');

const USER = 'mailer';
const PASS = 'pw';
const CONTENT = '# Review of {{#start.draft#}}\n\nPlease check the **draft**. <script>window.__pwned = 1</script>\n\nComment: {{#$output.comment#}}';

describe.skipIf(!BROWSER_TESTS)('the form page in a real browser', () => {
  let browser: Browser;
  let peer: SmtpPeer;
  let s: TestServer;
  let key: string;
  let plainKey: string;
  const clock = new ManualClock();

  beforeAll(async () => {
    const executablePath = requireBrowser();
    const { chromium } = await import('playwright-core');
    browser = await chromium.launch({ executablePath, args: CHROMIUM_ARGS });
    peer = await startSmtpPeer({ user: USER, pass: PASS });
    const port = await freePort();
    s = await startServer({ port, clock, env: { ...smtpEnv(peer.port, USER, PASS), APP_WEB_URL: `http://127.0.0.1:${port}`, QUEUE_POLL_MS: '20', WEB_FORM_SUBMIT_RATE_LIMIT_MAX_ATTEMPTS: '1000' } });
    const methods = [
      { id: 'web', type: 'webapp', enabled: true, config: {} },
      { id: 'mail', type: 'email', enabled: true, config: { recipients: { whole_workspace: false, items: [{ type: 'external', email: 'reviewer@example.test' }] }, subject: 'Please review', body: 'Open [the form]({{#url#}}).' } },
    ];
    ({ apiKey: key } = await s.importApp(reviewApp(methods, CONTENT, { more: true })));
    ({ apiKey: plainKey } = await s.importApp(reviewApp([methods[0]], '# Quick check of {{#start.draft#}}', { files: false })));
  });
  afterAll(async () => {
    await browser?.close();
    await s?.close();
    await peer?.close();
  });

  async function run(apiKey: string, draft: string): Promise<{ runId: string; token: string | null }> {
    const r = await fetch(`${s.api}/workflows/run`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ inputs: { draft }, response_mode: 'streaming', user: 'erin' }),
    });
    const events = dataFrames(parseSse(await r.text()));
    expect(events.at(-1)?.event).toBe('workflow_paused');
    return { runId: String(events[0]!.workflow_run_id), token: (events.at(-2)!.data as { form_token: string | null }).form_token };
  }

  async function mailLinkFor(n: number): Promise<string> {
    await vi.waitFor(() => expect(peer.mails.length).toBeGreaterThanOrEqual(n), { timeout: 20_000, interval: 50 });
    const link = /http:\/\/127\.0\.0\.1:\d+\/form\/[A-Za-z0-9_-]+/.exec(peer.mails[n - 1]!.text)?.[0];
    expect(link).toBeDefined();
    return link!;
  }

  /** The lowest WCAG contrast ratio between any text on the page and the background behind it. */
  async function lowestContrast(page: Page): Promise<{ ratio: number; where: string }> {
    return page.evaluate(() => {
      const rgb = (c: string) => (c.match(/[\d.]+/g) ?? []).map(Number);
      const lum = (c: number[]) => {
        const f = (v: number) => ((v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4);
        return 0.2126 * f(c[0]!) + 0.7152 * f(c[1]!) + 0.0722 * f(c[2]!);
      };
      const background = (start: Element | null): number[] => {
        for (let el = start; el; el = el.parentElement) {
          const c = rgb(getComputedStyle(el).backgroundColor);
          if (c.length === 3 || (c[3] ?? 0) > 0) return c;
        }
        return [255, 255, 255];
      };
      let worst = { ratio: 21, where: '' };
      for (const el of Array.from(document.querySelectorAll('body *'))) {
        const hasText = Array.from(el.childNodes).some((n) => n.nodeType === Node.TEXT_NODE && (n.textContent ?? '').trim() !== '');
        if (!hasText && !['INPUT', 'SELECT', 'TEXTAREA', 'BUTTON'].includes(el.tagName)) continue;
        const [hi, lo] = [lum(rgb(getComputedStyle(el).color)), lum(background(el))].sort((x, y) => y - x);
        const ratio = (hi! + 0.05) / (lo! + 0.05);
        if (ratio < worst.ratio) worst = { ratio, where: el.outerHTML.slice(0, 120) };
      }
      return worst;
    });
  }

  async function newPage(): Promise<Page> {
    const ctx = await browser.newContext({ viewport: { width: 390, height: 844 } });
    return ctx.newPage();
  }

  it('opens the mailed link, fills every input type including files, clicks an action, and the run resumes in the Service API stream', async () => {
    const { runId } = await run(key, 'Q3 <plan>');
    const link = await mailLinkFor(1);
    const stream = await fetch(`${s.api}/workflow/${runId}/events?user=erin`, { headers: { authorization: `Bearer ${key}` } });
    const frames: SseFrame[] = [];
    const reading = (async () => {
      for await (const f of readSse(stream)) frames.push(f);
    })();

    const page = await newPage();
    const res = await page.goto(link);
    expect(res?.status()).toBe(200);
    expect(res?.headers()['content-security-policy']).toContain("script-src 'self'");
    expect(res?.headers()['x-frame-options']).toBe('DENY');
    expect(res?.headers()['referrer-policy']).toBe('no-referrer');
    expect(await page.locator('h1').first().innerText()).toBe('Review');
    // the DSL's <script> is shown as text and never runs
    expect(await page.locator('.content').innerText()).toContain('<script>window.__pwned = 1</script>');
    expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    expect(await page.locator('.content h1').innerText()).toBe('Review of Q3 <plan>');
    // `{{#$output.comment#}}` is the comment field itself, in place after "Comment:" (as Dify's form), not the text "[comment]"
    expect(await page.locator('.content').innerText()).not.toContain('[comment]');
    expect(await page.locator('.content textarea[name="input.comment"]').count()).toBe(1);
    expect(await page.locator('.content').evaluate((c) => {
      const label = Array.from(c.querySelectorAll('p')).find((p) => p.textContent === 'Comment:');
      return label?.nextElementSibling?.querySelector('textarea')?.getAttribute('name') ?? null;
    })).toBe('input.comment');
    // defaults: the paragraph starts with the resolved default
    expect(await page.getByLabel('comment').inputValue()).toBe('Q3 <plan>');
    expect(await page.locator('.expiry time').getAttribute('datetime')).toMatch(/^\d{4}-\d\d-\d\dT/);
    // every input type has its control, each named by its label
    expect(await page.getByLabel('title').getAttribute('type')).toBe('text');
    expect(await page.getByLabel('score').getAttribute('type')).toBe('number');
    // readable (WCAG AA contrast for every text) and usable on a phone-sized screen (no sideways scrolling)
    const contrast = await lowestContrast(page);
    expect(contrast.ratio, contrast.where).toBeGreaterThanOrEqual(4.5);
    expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true);
    if (process.env.SAVE_FORM_SCREENSHOT) {
      mkdirSync('docs', { recursive: true });
      await page.screenshot({ path: path.join('docs', 'form-page.png'), fullPage: true });
    }

    // the progressive script names a missing required field instead of posting
    await page.getByRole('button', { name: 'Approve' }).click();
    expect(await page.locator('#f1-error').innerText()).not.toBe('');
    expect(page.url()).toBe(link);

    await page.getByLabel('comment').fill('Looks good');
    await page.getByLabel('choice').selectOption('ok');
    await page.getByLabel('title').fill('Q3 plan');
    await page.getByLabel('score').fill('4.5');
    await page.getByLabel('doc', { exact: true }).setInputFiles({ name: 'brief.txt', mimeType: 'text/plain', buffer: Buffer.from('the brief') });
    await page.getByLabel('docs').setInputFiles([
      { name: 'a.md', mimeType: 'text/markdown', buffer: Buffer.from('# a') },
      { name: 'b.csv', mimeType: 'text/csv', buffer: Buffer.from('x,y') },
    ]);
    await page.getByRole('button', { name: 'Approve' }).click();
    await page.waitForSelector('[data-page="done"]');
    expect(await page.locator('h1').innerText()).toBe('Thank you');

    await reading;
    const events = dataFrames(frames);
    const filled = events.find((e) => e.event === 'human_input_form_filled')!;
    expect(filled.data).toMatchObject({ node_id: 'review', action_id: 'approve', action_text: 'Approve' });
    const submitted = (filled.data as { submitted_data: Record<string, unknown> }).submitted_data;
    expect(submitted.comment).toBe('Looks good');
    expect(submitted.choice).toBe('ok');
    expect(submitted.title).toBe('Q3 plan');
    expect(submitted.score).toBe(4.5);
    expect(submitted.doc).toMatchObject({ filename: 'brief.txt', transfer_method: 'local_file' });
    expect((submitted.docs as { filename: string }[]).map((f) => f.filename)).toEqual(['a.md', 'b.csv']);
    expect(events.at(-1)).toMatchObject({ event: 'workflow_finished', data: { status: 'succeeded', outputs: { decision: 'approved: Looks good / ok / brief.txt' } } });

    // the same link now says the form was answered
    const again = await page.goto(link);
    expect(again?.status()).toBe(412);
    expect(await page.locator('h1').innerText()).toBe('Already answered');
    await page.context().close();
  });

  it('a file list left empty is submitted as [] (the Service API accepts it); the single file stays required', async () => {
    const { runId, token } = await run(key, 'no attachments');
    const stream = await fetch(`${s.api}/workflow/${runId}/events?user=erin`, { headers: { authorization: `Bearer ${key}` } });
    const frames: SseFrame[] = [];
    const reading = (async () => {
      for await (const f of readSse(stream)) frames.push(f);
    })();
    const page = await newPage();
    await page.goto(`${s.url}/form/${token}`);
    expect(await page.getByLabel('docs').getAttribute('required')).toBeNull();
    expect(await page.locator('#f3-hint').innerText()).toContain('Optional.');
    expect(await page.getByLabel('doc', { exact: true }).getAttribute('required')).not.toBeNull();
    await page.getByLabel('comment').fill('fine as is');
    await page.getByLabel('choice').selectOption('ok');
    await page.getByLabel('title').fill('T');
    await page.getByLabel('score').fill('1');
    await page.getByLabel('doc', { exact: true }).setInputFiles({ name: 'only.txt', mimeType: 'text/plain', buffer: Buffer.from('one') });
    await page.getByRole('button', { name: 'Approve' }).click();
    await page.waitForSelector('[data-page="done"]');
    await reading;
    const events = dataFrames(frames);
    expect(events.at(-1)).toMatchObject({ event: 'workflow_finished', data: { status: 'succeeded' } });
    const filled = events.find((e) => e.event === 'human_input_form_filled')!;
    const submitted = (filled.data as { submitted_data: Record<string, unknown> }).submitted_data;
    expect(submitted.docs).toEqual([]);
    expect(submitted.doc).toMatchObject({ filename: 'only.txt' });
    await page.context().close();
  });

  it('a rejected post shows the form again with the API error text', async () => {
    const { token } = await run(plainKey, 'x');
    const page = await newPage();
    // as a browser without JavaScript and without HTML validation: the server's checks answer (a select left empty)
    await page.route('**/form/-/form.js', (r) => r.fulfill({ status: 200, contentType: 'text/javascript', body: '' }));
    await page.goto(`${s.url}/form/${token}`);
    await page.evaluate(() => document.querySelectorAll('[required]').forEach((el) => el.removeAttribute('required')));
    await page.getByRole('button', { name: 'Reject' }).click();
    await page.waitForSelector('.errors');
    expect(await page.locator('.errors').innerText()).toBe('Missing required inputs: choice');
    await page.context().close();
  });

  it('keyboard only: Tab through the fields, type, and press Enter on an action', async () => {
    const { runId, token } = await run(plainKey, 'by keys');
    const page = await newPage();
    await page.goto(`${s.url}/form/${token}`);
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('f0');
    // the focused field is visibly marked
    expect(await page.evaluate(() => getComputedStyle(document.activeElement!).outlineStyle)).toBe('solid');
    await page.keyboard.press('Control+A');
    await page.keyboard.type('typed');
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('f1');
    await page.keyboard.type('ok');
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Approve');
    await page.keyboard.press('Enter');
    await page.waitForSelector('[data-page="done"]');
    await vi.waitFor(async () => expect((await s.runtime.runs.find(runId))?.status).toBe('succeeded'), { timeout: 20_000, interval: 50 });
    const outputs = JSON.parse((await s.runtime.runs.find(runId))!.outputs ?? '{}');
    expect(outputs).toEqual({ decision: 'approved: typed / ok / ok' });
    await page.context().close();
  });

  it('shows clear pages for a form that does not exist and one that expired', async () => {
    const page = await newPage();
    const missing = await page.goto(`${s.url}/form/not-a-real-token`);
    expect(missing?.status()).toBe(404);
    expect(await page.locator('h1').innerText()).toBe('Form not found');
    // the status pages carry the same strict headers as the form
    expect(missing?.headers()).toMatchObject({ 'x-frame-options': 'DENY', 'referrer-policy': 'no-referrer', 'content-security-policy': expect.stringContaining("default-src 'none'") });
    const contrast = await lowestContrast(page);
    expect(contrast.ratio, contrast.where).toBeGreaterThanOrEqual(4.5);

    const { token } = await run(plainKey, 'late');
    clock.advance(2 * 86_400_000);
    const expired = await page.goto(`${s.url}/form/${token}`);
    expect(expired?.status()).toBe(412);
    expect(await page.locator('h1').innerText()).toBe('Form expired');
    await page.context().close();
  });
});
