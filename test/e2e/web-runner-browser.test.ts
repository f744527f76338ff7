import { mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { startServer, type TestServer } from '../helpers/server.js';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { BROWSER_TESTS, CHROMIUM_ARGS, noticeWithoutBrowser, requireBrowser } from '../helpers/browser.js';
import { endNode, startNode, templateNode, workflowDsl } from '../helpers/workflow-dsl.js';
import { scrollsSideways, seriousA11yFindings, siteCode } from '../helpers/web-app-browser.js';

/** The completion page and the workflow page in a real browser: a file input each, a Human Input pause answered in place. */
noticeWithoutBrowser('the completion and workflow page browser tests are');

const SHOTS = process.env.SAVE_WEB_SCREENSHOTS === '1';
/** A 1×1 PNG. */
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64');

const COMPLETION = `app:
  mode: completion
  name: Caption writer
  description: Writes a caption for a picture.
kind: app
version: 0.3.1
model_config:
  model:
    provider: langgenius/openai/openai
    name: gpt-4o-mini
    mode: chat
    completion_params: {}
  pre_prompt: 'Write a caption about {{topic}}.'
  more_like_this:
    enabled: true
  file_upload:
    image:
      enabled: true
      number_limits: 2
      detail: low
      transfer_methods: [local_file]
  user_input_form:
    - text-input:
        label: Topic
        variable: topic
        required: true
`;

function reviewWorkflow(): string {
  return workflowDsl(
    [
      startNode([{ variable: 'topic' }, { variable: 'doc', type: 'file', required: true, allowed_file_types: ['document'], allowed_file_upload_methods: ['local_file'] } as { variable: string }]),
      {
        id: 'review',
        type: 'human-input',
        title: 'Review',
        delivery_methods: [{ id: 'web', type: 'webapp', enabled: true, config: {} }],
        form_content: '# Check {{#start.topic#}}\n\nIs the document **ready**?',
        inputs: [{ type: 'paragraph', output_variable_name: 'comment', default: { type: 'constant', value: '' } }],
        user_actions: [
          { id: 'approve', title: 'Approve', button_style: 'primary' },
          { id: 'reject', title: 'Reject', button_style: 'default' },
        ],
        timeout: 1,
        timeout_unit: 'day',
      },
      templateNode('approved', 'Approved **{{ t }}**: {{ c }}', { t: ['start', 'topic'], c: ['review', 'comment'] }),
      templateNode('rejected', 'Rejected: {{ c }}', { c: ['review', 'comment'] }),
      endNode({ result: ['approved', 'output'] }, 'end'),
      endNode({ result: ['rejected', 'output'] }, 'end2'),
    ],
    [
      ['start', 'review'],
      ['review', 'approved', 'approve'],
      ['review', 'rejected', 'reject'],
      ['approved', 'end'],
      ['rejected', 'end2'],
    ],
    { name: 'Document review' },
  );
}

describe.skipIf(!BROWSER_TESTS)('the completion and workflow pages in a real browser', () => {
  let browser: Browser;
  let fake: FakeOpenAI;
  let s: TestServer;
  let completionCode: string;
  let workflowCode: string;
  const problems: string[] = [];

  beforeAll(async () => {
    const executablePath = requireBrowser();
    const { chromium } = await import('playwright-core');
    browser = await chromium.launch({ executablePath, args: CHROMIUM_ARGS });
    fake = await startFakeOpenAI({ reply: 'A *quiet* harbour at dawn.', chunkSize: 5, delayMs: 5 });
    s = await startServer({ env: { OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: fake.baseUrl, QUEUE_POLL_MS: '20' } });
    completionCode = await siteCode(s, (await s.importApp(COMPLETION)).appId);
    workflowCode = await siteCode(s, (await s.importApp(reviewWorkflow())).appId);
    if (SHOTS) mkdirSync('docs', { recursive: true });
  });
  afterAll(async () => {
    await browser?.close();
    await s?.close();
    await fake?.close();
  });

  async function open(url: string, width = 1280): Promise<Page> {
    const context = await browser.newContext({ viewport: { width, height: 860 } });
    const page = await context.newPage();
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    page.on('console', (m) => {
      if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) problems.push(`console: ${m.text()}`);
    });
    page.on('response', (r) => {
      if (r.status() >= 400 && !r.url().endsWith('/favicon.ico')) problems.push(`${r.status()} ${r.request().method()} ${r.url()}`);
    });
    await page.goto(url);
    return page;
  }

  it('the completion page generates from its form with an image attached, streams, saves, makes more like this, lists and removes saved answers, and runs a CSV batch', async () => {
    const page = await open(`${s.url}/completion/${completionCode}`);
    await page.getByLabel('Topic').fill('harbours');
    await page.getByLabel('Attach a file').setInputFiles({ name: 'harbour.png', mimeType: 'image/png', buffer: PNG });
    await page.locator('.chip', { hasText: 'harbour.png' }).waitFor();
    await page.getByRole('button', { name: 'Generate' }).click();
    await page.locator('.result .markdown em', { hasText: 'quiet' }).waitFor();
    const sent = fake.requests.at(-1)!.body.messages as { content: unknown }[];
    expect(JSON.stringify(sent)).toContain('Write a caption about harbours.');
    expect(JSON.stringify(sent)).toContain('image_url');
    // copy: the answer's text reaches the clipboard and the button says so
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: s.url });
    await page.locator('.result').first().getByRole('button', { name: 'Copy' }).click();
    await page.locator('.result').first().getByRole('button', { name: 'Copied' }).waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe('A *quiet* harbour at dawn.');
    await page.getByRole('button', { name: 'Good answer' }).click();
    await page.locator('[aria-pressed="true"]', { hasText: '' }).first().waitFor();
    // save (Dify's saved messages) and more like this (a new answer below, from the model)
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('button', { name: 'Saved' }).waitFor();
    await page.getByRole('button', { name: 'More like this' }).click();
    await page.locator('.result', { hasText: 'More like this' }).locator('.markdown em', { hasText: 'quiet' }).waitFor();
    expect(await page.locator('.result').count()).toBe(2);
    expect(await seriousA11yFindings(page)).toEqual([]);
    if (SHOTS) await page.screenshot({ path: path.join('docs', 'web-completion.png') });
    // the saved answers have their tab; an answer removed there is gone
    await page.getByRole('tab', { name: 'Saved' }).click();
    const savedItem = page.locator('.saved-item');
    await savedItem.first().waitFor();
    expect(await savedItem.count()).toBe(1);
    expect(await savedItem.first().locator('.markdown em').textContent()).toBe('quiet');
    expect(await seriousA11yFindings(page)).toEqual([]);
    if (SHOTS) await page.screenshot({ path: path.join('docs', 'web-completion-saved.png') });
    await savedItem.first().getByRole('button', { name: 'Remove from saved' }).click();
    await page.getByText('Nothing saved yet', { exact: false }).waitFor();
    await page.getByRole('tab', { name: 'Saved' }).click();
    await page.getByText('Saved answers: 0').waitFor();
    // a batch from a CSV file (the header names the input by its label): a run per row, the results as CSV
    await page.getByRole('tab', { name: 'Run batch' }).click();
    await page.getByLabel('CSV').setInputFiles({ name: 'rows.csv', mimeType: 'text/csv', buffer: Buffer.from('Topic\nboats\ntrains\n') });
    await page.getByText('2 rows').waitFor();
    await page.getByRole('button', { name: 'Run batch' }).click();
    await page.getByText('2 of 2 done').waitFor();
    const sentTopics = fake.requests.slice(-2).map((r) => JSON.stringify(r.body.messages));
    expect(sentTopics.some((m) => m.includes('Write a caption about boats.'))).toBe(true);
    expect(sentTopics.some((m) => m.includes('Write a caption about trains.'))).toBe(true);
    const downloading = page.waitForEvent('download');
    await page.getByRole('button', { name: 'Download results (CSV)' }).click();
    const csv = readFileSync((await (await downloading).path())!, 'utf8');
    expect(csv.split(/\r?\n/)[1]).toBe('"boats","A *quiet* harbour at dawn."');
    expect(csv.split(/\r?\n/)[2]).toBe('"trains","A *quiet* harbour at dawn."');
    expect(problems).toEqual([]);
    await page.context().close();
  });

  it('the workflow page runs with a file input, shows node progress, pauses for a Human Input form answered in place, and shows the outputs', async () => {
    const page = await open(`${s.url}/workflow/${workflowCode}`, 390);
    await page.getByLabel('topic').fill('the Q3 report');
    await page.getByLabel('doc').setInputFiles({ name: 'q3.txt', mimeType: 'text/plain', buffer: Buffer.from('Revenue grew.') });
    await page.locator('.chip', { hasText: 'q3.txt' }).waitFor();
    await page.getByRole('button', { name: 'Run' }).click();
    const form = page.getByRole('region', { name: 'Your input is needed' });
    await form.getByRole('heading', { name: 'Check the Q3 report' }).waitFor();
    expect(await form.locator('strong').textContent()).toBe('ready');
    expect(await page.locator('.step', { hasText: 'Review' }).textContent()).toContain('Waiting for input');
    await form.getByLabel('comment').fill('Looks good');
    await form.getByRole('button', { name: 'Approve' }).click();
    const result = page.locator('.outputs dd').first();
    await result.getByText('Looks good', { exact: false }).waitFor();
    // the run took the required file input (a run without it is refused), then the form's answer
    expect((await result.textContent())!.trim()).toBe('Approved the Q3 report: Looks good');
    expect(await page.locator('.result-head').textContent()).toContain('Succeeded');
    // every step has its row, the ones after the pause too (the page reopened the run's stream
    // before it sent the answer), and none is left paused
    expect(await page.locator('.step').count()).toBe(4);
    expect(await page.locator('.step.paused').count()).toBe(0);
    expect(await scrollsSideways(page)).toBe(false);
    expect(await seriousA11yFindings(page)).toEqual([]);
    if (SHOTS) await page.screenshot({ path: path.join('docs', 'web-workflow.png'), fullPage: true });
    expect(problems).toEqual([]);
    await page.context().close();
  });
});
