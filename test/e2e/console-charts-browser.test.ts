import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { build } from 'esbuild';
import type { Browser, Page } from 'playwright-core';
import { BROWSER_TESTS, CHROMIUM_ARGS, noticeWithoutBrowser, requireBrowser } from '../helpers/browser.js';
import { scrollsSideways, seriousA11yFindings } from '../helpers/web-app-browser.js';
import { startStatsTraffic, type StatsTraffic } from '../helpers/console-stats-traffic.js';
import { PROJECT_ROOT } from '../helpers/fixtures.js';
import { resolveRange } from '../../src/console/stats-range.js';
import type { DailyStatsResult } from '../../src/console/app-stats.js';

/**
 * The monitoring charts (web/console/components/charts/) in a real browser, drawn from the figures
 * the statistics service computed over Service API traffic: every chart drawn with a mark per day
 * with data, the screen-reader table equal to the figures, a value shown on keyboard focus and on
 * hover, axe-core clean, a phone's width, a screenshot; served under the console's strict CSP.
 */
/** Screenshots into docs/ (looked at when taken) with SAVE_WEB_SCREENSHOTS=1, as the other browser tests. */
const SHOTS = process.env.SAVE_WEB_SCREENSHOTS === '1';

noticeWithoutBrowser('the console chart browser tests are');

const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'";

let traffic: StatsTraffic;
let figures: DailyStatsResult;
let server: http.Server;
let base: string;
let browser: Browser;
let page: Page;
const cspErrors: string[] = [];

async function bundle(entry: string, format: 'esm' | undefined): Promise<string> {
  const r = await build({ entryPoints: [path.join(PROJECT_ROOT, entry)], bundle: true, write: false, format, target: ['chrome100'], jsx: 'automatic', jsxImportSource: 'preact', logLevel: 'silent' });
  return r.outputFiles[0]!.text;
}

describe.skipIf(!BROWSER_TESTS)('monitoring charts in Chromium', () => {
  beforeAll(async () => {
    const executablePath = requireBrowser();
    traffic = await startStatsTraffic();
    const at = (iso: string) => Date.parse(iso);
    // a week of traffic (UTC days): messages with known latencies, likes, an error, workflow runs
    const days = ['2026-03-02', '2026-03-03', '2026-03-04', '2026-03-06', '2026-03-07'];
    for (const [i, day] of days.entries()) {
      const first = await traffic.message(at(`${day}T09:00:00Z`), `user-${i}`, 800 + 300 * i);
      await traffic.message(at(`${day}T10:00:00Z`), `user-${i}`, 1200 + 200 * i, first.conversationId);
      await traffic.message(at(`${day}T11:00:00Z`), `other-${i % 2}`, 500 + 100 * i);
      if (i % 2 === 0) await traffic.feedback(first.id, `user-${i}`, 'like');
      await traffic.run(at(`${day}T12:00:00Z`), `runner-${i % 3}`, 1500 + 250 * i);
    }
    await traffic.message(at('2026-03-04T13:00:00Z'), 'user-2', 0, '', true);
    await traffic.run(at('2026-03-06T13:00:00Z'), 'runner-1', 0, true);
    figures = await traffic.s.runtime.appStats.daily(traffic.apps('chat', 'flow'), resolveRange({ start: '2026-03-01', end: '2026-03-08', timezone: 'UTC' }, 366));

    const js = await bundle('test/fixtures/console-charts/harness.tsx', 'esm');
    const css = await build({ entryPoints: [path.join(PROJECT_ROOT, 'test/fixtures/console-charts/harness.css')], bundle: true, write: false, logLevel: 'silent' }).then((r) => r.outputFiles[0]!.text);
    server = http.createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      const send = (type: string, body: string) => res.writeHead(200, { 'content-type': type, 'content-security-policy': CSP }).end(body);
      if (url.pathname === '/') send('text/html; charset=utf-8', '<!doctype html><html><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Monitoring</title><link rel="stylesheet" href="/harness.css"><script type="module" src="/harness.js"></script></head><body><div id="root"></div></body></html>');
      else if (url.pathname === '/harness.js') send('text/javascript', js);
      else if (url.pathname === '/harness.css') send('text/css', css);
      else if (url.pathname === '/stats.json') send('application/json', JSON.stringify(figures));
      else if (url.pathname === '/favicon.ico') res.writeHead(204).end();
      else res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const { chromium } = await import('playwright-core');
    browser = await chromium.launch({ executablePath, args: CHROMIUM_ARGS });
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.on('console', (m) => {
      if (m.type() === 'error') cspErrors.push(m.text());
    });
    await page.goto(`${base}/`);
    await page.waitForSelector('body[data-ready="1"]');
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await new Promise((r) => server?.close(r));
    await traffic?.close();
  });

  it('every chart is drawn, a mark for each day with data, and its table holds the figures', async () => {
    const charts = await page.$$eval('figure.chart', (fs) => fs.map((f) => f.getAttribute('data-chart')));
    expect(charts).toEqual(['chart-conversations', 'chart-messages', 'chart-runs', 'chart-end-users', 'chart-messages-per-conversation', 'chart-runs-per-end-user', 'chart-tokens', 'chart-cost-usd', 'chart-latency', 'chart-error-rate', 'chart-satisfaction']);
    expect(await page.$$('.chart-empty')).toHaveLength(0);
    const days = figures.days;
    expect(days.map((d) => d.date)).toEqual(['2026-03-01', '2026-03-02', '2026-03-03', '2026-03-04', '2026-03-05', '2026-03-06', '2026-03-07']);
    // bars: one per day (zeros drawn flat); lines: a point per day with a value
    const marks = async (chart: string, series: string) => page.$$eval(`figure[data-chart="${chart}"] [data-series="${series}"] [data-value]`, (els) => els.map((e) => [e.getAttribute('data-date'), Number(e.getAttribute('data-value'))]));
    expect(await marks('chart-conversations', 'conversations')).toEqual(days.map((d) => [d.date, d.conversations]));
    expect(await marks('chart-runs', 'runs')).toEqual(days.map((d) => [d.date, d.runs]));
    expect(await marks('chart-tokens', 'tokens')).toEqual(days.map((d) => [d.date, d.tokens]));
    expect(await marks('chart-latency', 'latency_p95_ms')).toEqual(days.filter((d) => d.latency_p95_ms !== null).map((d) => [d.date, d.latency_p95_ms]));
    expect(await marks('chart-satisfaction', 'satisfaction')).toEqual(days.filter((d) => d.satisfaction !== null).map((d) => [d.date, d.satisfaction]));
    expect(await marks('chart-error-rate', 'error_rate')).toEqual(days.filter((d) => d.error_rate !== null).map((d) => [d.date, d.error_rate]));
    // the figures are real: a week with data on five days, an error and likes
    expect(days.filter((d) => d.messages > 0).map((d) => d.date)).toEqual(['2026-03-02', '2026-03-03', '2026-03-04', '2026-03-06', '2026-03-07']);
    expect(days.find((d) => d.date === '2026-03-04')!.errors).toBe(1);
    expect(days.find((d) => d.date === '2026-03-02')!.satisfaction).toBeGreaterThan(0);
    // the line is drawn through the points
    expect(await page.$eval('figure[data-chart="chart-latency"] [data-series="latency_avg_ms"] path', (p) => p.getAttribute('d') ?? '')).toMatch(/^M[\d.]+,[\d.]+(L[\d.]+,[\d.]+)+/);
    // the screen-reader table: a row per day, the values as the figures
    const table = await page.$$eval('figure[data-chart="chart-messages"] table tbody tr', (rows) => rows.map((r) => [r.querySelector('th')!.textContent, r.querySelector('td')!.textContent]));
    expect(table).toEqual(days.map((d) => [d.date, String(d.messages)]));
    expect(cspErrors, cspErrors.join('\n')).toEqual([]);
  });

  it('keyboard focus shows a value; the arrow keys move between days; hovering shows one too', async () => {
    await page.keyboard.press('Tab');
    const focused = await page.evaluate(() => document.activeElement?.closest('figure')?.getAttribute('data-chart'));
    expect(focused).toBe('chart-conversations');
    const text = (selector: string) => page.$eval(selector, (e) => e.textContent);
    const last = figures.days.at(-1)!;
    expect(await text('figure[data-chart="chart-conversations"] [data-readout]')).toBe(`${last.date}: Conversations ${last.conversations}`);
    expect(await text('figure[data-chart="chart-conversations"] [data-tooltip]')).toContain(`Conversations: ${last.conversations}`);
    await page.keyboard.press('ArrowLeft');
    const before = figures.days.at(-2)!;
    expect(await page.$eval('figure[data-chart="chart-conversations"] [role="slider"]', (e) => e.getAttribute('aria-valuetext'))).toBe(`${before.date}: Conversations ${before.conversations}`);
    await page.keyboard.press('Home');
    expect(await page.$eval('figure[data-chart="chart-conversations"] [role="slider"]', (e) => e.getAttribute('aria-valuenow'))).toBe('0');
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.closest('figure')?.getAttribute('data-chart'))).toBe('chart-messages');
    expect(await page.$('figure[data-chart="chart-conversations"] [data-tooltip]')).toBeNull();

    // the pointer over the third day of the latency chart
    const box = (await page.$('figure[data-chart="chart-latency"] svg'))!;
    await box.scrollIntoViewIfNeeded();
    const r = (await box.boundingBox())!;
    const plotX = (56 + ((640 - 56 - 16) / 7) * 2.5) / 640;
    await page.mouse.move(r.x + r.width * plotX, r.y + r.height / 2);
    const third = figures.days[2]!;
    const tip = await text('figure[data-chart="chart-latency"] [data-tooltip]');
    expect(tip).toContain('03-03');
    expect(tip).toContain(`Average: ${(third.latency_avg_ms! / 1000).toLocaleString('en', { maximumFractionDigits: 2 })} s`);
  });

  it('axe-core finds nothing serious; in Japanese and at a phone width it still fits', async () => {
    expect(await seriousA11yFindings(page)).toEqual([]);
    if (SHOTS) await page.screenshot({ path: path.join(PROJECT_ROOT, 'docs', 'console-monitoring-charts.png'), fullPage: true });
    const phone = await browser.newPage({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
    await phone.goto(`${base}/?lang=ja`);
    await phone.waitForSelector('body[data-ready="1"]');
    expect(await phone.textContent('h1')).toBe('モニタリング：すべてのアプリ');
    expect(await phone.textContent('figure[data-chart="chart-error-rate"] figcaption')).toBe('エラー率');
    expect(await scrollsSideways(phone)).toBe(false);
    expect(await seriousA11yFindings(phone)).toEqual([]);
    if (SHOTS) await phone.screenshot({ path: path.join(PROJECT_ROOT, 'docs', 'console-monitoring-charts-phone.png') });
    await phone.close();
  });
});
