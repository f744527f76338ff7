import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startServer, type TestServer } from '../helpers/server.js';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { BROWSER_TESTS, CHROMIUM_ARGS, noticeWithoutBrowser, requireBrowser } from '../helpers/browser.js';
import { startNode, workflowDsl } from '../helpers/workflow-dsl.js';
import { kbClient } from '../helpers/kb-client.js';
import { answerSteps, recordAnswerSteps, scrollsSideways, seriousA11yFindings, siteCode } from '../helpers/web-app-browser.js';

/** The chat page (`/chat/{code}`), the chatbot in another site's page through `/embed.min.js`, in a real browser. */
noticeWithoutBrowser('the web chat browser tests are');

const SHOTS = process.env.SAVE_WEB_SCREENSHOTS === '1';

function chatApp(): string {
  return `app:
  mode: chat
  name: Joinery helper
  description: Answers woodworking questions.
  icon: 🪚
  icon_background: '#FEF3C7'
kind: app
version: 0.3.1
model_config:
  model:
    provider: langgenius/openai/openai
    name: gpt-4o-mini
    mode: chat
    completion_params:
      temperature: 0.1
  pre_prompt: 'You help {{name}} with woodworking.'
  opening_statement: 'Hello! Ask me anything about joinery.'
  suggested_questions:
    - What is a dovetail joint?
    - Which glue should I use?
  user_input_form:
    - text-input:
        label: Your name
        variable: name
        required: true
        max_length: 40
`;
}

/** A chatflow that asks a person before it answers (the Human Input form shown in the chat, answered in place). */
function approvalChatflow(): string {
  return workflowDsl(
    [
      startNode(),
      {
        id: 'ask',
        type: 'human-input',
        title: 'Approval',
        delivery_methods: [{ id: 'web', type: 'webapp', enabled: true, config: {} }],
        form_content: 'May I answer **{{#sys.query#}}**?',
        inputs: [{ type: 'paragraph', output_variable_name: 'note', default: { type: 'constant', value: '' } }],
        user_actions: [{ id: 'yes', title: 'Yes, answer', button_style: 'primary' }],
        timeout: 1,
        timeout_unit: 'day',
      },
      { id: 'answer', type: 'answer', title: 'Answer', answer: 'Approved {{#sys.query#}} with note: {{#ask.note#}}' },
    ],
    [['start', 'ask'], ['ask', 'answer', 'yes']],
    { mode: 'advanced-chat', name: 'Approval chat' },
  );
}

/** A chat app with a dataset and citations, suggested questions after each answer, and images. */
function knowledgeChatApp(dataset: string): string {
  return `app:
  mode: chat
  name: Office helper
kind: app
version: 0.3.1
model_config:
  model:
    provider: langgenius/openai/openai
    name: gpt-4o-mini
    mode: chat
    completion_params: {}
  pre_prompt: 'Be brief.'
  opening_statement: 'Ask me about the office.'
  suggested_questions:
    - remote work fridays
  suggested_questions_after_answer:
    enabled: true
  retriever_resource:
    enabled: true
  dataset_configs:
    retrieval_model: multiple
    top_k: 2
    reranking_enable: false
    datasets:
      strategy: router
      datasets:
        - dataset:
            enabled: true
            id: ${dataset}
  file_upload:
    image:
      enabled: true
      number_limits: 2
      transfer_methods: [local_file]
`;
}

const SUGGESTED_PROMPT = 'Please help me predict the three most likely questions';
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64');

const ANSWER = 'A **dovetail** joint interlocks *tails* and pins.\n\n| part | shape |\n|---|---|\n| tail | trapezoid |\n\n```js\nconst joint = "dovetail";\n```\n';

describe.skipIf(!BROWSER_TESTS)('the chat page in a real browser', () => {
  let browser: Browser;
  let fake: FakeOpenAI;
  let s: TestServer;
  let key: string;
  let code: string;
  let flowCode: string;
  let context: BrowserContext;
  let page: Page;
  const problems: string[] = [];

  beforeAll(async () => {
    const executablePath = requireBrowser();
    const { chromium } = await import('playwright-core');
    browser = await chromium.launch({ executablePath, args: CHROMIUM_ARGS });
    fake = await startFakeOpenAI();
    s = await startServer({ env: { OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: fake.baseUrl, QUEUE_POLL_MS: '20' } });
    let appId: string;
    ({ apiKey: key, appId } = await s.importApp(chatApp()));
    code = await siteCode(s, appId);
    flowCode = await siteCode(s, (await s.importApp(approvalChatflow())).appId);
    if (SHOTS) mkdirSync('docs', { recursive: true });
  });
  afterAll(async () => {
    await browser?.close();
    await s?.close();
    await fake?.close();
  });
  beforeEach(async () => {
    fake.behaviour = { reply: ANSWER, chunkSize: 6, delayMs: 15 };
    problems.length = 0;
    context = await browser.newContext({ viewport: { width: 1280, height: 820 } });
    page = await context.newPage();
    watch(page);
    page.on('dialog', (d) => {
      problems.push(`dialog: ${d.message()}`);
      void d.dismiss();
    });
  });

  /** Page errors, console errors and failed requests of our own server are problems (the browser's favicon guess is not). */
  function watch(p: Page): void {
    p.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    p.on('console', (m) => {
      if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) problems.push(`console: ${m.text()}`);
    });
    p.on('response', (r) => {
      if (r.status() >= 400 && !r.url().endsWith('/favicon.ico')) problems.push(`${r.status()} ${r.request().method()} ${r.url()}`);
    });
  }

  async function openChat(p: Page = page): Promise<void> {
    await p.goto(`${s.url}/chat/${code}`);
    await p.getByRole('textbox', { name: /Message/ }).waitFor();
  }

  it('streams an answer in steps, takes feedback with a comment, keeps the conversation across a reload, renames and deletes it', async () => {
    await openChat();
    await page.getByText('Hello! Ask me anything about joinery.').waitFor();
    await page.getByLabel('Your name').fill('Ada');
    await recordAnswerSteps(page);
    await page.getByRole('textbox', { name: /Message/ }).fill('What is a dovetail joint?');
    await page.keyboard.press('Enter');
    const answer = page.locator('.msg.answer .answer-text').last();
    await answer.getByText('interlocks').waitFor();
    await page.getByRole('button', { name: 'Good answer' }).waitFor();
    // the answer was painted in several steps as it streamed, then rendered as Markdown
    const steps = await answerSteps(page);
    expect(steps.length).toBeGreaterThanOrEqual(3);
    expect(await answer.locator('strong').first().textContent()).toBe('dovetail');
    expect(await answer.locator('table td').first().textContent()).toBe('tail');
    expect(await answer.locator('pre code').textContent()).toContain('const joint');
    // the start form's input reached the model's system prompt
    expect(JSON.stringify(fake.requests.at(-1)!.body.messages)).toContain('You help Ada with woodworking.');

    await page.getByRole('button', { name: 'Good answer' }).click();
    await page.getByPlaceholder('What could be better? (optional)').fill('Clear and short');
    await page.getByRole('button', { name: 'Send feedback' }).click();
    await page.getByText('Thanks for the feedback').waitFor();
    const feedbacks = (await (await fetch(`${s.api}/app/feedbacks`, { headers: { authorization: `Bearer ${key}` } })).json()) as { data: { rating: string; content: string | null; from_source: string }[] };
    expect(feedbacks.data).toHaveLength(1);
    expect(feedbacks.data[0]).toMatchObject({ rating: 'like', content: 'Clear and short' });

    // a reload: the same browser is the same end user; its conversation is listed and opens
    await page.reload();
    const list = page.getByRole('navigation', { name: 'Conversations' });
    const item = list.locator('.conv-open').first();
    await item.waitFor();
    await item.click();
    await page.locator('.question-text', { hasText: 'What is a dovetail joint?' }).waitFor();
    expect(await page.getByRole('button', { name: 'Remove rating' }).getAttribute('aria-pressed')).toBe('true');

    // rename
    const name = (await item.textContent())!.trim();
    await list.getByRole('button', { name: `Actions for ${name}` }).click();
    await page.getByRole('button', { name: 'Rename' }).click();
    await page.getByLabel('Rename conversation').fill('Joints');
    await page.keyboard.press('Enter');
    await list.getByText('Joints', { exact: true }).waitFor();
    await page.reload();
    await page.getByRole('navigation', { name: 'Conversations' }).getByText('Joints', { exact: true }).waitFor();

    // pin: listed under Pinned
    await page.getByRole('button', { name: 'Actions for Joints' }).click();
    await page.getByRole('button', { name: 'Pin', exact: true }).click();
    await page.getByRole('heading', { name: 'Pinned' }).waitFor();

    // delete, confirmed in the dialog
    await page.getByRole('button', { name: 'Actions for Joints' }).click();
    await page.getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete' }).click();
    await page.getByText('No conversations yet').waitFor();
    await page.reload();
    await page.getByText('No conversations yet').waitFor();
    expect(problems).toEqual([]);

    if (SHOTS) {
      await page.getByLabel('Your name').fill('Ada');
      await page.getByRole('textbox', { name: /Message/ }).fill('What is a dovetail joint?');
      await page.keyboard.press('Enter');
      await page.getByRole('button', { name: 'Good answer' }).waitFor();
      await page.screenshot({ path: path.join('docs', 'web-chat.png') });
      await page.setViewportSize({ width: 390, height: 844 });
      // the conversation list slides away into its drawer on a narrow screen
      await page.locator('#sidebar').waitFor({ state: 'hidden' });
      await page.screenshot({ path: path.join('docs', 'web-chat-mobile.png') });
    }
    await context.close();
  });

  it('a chatflow that pauses shows its steps and its Human Input form in the chat; answered there, the answer follows', async () => {
    await page.goto(`${s.url}/chat/${flowCode}`);
    const box = page.getByRole('textbox', { name: /Message/ });
    await box.fill('deploy v2');
    await box.press('Enter');
    const form = page.getByRole('region', { name: 'Your input is needed' });
    await form.getByText('May I answer').waitFor();
    expect(await form.locator('strong').textContent()).toBe('deploy v2');
    await page.locator('.steps summary').click();
    expect(await page.locator('.step', { hasText: 'Approval' }).textContent()).toContain('Waiting for input');
    await form.getByLabel('note').fill('ship it');
    await form.getByRole('button', { name: 'Yes, answer' }).click();
    await page.locator('.answer-text', { hasText: 'Approved deploy v2 with note: ship it' }).waitFor();
    expect(await page.locator('.step', { hasText: 'Answer' }).textContent()).toContain('Succeeded');
    expect(problems).toEqual([]);
    await context.close();
  });

  it('a knowledge chat: a suggested question asked by a click, the answer with its citations and follow-up questions, an image attached, stop and regenerate', async () => {
    const kb = kbClient(s, await s.datasetKey());
    const ds = await kb.dataset('Office handbook', 'economy');
    const made = await kb.call('POST', `/datasets/${ds}/document/create-by-text`, { name: 'Policies', text: 'Remote work is allowed on Fridays.\nThe office closes at six.', process_rule: { mode: 'custom', rules: { segmentation: { separator: '\n', max_tokens: 50 } } } });
    expect(await kb.settle(ds, made.body.batch)).toMatchObject({ indexing_status: 'completed' });
    const officeCode = await siteCode(s, (await s.importApp(knowledgeChatApp(ds))).appId);
    const follow = ['Can I work from home on Mondays?', 'When does the office close?'];
    fake.behaviour = { reply: (body) => (JSON.stringify(body.messages).includes(SUGGESTED_PROMPT) ? JSON.stringify(follow) : 'Yes, on Fridays.'), chunkSize: 4, delayMs: 10 };
    await page.goto(`${s.url}/chat/${officeCode}`);
    await page.getByRole('group', { name: 'Try asking' }).getByRole('button', { name: 'remote work fridays' }).click();
    const turn = (i: number) => page.locator('.turn').nth(i).locator('.msg.answer');
    const answer = turn(0);
    await answer.locator('.answer-text', { hasText: 'Yes, on Fridays.' }).waitFor();
    // the citations of the knowledge it used, opened to read the chunk
    const citations = answer.locator('details.citations');
    await citations.locator('summary').click();
    expect(await citations.textContent()).toContain('Policies');
    expect(await citations.locator('.citation-text').first().textContent()).toContain('Remote work is allowed on Fridays.');
    // the follow-up questions the model suggested; one click asks the next
    const after = page.getByRole('group', { name: 'Suggested follow-up questions' });
    await after.getByRole('button', { name: follow[1] }).waitFor();
    // an image attached to the next question reaches the model with it
    await page.getByLabel('Attach a file').setInputFiles({ name: 'desk.png', mimeType: 'image/png', buffer: PNG });
    await page.locator('.chip', { hasText: 'desk.png' }).waitFor();
    await after.getByRole('button', { name: follow[1] }).click();
    await page.locator('.question-text', { hasText: follow[1] }).waitFor();
    await turn(1).locator('.answer-text', { hasText: 'Yes, on Fridays.' }).waitFor();
    const sent = fake.requests.filter((r) => !JSON.stringify(r.body.messages).includes(SUGGESTED_PROMPT)).at(-1)!;
    expect(JSON.stringify(sent.body.messages)).toContain('image_url');
    expect(JSON.stringify(sent.body.messages)).toContain(follow[1]);
    // stop: a slow answer is cut short where it was, and says so
    fake.behaviour = { reply: 'word '.repeat(400), chunkSize: 5, delayMs: 20 };
    await page.getByRole('textbox', { name: /Message/ }).fill('Tell me everything');
    await page.keyboard.press('Enter');
    await turn(2).locator('.answer-text', { hasText: 'word' }).waitFor();
    await page.getByRole('button', { name: 'Stop responding' }).click();
    await turn(2).getByText('Stopped', { exact: false }).waitFor();
    const stoppedText = (await turn(2).locator('.answer-text').textContent())!;
    expect(stoppedText.length).toBeLessThan('word '.repeat(400).length);
    // regenerate: the last question asked again, answered anew in place of the stopped answer
    fake.behaviour = { reply: 'A short answer.', chunkSize: 4 };
    await page.getByRole('button', { name: 'Regenerate' }).last().click();
    await turn(2).locator('.answer-text', { hasText: 'A short answer.' }).waitFor();
    expect(await page.locator('.question-text', { hasText: 'Tell me everything' }).count()).toBe(1);
    expect(await seriousA11yFindings(page)).toEqual([]);
    expect(problems).toEqual([]);
    await context.close();
  });

  it('runs nothing the model writes: raw HTML is text, javascript: links are not links', async () => {
    fake.behaviour = { reply: 'Look: <img src=x onerror="window.__pwned=1"> <script>window.__pwned=2</script> [click me](javascript:window.__pwned=3) <a href="javascript:window.__pwned=4">a</a> ![i](javascript:window.__pwned=5)', chunkSize: 8 };
    await openChat();
    await page.getByLabel('Your name').fill('Eve');
    await page.getByRole('textbox', { name: /Message/ }).fill('Say something odd');
    await page.keyboard.press('Enter');
    const answer = page.locator('.msg.answer .answer-text').last();
    await page.getByRole('button', { name: 'Good answer' }).waitFor();
    expect(await answer.textContent()).toContain('<img src=x onerror="window.__pwned=1">');
    expect(await answer.locator('img, script, a[href^="javascript"], [onerror]').count()).toBe(0);
    await answer.getByText('click me', { exact: false }).click();
    expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    expect(problems).toEqual([]);
    await context.close();
  });

  it('works with the keyboard alone, fits 390 px without sideways scrolling, and has no serious accessibility finding', async () => {
    fake.behaviour = { reply: `Wide: \`${'x'.repeat(300)}\`\n\n| ${Array.from({ length: 12 }, (_, i) => `column ${i}`).join(' | ')} |\n|${'---|'.repeat(12)}\n| ${Array.from({ length: 12 }, () => 'value').join(' | ')} |`, chunkSize: 40 };
    await context.close();
    context = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
    page = await context.newPage();
    watch(page);
    await openChat();
    expect(await seriousA11yFindings(page)).toEqual([]);
    // keyboard only: the name field, then the message box, Enter sends
    const focusNext = async (match: (el: { id: string; label: string }) => boolean) => {
      for (let i = 0; i < 40; i++) {
        await page.keyboard.press('Tab');
        const el = await page.evaluate(() => ({ id: document.activeElement?.id ?? '', label: document.activeElement?.getAttribute('aria-label') ?? '' }));
        if (match(el)) return;
      }
      throw new Error('focus never reached the element');
    };
    await focusNext((el) => el.id === 'start-name');
    await page.keyboard.type('Kim');
    await focusNext((el) => el.id === 'composer');
    await page.keyboard.type('Show me a wide table');
    await page.keyboard.press('Enter');
    await page.getByRole('button', { name: 'Good answer' }).waitFor();
    await focusNext((el) => el.label === 'Good answer');
    await page.keyboard.press('Enter');
    await page.getByPlaceholder('What could be better? (optional)').waitFor();
    expect(await page.getByRole('button', { name: 'Remove rating' }).getAttribute('aria-pressed')).toBe('true');
    // the conversation list opens from the menu button, with the keyboard
    await page.getByRole('button', { name: 'Show conversations' }).focus();
    await page.keyboard.press('Enter');
    await page.locator('.conv-open').first().waitFor({ state: 'visible' });
    expect(await scrollsSideways(page)).toBe(false);
    expect(await seriousA11yFindings(page)).toEqual([]);
    await page.keyboard.press('Escape');
    await page.getByRole('button', { name: 'Close menu' }).click();
    expect(await scrollsSideways(page)).toBe(false);
    expect(problems).toEqual([]);
    await context.close();
  });

  it("speaks the browser's language (Japanese, Simplified Chinese), else the site's default (English)", async () => {
    await context.close();
    for (const [locale, word] of [['ja-JP', '新しいチャット'], ['zh-CN', '新对话'], ['fr-FR', 'New chat']] as const) {
      context = await browser.newContext({ locale, viewport: { width: 1280, height: 800 } });
      const p = await context.newPage();
      await p.goto(`${s.url}/chat/${code}`);
      await p.getByRole('button', { name: word }).first().waitFor();
      expect(await p.evaluate(() => document.documentElement.lang)).toBe(locale === 'fr-FR' ? 'en-US' : locale === 'zh-CN' ? 'zh-Hans' : 'ja-JP');
      await context.close();
    }
  });

  it('a page on another origin embeds the bubble with a Dify snippet and chats through it', async () => {
    fake.behaviour = { reply: 'Hi from the bubble!', chunkSize: 3, delayMs: 10 };
    const host = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(`<!doctype html><html lang="en"><head><title>Shop</title></head><body><h1>A shop</h1>
<script>
 window.difyChatbotConfig = {
  token: '${code}',
  baseUrl: '${s.url}',
  inputs: { name: 'Grace' },
  systemVariables: { user_id: 'shop-user-7' },
  userVariables: { name: 'grace hopper', avatar_url: 'https://shop.example/grace.png' },
 }
</script>
<script src="${s.url}/embed.min.js" id="${code}" defer></script>
<style>#dify-chatbot-bubble-button { background-color: #1C64F2 !important; }</style>
</body></html>`);
    });
    await new Promise<void>((resolve) => host.listen(0, '127.0.0.1', resolve));
    const hostUrl = `http://127.0.0.1:${(host.address() as AddressInfo).port}/`;
    try {
      await page.goto(hostUrl);
      const bubble = page.locator('#dify-chatbot-bubble-button');
      await bubble.click();
      const frame = page.frameLocator('#dify-chatbot-bubble-window');
      const box = frame.getByRole('textbox', { name: /Message/ });
      await box.waitFor();
      // the embed's input fills the start form (gzip + base64 in the iframe's URL, as Dify's embed.js)
      expect(await frame.getByLabel('Your name').inputValue()).toBe('Grace');
      await box.fill('Hello bubble');
      await box.press('Enter');
      await frame.getByText('Hi from the bubble!').waitFor();
      expect(JSON.stringify(fake.requests.at(-1)!.body.messages)).toContain('You help Grace with woodworking.');
      // the user variable name is the question's avatar (its first letter) and its spoken label
      expect(await frame.locator('.msg.question .avatar.user').textContent()).toBe('G');
      expect(await frame.locator('.msg.question .sr-only').textContent()).toBe('grace hopper: ');
      // the system variable user_id names the end user (Dify's passport user_id)
      const convs = (await (await fetch(`${s.api}/conversations?user=shop-user-7`, { headers: { authorization: `Bearer ${key}` } })).json()) as { data: unknown[] };
      expect(convs.data).toHaveLength(1);
      if (SHOTS) await page.screenshot({ path: path.join('docs', 'web-chatbot-embed.png') });
      // Escape (on the host page) closes the window
      await page.locator('h1').click();
      await page.keyboard.press('Escape');
      await page.locator('#dify-chatbot-bubble-window').waitFor({ state: 'hidden' });
      expect(problems).toEqual([]);
    } finally {
      await context.close();
      await new Promise((r) => host.close(r));
    }
  });
});
