import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';
import type { TestServer } from './server.js';

const require = createRequire(import.meta.url);

/** The web app share code of an imported app (its site, made at import). */
export async function siteCode(s: TestServer, appId: string): Promise<string> {
  const app = await s.runtime.apps.find(appId);
  if (!app) throw new Error(`no app ${appId}`);
  return (await s.runtime.sites.forApp(app)).code;
}

/**
 * axe-core's serious and critical findings on the page as it is now (axe is evaluated through the
 * DevTools protocol, which the page's CSP does not govern; the page itself still runs under it).
 */
export async function seriousA11yFindings(page: Page): Promise<string[]> {
  const source = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
  await page.evaluate(`${source};undefined`);
  const violations = await page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run: (ctx: Document, o: unknown) => Promise<{ violations: { id: string; impact: string; help: string; nodes: { target: string[] }[] }[] }> } }).axe;
    const r = await axe.run(document, { resultTypes: ['violations'] });
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, where: v.nodes.map((n) => n.target.join(' ')).slice(0, 3) }));
  });
  return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id} (${v.impact}): ${v.help} at ${v.where.join(', ')}`);
}

/**
 * Records every text the last answer showed while it streamed (a MutationObserver in the page),
 * so a test can tell an answer that arrived in steps from one painted at once.
 */
export async function recordAnswerSteps(page: Page): Promise<void> {
  await page.evaluate(() => {
    const seen: string[] = [];
    (window as unknown as { __answerSteps: string[] }).__answerSteps = seen;
    new MutationObserver(() => {
      const answers = document.querySelectorAll('.msg.answer .answer-text');
      const text = answers[answers.length - 1]?.textContent ?? '';
      if (text && seen[seen.length - 1] !== text) seen.push(text);
    }).observe(document.body, { subtree: true, childList: true, characterData: true });
  });
}

export async function answerSteps(page: Page): Promise<string[]> {
  return page.evaluate(() => (window as unknown as { __answerSteps: string[] }).__answerSteps);
}

/** Whether the page scrolls sideways (content wider than the viewport). */
export async function scrollsSideways(page: Page): Promise<boolean> {
  return page.evaluate(() => document.documentElement.scrollWidth > window.innerWidth || document.body.scrollWidth > window.innerWidth);
}
