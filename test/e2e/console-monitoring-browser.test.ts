import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { BROWSER_TESTS, CHROMIUM_ARGS, noticeWithoutBrowser, requireBrowser } from '../helpers/browser.js';
import { scrollsSideways, seriousA11yFindings } from '../helpers/web-app-browser.js';
import { startStatsTraffic, type StatsTraffic } from '../helpers/console-stats-traffic.js';
import { createMember, loginPage } from '../helpers/console.js';
import { PROJECT_ROOT } from '../helpers/fixtures.js';

/**
 * The console's monitoring pages in a real browser (issue #44, "see every chart drawn for a range
 * with data"): after traffic through the Service API over the last days, the overall page and an
 * app's page draw every chart with the API's figures (the SVG's marks and the screen-reader table
 * against the JSON the page received), the range picker (7/30/90 days, custom) asks for the range
 * in the browser's time zone, keyboard focus shows a value, axe-core finds nothing serious, a
 * phone's width fits, and a screenshot goes to docs/. Needs `npm run build:web`.
 */
/** Screenshots into docs/ (looked at when taken) with SAVE_WEB_SCREENSHOTS=1, as the other browser tests. */
const SHOTS = process.env.SAVE_WEB_SCREENSHOTS === '1';

noticeWithoutBrowser('the console monitoring browser tests are');

const DAY = 86_400_000;
const ZONE = 'Asia/Shanghai';

interface Day {
  date: string;
  messages: number;
  conversations: number;
  runs: number;
  end_users: number;
  tokens: number;
  latency_avg_ms: number | null;
  latency_p95_ms: number | null;
  error_rate: number | null;
  satisfaction: number | null;
}
interface Answer {
  start: string;
  end: string;
  timezone: string;
  kinds: { chat: boolean; workflow: boolean };
  data: Day[];
}

describe.runIf(BROWSER_TESTS)('console monitoring pages in a browser', { timeout: 180_000 }, () => {
  let traffic: StatsTraffic;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;

  /** Opens a console page and waits for the statistics answer it asked for. */
  async function open(url: string, act?: () => Promise<unknown>): Promise<Answer> {
    const answered = page.waitForResponse((r) => r.url().includes('statistics?') && r.status() === 200);
    await (act ? act() : page.goto(url));
    const body = (await (await answered).json()) as Answer;
    await page.locator(`[data-range="${body.data[0]!.date}/${body.data.at(-1)!.date}"]`).waitFor();
    return body;
  }

  /** The marks a chart draws for a series: [date, value] of each. */
  const marks = (chart: string, series: string) =>
    page.$$eval(`figure[data-chart="${chart}"] [data-series="${series}"] [data-value]`, (els) => els.map((e) => [e.getAttribute('data-date'), Number(e.getAttribute('data-value'))] as [string, number]));

  beforeAll(async () => {
    const executablePath = requireBrowser();
    traffic = await startStatsTraffic();
    // the last five days (noon UTC is evening in Shanghai: the same local day), messages with likes, runs and failures
    const noon = Math.floor(Date.now() / DAY) * DAY + DAY / 2;
    for (let i = 5; i >= 1; i--) {
      const at = noon - i * DAY;
      const first = await traffic.message(at, `user-${i}`, 700 + 200 * i);
      await traffic.message(at + 60_000, `user-${i}`, 1000 + 150 * i, first.conversationId);
      await traffic.message(at + 120_000, `other-${i % 2}`, 400 + 100 * i);
      if (i % 2 === 1) await traffic.feedback(first.id, `user-${i}`, 'like');
      await traffic.run(at + 180_000, `runner-${i % 3}`, 1200 + 300 * i);
      if (i === 2) {
        await traffic.message(at + 240_000, 'user-2', 0, '', true);
        await traffic.run(at + 300_000, 'runner-2', 0, true);
      }
    }
    traffic.clock.set(Date.now());
    await createMember(traffic.s, { name: 'Vera', email: 'vera@example.test', role: 'viewer' });
    const { chromium } = await import('playwright-core');
    browser = await chromium.launch({ executablePath, args: CHROMIUM_ARGS });
    context = await browser.newContext({ viewport: { width: 1280, height: 900 }, locale: 'en-US', timezoneId: ZONE });
    page = await context.newPage();
    await loginPage(page, traffic.s.url, 'vera@example.test');
  }, 150_000);
  afterAll(async () => {
    await context?.close();
    await browser?.close();
    await traffic?.close();
  });

  it('the overall page draws every chart for the last 7 days with the figures the API answered', async () => {
    const answer = await open(`${traffic.s.url}/console/monitoring`);
    expect(answer.timezone).toBe(ZONE);
    expect(answer.data).toHaveLength(7);
    expect(answer.kinds).toEqual({ chat: true, workflow: true });
    expect(answer.data.filter((d) => d.messages > 0)).toHaveLength(5);
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Monitoring: all apps');
    expect(await page.getByText(`Days in ${ZONE}`).isVisible()).toBe(true);
    const charts = await page.$$eval('figure.chart', (fs) => fs.map((f) => f.getAttribute('data-chart')));
    expect(charts).toEqual(['chart-conversations', 'chart-messages', 'chart-runs', 'chart-end-users', 'chart-messages-per-conversation', 'chart-runs-per-end-user', 'chart-tokens', 'chart-cost-usd', 'chart-latency', 'chart-error-rate', 'chart-satisfaction']);
    expect(await page.$$('.chart-empty')).toHaveLength(0);
    const days = answer.data;
    expect(await marks('chart-conversations', 'conversations')).toEqual(days.map((d) => [d.date, d.conversations]));
    expect(await marks('chart-messages', 'messages')).toEqual(days.map((d) => [d.date, d.messages]));
    expect(await marks('chart-runs', 'runs')).toEqual(days.map((d) => [d.date, d.runs]));
    expect(await marks('chart-end-users', 'end_users')).toEqual(days.map((d) => [d.date, d.end_users]));
    expect(await marks('chart-tokens', 'tokens')).toEqual(days.map((d) => [d.date, d.tokens]));
    expect(await marks('chart-latency', 'latency_avg_ms')).toEqual(days.filter((d) => d.latency_avg_ms !== null).map((d) => [d.date, d.latency_avg_ms]));
    expect(await marks('chart-latency', 'latency_p95_ms')).toEqual(days.filter((d) => d.latency_p95_ms !== null).map((d) => [d.date, d.latency_p95_ms]));
    expect(await marks('chart-error-rate', 'error_rate')).toEqual(days.filter((d) => d.error_rate !== null).map((d) => [d.date, d.error_rate]));
    expect(await marks('chart-satisfaction', 'satisfaction')).toEqual(days.filter((d) => d.satisfaction !== null).map((d) => [d.date, d.satisfaction]));
    expect(days.some((d) => d.error_rate! > 0)).toBe(true);
    expect(days.some((d) => d.satisfaction! > 0)).toBe(true);
    const table = await page.$$eval('figure[data-chart="chart-runs"] table tbody tr', (rows) => rows.map((r) => [r.querySelector('th')!.textContent, r.querySelector('td')!.textContent]));
    expect(table).toEqual(days.map((d) => [d.date, String(d.runs)]));
    expect(await seriousA11yFindings(page)).toEqual([]);
    if (SHOTS) await page.screenshot({ path: path.join(PROJECT_ROOT, 'docs', 'console-monitoring.png'), fullPage: true });
  });

  it('keyboard focus on a chart shows the day and its value', async () => {
    const slider = page.locator('figure[data-chart="chart-messages"] [role="slider"]');
    await page.locator('figure[data-chart="chart-conversations"] [role="slider"]').focus();
    await page.keyboard.press('Tab');
    expect(await slider.evaluate((e) => e === document.activeElement)).toBe(true);
    const value = await slider.getAttribute('aria-valuetext');
    expect(value).toMatch(/^\d{4}-\d{2}-\d{2}: Messages \d+$/);
    expect(await page.locator('figure[data-chart="chart-messages"] [data-readout]').textContent()).toBe(value);
    await page.keyboard.press('ArrowLeft');
    await page.keyboard.press('ArrowLeft');
    const moved = await slider.getAttribute('aria-valuetext');
    expect(moved).not.toBe(value);
    expect(await page.locator('figure[data-chart="chart-messages"] [data-tooltip]').textContent()).toContain(`Messages: ${moved!.split('Messages ')[1]}`);
  });

  it('the range picker asks for 30 days, then a custom range, in the browser\'s time zone', async () => {
    let answer = await open('', () => page.getByRole('button', { name: 'Last 30 days' }).click());
    expect(answer.data).toHaveLength(30);
    expect(await page.getByRole('button', { name: 'Last 30 days' }).getAttribute('aria-pressed')).toBe('true');
    expect(await marks('chart-messages', 'messages')).toHaveLength(30);
    await page.getByRole('button', { name: 'Custom' }).click();
    const last = answer.data.at(-1)!.date;
    const from = answer.data.at(-4)!.date;
    await page.getByLabel('From').fill(from);
    await page.getByLabel('To (inclusive)').fill(last);
    answer = await open('', () => page.getByRole('button', { name: 'Show' }).click());
    expect(answer.data.map((d) => d.date)).toHaveLength(4);
    expect(answer.start).toBe(from);
    expect(answer.timezone).toBe(ZONE);
    expect(await marks('chart-conversations', 'conversations')).toEqual(answer.data.map((d) => [d.date, d.conversations]));
  });

  it("an app's page (from the app's navigation) draws its own charts; in Japanese at a phone's width it fits", async () => {
    await page.goto(`${traffic.s.url}/console/apps/${traffic.flow.appId}`);
    await page.locator('main[data-ready="true"]').waitFor();
    const answer = await open('', () => page.getByRole('link', { name: 'Monitoring', exact: true }).last().click());
    expect(page.url()).toBe(`${traffic.s.url}/console/apps/${traffic.flow.appId}/monitoring`);
    expect(answer.kinds).toEqual({ chat: false, workflow: true });
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Monitoring: Stats workflow');
    const charts = await page.$$eval('figure.chart', (fs) => fs.map((f) => f.getAttribute('data-chart')));
    expect(charts).toEqual(['chart-runs', 'chart-end-users', 'chart-runs-per-end-user', 'chart-tokens', 'chart-latency', 'chart-error-rate']);
    expect(await marks('chart-runs', 'runs')).toEqual(answer.data.map((d) => [d.date, d.runs]));
    expect(answer.data.reduce((n, d) => n + d.runs, 0)).toBe(6);
    expect(await seriousA11yFindings(page)).toEqual([]);

    const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, locale: 'ja-JP', timezoneId: ZONE });
    // the same signed-in member on the phone (the session cookie of the log-in above)
    await phone.addCookies(await context.cookies());
    const p = await phone.newPage();
    await p.goto(`${traffic.s.url}/console/apps/${traffic.chat.appId}/monitoring`);
    await p.locator('figure.chart').first().waitFor();
    expect(await p.getByRole('heading', { level: 1 }).textContent()).toBe('モニタリング：Stats chat');
    expect(await scrollsSideways(p)).toBe(false);
    expect(await seriousA11yFindings(p)).toEqual([]);
    if (SHOTS) await p.screenshot({ path: path.join(PROJECT_ROOT, 'docs', 'console-monitoring-phone.png') });
    await phone.close();
  });
});
