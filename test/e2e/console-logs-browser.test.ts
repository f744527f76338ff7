import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startServer, type TestServer } from '../helpers/server.js';
import { example } from '../helpers/fixtures.js';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { openAiCompatibleProviders } from '../helpers/openai-providers.js';
import { BROWSER_TESTS, CHROMIUM_ARGS, noticeWithoutBrowser, requireBrowser } from '../helpers/browser.js';
import { seriousA11yFindings } from '../helpers/web-app-browser.js';
import { createMember, loginPage } from '../helpers/console.js';
import { endNode, llmNode, startNode, templateNode, workflowDsl } from '../helpers/workflow-dsl.js';

/**
 * The console's Logs and Run trace pages in a real browser (issue #44): a chat app's log after a
 * conversation made through the Service API, the trace of a failed run (the failing node's error
 * and input), a running run's trace updating by itself, the keyboard, axe-core. Screenshots with
 * SAVE_WEB_SCREENSHOTS=1 (docs/console-logs.png, docs/console-trace.png).
 */
noticeWithoutBrowser('the console logs browser tests are');

const SHOTS = process.env.SAVE_WEB_SCREENSHOTS === '1';

describe.runIf(BROWSER_TESTS)('console logs and run trace in a browser', { timeout: 240_000 }, () => {
  let s: TestServer;
  let fake: FakeOpenAI;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  const apps: Record<string, { appId: string; apiKey: string }> = {};
  const post = async (k: string, path: string, body: unknown) => {
    const r = await fetch(`${s.api}${path}`, { method: 'POST', headers: { authorization: `Bearer ${k}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    return (await r.json()) as Record<string, unknown>;
  };

  beforeAll(async () => {
    const executablePath = requireBrowser();
    fake = await startFakeOpenAI();
    s = await startServer({ runtime: { providers: openAiCompatibleProviders(fake.baseUrl) } });
    apps.chat = await s.importApp(example('chat-helper.yml').replace('provider: mock', 'provider: openai'));
    apps.failing = await s.importApp(
      workflowDsl(
        [startNode([{ variable: 'topic' }]), templateNode('prep', 'about {{ t }}', { t: ['start', 'topic'] }, { title: 'Prepare' }), llmNode('ask', '{{#prep.output#}}', { title: 'Ask the model', retry_config: { retry_enabled: true, max_retries: 1, retry_interval: 1 } }), endNode({ a: ['ask', 'text'] })],
        [['start', 'prep'], ['prep', 'ask'], ['ask', 'end']],
        { name: 'Failing flow' },
      ),
    );
    apps.slow = await s.importApp(workflowDsl([startNode(), llmNode('slow', 'take your time', { title: 'Slow answer' }), endNode({ a: ['slow', 'text'] })], [['start', 'slow'], ['slow', 'end']], { name: 'Slow flow' }));
    await createMember(s, { name: 'Lou', email: 'lou@example.test', role: 'viewer' });
    const { chromium } = await import('playwright-core');
    browser = await chromium.launch({ executablePath, args: CHROMIUM_ARGS });
    context = await browser.newContext({ viewport: { width: 1280, height: 860 }, locale: 'en-US' });
    page = await context.newPage();
    await loginPage(page, s.url, 'lou@example.test');
  }, 180_000);
  afterAll(async () => {
    await context?.close();
    await browser?.close();
    await s?.close();
    await fake?.close();
  });

  it('the log of a chat app after a conversation through the Service API: the list, then the conversation with its answers and feedback', async () => {
    fake.behaviour = { reply: 'A dovetail joint interlocks two boards with flared tenons.' };
    const first = await post(apps.chat!.apiKey, '/chat-messages', { inputs: {}, query: 'What is a dovetail joint?', user: 'alice', response_mode: 'blocking' });
    fake.behaviour = { reply: 'Glue and clamps, then a day to cure.' };
    const second = await post(apps.chat!.apiKey, '/chat-messages', { inputs: {}, query: 'How do I glue it?', user: 'alice', response_mode: 'blocking', conversation_id: first.conversation_id });
    await post(apps.chat!.apiKey, `/messages/${String(first.message_id)}/feedbacks`, { rating: 'like', user: 'alice', content: 'very clear' });
    await post(apps.chat!.apiKey, `/messages/${String(second.message_id)}/feedbacks`, { rating: 'dislike', user: 'alice' });

    await page.goto(`${s.url}/console/apps/${apps.chat!.appId}`);
    await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Logs' }).click();
    await page.getByRole('heading', { name: 'Logs', level: 1 }).waitFor();
    const row = page.getByRole('row', { name: /What is a dovetail joint\?/ });
    await row.waitFor();
    expect(await row.textContent()).toContain('alice');
    expect(await row.getByText('Likes: 1').isVisible()).toBe(true);
    expect(await seriousA11yFindings(page)).toEqual([]);
    if (SHOTS) await page.screenshot({ path: 'docs/console-logs.png' });

    // the keyboard opens the conversation: focus its link, Enter
    await page.getByRole('link', { name: 'Open conversation What is a dovetail joint?' }).focus();
    await page.keyboard.press('Enter');
    const dialog = page.getByRole('dialog');
    await dialog.getByText('Glue and clamps, then a day to cure.').waitFor();
    expect(await dialog.getByText('A dovetail joint interlocks two boards with flared tenons.').isVisible()).toBe(true);
    expect(await dialog.getByText('very clear').isVisible()).toBe(true);
    expect(await seriousA11yFindings(page)).toEqual([]);
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });

    // the filters: a keyword that matches nothing, then feedback = disliked
    await page.getByRole('searchbox', { name: 'Search questions and answers' }).fill('mortise');
    await page.keyboard.press('Enter');
    await page.getByText('No conversations in this range yet.').waitFor();
    await page.getByRole('searchbox', { name: 'Search questions and answers' }).fill('');
    await page.keyboard.press('Enter');
    await page.getByLabel('Feedback').selectOption('dislike');
    await page.getByRole('row', { name: /What is a dovetail joint\?/ }).waitFor();
  });

  it('the trace of a failed run: the failing node with its error, retries and input', async () => {
    fake.behaviour = { failStatus: 500, failMessage: 'the model is down' };
    const run = await post(apps.failing!.apiKey, '/workflows/run', { inputs: { topic: 'joinery' }, user: 'frank', response_mode: 'blocking' });
    fake.behaviour = {};
    expect((run.data as { status: string }).status).toBe('failed');
    await page.goto(`${s.url}/console/apps/${apps.failing!.appId}/logs`);
    await page.getByLabel('Status').selectOption('failed');
    await page.getByRole('row', { name: /failed/ }).getByRole('link').click();
    await page.getByRole('heading', { name: 'Run trace', level: 1 }).waitFor();
    await page.getByRole('alert').filter({ hasText: 'the model is down' }).first().waitFor();
    // the failing node, with the keyboard: focus its button, Enter
    const timeline = page.getByRole('region', { name: 'Timeline of node executions' });
    const ask = timeline.getByRole('button', { name: 'Ask the model', exact: true });
    await ask.focus();
    await page.keyboard.press('Enter');
    const details = page.getByRole('region', { name: 'Node details' });
    await details.getByText(/Error: .*the model is down/).waitFor();
    expect(await details.getByText('about joinery').first().isVisible()).toBe(true);
    expect(await page.getByText('1 retries').isVisible()).toBe(true);
    // the node before it, with its input and output
    await timeline.getByRole('button', { name: 'Prepare', exact: true }).click();
    await details.getByText('"t": "joinery"').waitFor();
    expect(await seriousA11yFindings(page)).toEqual([]);
    await ask.click();
    await details.getByText(/Error: .*the model is down/).waitFor();
    if (SHOTS) await page.screenshot({ path: 'docs/console-trace.png', fullPage: true });
  });

  it('a running run\'s trace updates by itself until the run ends', async () => {
    fake.behaviour = { reply: 'one two three four five six seven eight', chunkSize: 2, delayMs: 150 };
    const started = fetch(`${s.api}/workflows/run`, { method: 'POST', headers: { authorization: `Bearer ${apps.slow!.apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ inputs: {}, user: 'hal', response_mode: 'streaming' }) });
    let runId: string | undefined;
    for (let i = 0; i < 200 && !runId; i++) {
      runId = (await s.runtime.store.db.selectFrom('workflow_runs').select('id').where('app_id', '=', apps.slow!.appId).executeTakeFirst())?.id;
      if (!runId) await new Promise((r) => setTimeout(r, 20));
    }
    await page.goto(`${s.url}/console/apps/${apps.slow!.appId}/runs/${runId}`);
    await page.getByText('Live: updating while the run goes on').waitFor();
    const slowRow = page.locator('.trace-row', { has: page.getByRole('button', { name: 'Slow answer', exact: true }) });
    await slowRow.getByText('running').waitFor();
    await (await started).text();
    fake.behaviour = {};
    // no reload: the page polls the trace after its last event
    await slowRow.getByText('succeeded').waitFor({ timeout: 20_000 });
    await page.getByText('Live: updating while the run goes on').waitFor({ state: 'hidden' });
  });
});
