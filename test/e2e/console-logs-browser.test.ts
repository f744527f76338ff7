import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import type { TestServer } from '../helpers/server.js';
import { completionApp } from '../helpers/apps.js';
import { reviewApp } from '../helpers/form-apps.js';
import { dataFrames, parseSse } from '../helpers/sse.js';
import { example } from '../helpers/fixtures.js';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { openAiCompatibleProviders } from '../helpers/openai-providers.js';
import { BROWSER_TESTS, noticeWithoutBrowser } from '../helpers/browser.js';
import { seriousA11yFindings } from '../helpers/web-app-browser.js';
import { consoleBrowser, type ConsoleBrowser } from '../helpers/console.js';
import { endNode, llmNode, startNode, templateNode, workflowDsl } from '../helpers/workflow-dsl.js';

/**
 * The console's Logs and Run trace pages in a real browser (issue #44): a chat app's log after a
 * conversation made through the Service API, a text generator's messages, the trace of a failed run
 * (the failing node's error and input), parallel branches in lanes, an iteration's rounds folded and
 * unfolded, a paused run's link to its form, a running run's trace updating by itself, the
 * keyboard, axe-core. Screenshots with
 * SAVE_WEB_SCREENSHOTS=1 (docs/console-logs.png, docs/console-trace.png).
 */
noticeWithoutBrowser('the console logs browser tests are');

const SHOTS = process.env.SAVE_WEB_SCREENSHOTS === '1';

describe.runIf(BROWSER_TESTS)('console logs and run trace in a browser', { timeout: 240_000 }, () => {
  let cb: ConsoleBrowser;
  let s: TestServer;
  let fake: FakeOpenAI;
  let page: Page;
  const apps: Record<string, { appId: string; apiKey: string }> = {};
  const post = async (k: string, path: string, body: unknown) => {
    const r = await fetch(`${s.api}${path}`, { method: 'POST', headers: { authorization: `Bearer ${k}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    return (await r.json()) as Record<string, unknown>;
  };

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    cb = await consoleBrowser({
      server: { runtime: { providers: openAiCompatibleProviders(fake.baseUrl) } },
      setup: async (server) => {
        apps.chat = await server.importApp(example('chat-helper.yml').replace('provider: mock', 'provider: openai'));
        apps.writer = await server.importApp(completionApp({ name: 'Writer', provider: 'openai' }));
        apps.failing = await server.importApp(
          workflowDsl(
            [startNode([{ variable: 'topic' }]), templateNode('prep', 'about {{ t }}', { t: ['start', 'topic'] }, { title: 'Prepare' }), llmNode('ask', '{{#prep.output#}}', { title: 'Ask the model', retry_config: { retry_enabled: true, max_retries: 1, retry_interval: 1 } }), endNode({ a: ['ask', 'text'] })],
            [['start', 'prep'], ['prep', 'ask'], ['ask', 'end']],
            { name: 'Failing flow' },
          ),
        );
        apps.slow = await server.importApp(workflowDsl([startNode(), llmNode('slow', 'take your time', { title: 'Slow answer' }), endNode({ a: ['slow', 'text'] })], [['start', 'slow'], ['slow', 'end']], { name: 'Slow flow' }));
        // a parallel split from start: "Left" then an iteration over the items, "Right" straight to the end
        apps.branches = await server.importApp(
          workflowDsl(
            [
              startNode([{ variable: 'obj', type: 'json_object' }]),
              templateNode('left', 'L', {}, { title: 'Left' }),
              templateNode('right', 'R', {}, { title: 'Right' }),
              { id: 'it', type: 'iteration', title: 'Each item', iterator_selector: ['start', 'obj', 'items'], output_selector: ['tt', 'output'], start_node_id: 'its' },
              { id: 'its', type: 'iteration-start', parentId: 'it' },
              { id: 'tt', type: 'template-transform', title: 'Wrap', parentId: 'it', template: '<{{ x }}>', variables: [{ variable: 'x', value_selector: ['it', 'item'] }] },
              endNode({ l: ['left', 'output'], r: ['right', 'output'], items: ['it', 'output'] }),
            ],
            [['start', 'left'], ['start', 'right'], ['left', 'it'], ['its', 'tt'], ['it', 'end'], ['right', 'end']],
            { name: 'Branches' },
          ),
        );
        apps.review = await server.importApp(reviewApp([{ id: 'web', type: 'webapp', enabled: true, config: {} }]));
      },
      members: [{ name: 'Lou', email: 'lou@example.test', role: 'viewer' }],
      loginAs: 'lou@example.test',
    });
    ({ s, page } = cb);
  }, 180_000);
  afterAll(async () => {
    await cb?.close();
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
    expect(await row.getByText('Likes: 1', { exact: true }).isVisible()).toBe(true);
    expect(await row.getByText('Dislikes: 1', { exact: true }).isVisible()).toBe(true);
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
  it("a text generator's log: its messages, newest first, with answer, tokens and feedback; the keyword filter", async () => {
    fake.behaviour = { reply: 'Otters hold hands while they sleep.' };
    const first = await post(apps.writer!.apiKey, '/completion-messages', { inputs: { topic: 'otters' }, user: 'wendy', response_mode: 'blocking' });
    fake.behaviour = { reply: 'Beavers build dams from branches.' };
    await post(apps.writer!.apiKey, '/completion-messages', { inputs: { topic: 'beavers' }, user: 'wendy', response_mode: 'blocking' });
    fake.behaviour = {};
    await post(apps.writer!.apiKey, `/messages/${String(first.message_id)}/feedbacks`, { rating: 'like', user: 'wendy', content: 'lovely' });

    await page.goto(`${s.url}/console/apps/${apps.writer!.appId}/logs`);
    await page.getByRole('heading', { name: 'Logs', level: 1 }).waitFor();
    const cards = page.locator('article.log-message');
    await cards.first().waitFor();
    expect(await cards.count()).toBe(2);
    expect(await cards.nth(0).textContent()).toContain('Beavers build dams from branches.');
    expect(await cards.nth(1).textContent()).toContain('Otters hold hands while they sleep.');
    expect(await cards.nth(1).textContent()).toContain('lovely');
    expect(await page.getByText('2 in all').isVisible()).toBe(true);
    expect(await seriousA11yFindings(page)).toEqual([]);

    await page.getByRole('searchbox', { name: 'Search questions and answers' }).fill('otters hold');
    await page.keyboard.press('Enter');
    await expect.poll(() => cards.count()).toBe(1);
    expect(await cards.first().textContent()).toContain('Otters hold hands');
  });

  it('parallel branches side by side in lanes; an iteration folded with its rounds, unfolded and folded again', async () => {
    const run = await post(apps.branches!.apiKey, '/workflows/run', { inputs: { obj: { items: ['a', 'b', 'c'] } }, user: 'erin', response_mode: 'blocking' });
    expect((run.data as { status: string }).status).toBe('succeeded');
    await page.goto(`${s.url}/console/apps/${apps.branches!.appId}/runs/${String(run.workflow_run_id)}`);
    const timeline = page.getByRole('region', { name: 'Timeline of node executions' });
    await timeline.getByText('2 parallel branches, side by side').waitFor();
    // one lane a branch: start's own continues into Left and the iteration, the other holds Right
    const lanes = timeline.getByRole('group', { name: /^Branch \d · \d+ nodes$/ });
    expect(await lanes.count()).toBe(2);
    const laneOf = async (title: string) => {
      for (let i = 0; i < 2; i++) if ((await lanes.nth(i).getByRole('button', { name: title, exact: true }).count()) > 0) return i;
      return -1;
    };
    expect(await laneOf('Left')).not.toBe(await laneOf('Right'));
    expect(await laneOf('Each item')).toBe(await laneOf('Left'));
    // each lane draws its own track with a bar per execution, on the run's time axis
    expect(await lanes.nth(await laneOf('Right')).locator('.trace-lane-line .trace-bar').count()).toBe(1);

    // the iteration: folded, saying how many rounds; unfolded, a round each with its node
    const unfold = timeline.getByRole('button', { name: 'Unfold the rounds of Each item (3)' });
    expect(await unfold.getAttribute('aria-expanded')).toBe('false');
    expect(await timeline.getByText('3 rounds').isVisible()).toBe(true);
    expect(await timeline.getByRole('button', { name: 'Wrap', exact: true }).count()).toBe(0);
    await unfold.focus();
    await page.keyboard.press('Enter');
    const fold = timeline.getByRole('button', { name: 'Fold the rounds of Each item (3)' });
    expect(await fold.getAttribute('aria-expanded')).toBe('true');
    expect(await timeline.getByRole('button', { name: 'Wrap', exact: true }).count()).toBe(3);
    for (const n of [1, 2, 3]) expect(await timeline.locator('.trace-round-label', { hasText: `round ${n}` }).count()).toBe(1);
    await timeline.getByRole('button', { name: 'Wrap', exact: true }).nth(1).click();
    await page.getByRole('region', { name: 'Node details' }).getByText('<b>').first().waitFor();
    expect(await seriousA11yFindings(page)).toEqual([]);
    if (SHOTS) await page.screenshot({ path: 'docs/console-trace-parallel.png', fullPage: true });
    await fold.click();
    await expect.poll(() => timeline.getByRole('button', { name: 'Wrap', exact: true }).count()).toBe(0);
  });

  it("a paused run's trace: the pause with its form's link, which opens the pending form", async () => {
    const r = await fetch(`${s.api}/workflows/run`, { method: 'POST', headers: { authorization: `Bearer ${apps.review!.apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ inputs: { draft: 'autumn catalogue' }, response_mode: 'streaming', user: 'pat' }) });
    const frames = dataFrames(parseSse(await r.text()));
    expect(frames.at(-1)?.event).toBe('workflow_paused');
    const body = { workflow_run_id: String(frames[0]!.workflow_run_id) };
    await page.goto(`${s.url}/console/apps/${apps.review!.appId}/logs`);
    await page.getByLabel('Status').selectOption('paused');
    await page.getByRole('row', { name: /paused/ }).getByRole('link').click();
    await page.waitForURL(new RegExp(`/runs/${body.workflow_run_id}$`));
    await page.getByText('Waiting for a Human Input form: Review').waitFor();
    expect(await page.getByText('Live: updating while the run goes on').isVisible()).toBe(true);
    expect(await seriousA11yFindings(page)).toEqual([]);
    const [form] = await Promise.all([page.context().waitForEvent('page'), page.getByRole('link', { name: 'Open the pending form' }).click()]);
    await form.waitForLoadState();
    expect(new URL(form.url()).pathname).toMatch(/^\/form\/[^/]+$/);
    await form.getByText('Review of autumn catalogue').waitFor();
    await form.getByRole('button', { name: 'Approve' }).waitFor();
    await form.close();
  });
});
