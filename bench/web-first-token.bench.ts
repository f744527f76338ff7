import { existsSync } from 'node:fs';
import { benchServer, fmt, median, percentile } from './lib.js';
import { startFakeOpenAI } from '../test/helpers/fake-openai.js';

const ROUNDS = 20;
const WARMUP = 3;
const CHROMIUM = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p): p is string => !!p && existsSync(p));

const APP = `app:
  mode: chat
  name: Bench chat
kind: app
version: 0.3.1
model_config:
  model:
    provider: langgenius/openai/openai
    name: gpt-4o-mini
    mode: chat
    completion_params: {}
  pre_prompt: 'You are brief.'
`;

/**
 * The chat page's added latency: from pressing Enter in `/chat/{code}` (real Chromium) to the
 * answer's first token painted (the first animation frame after it is in the DOM), beside the same
 * answer's first token read at the HTTP level (`POST /v1/chat-messages`, streaming, from Node) in
 * the same run, against the same local fake model. Goal: ≤ 30 ms added (issue 42).
 */
export async function run(): Promise<void> {
  if (!CHROMIUM) {
    process.stdout.write('skipped: no Chromium (/usr/bin/chromium; apt-get install -y chromium)\n');
    return;
  }
  const fake = await startFakeOpenAI({ reply: 'First token, then the rest of a short answer.', chunkSize: 6 });
  const s = await benchServer({ OPENAI_API_KEY: 'sk-bench', OPENAI_BASE_URL: fake.baseUrl });
  const app = await s.runtime.apps.importDsl(APP);
  const { apiKey } = await s.runtime.keys.create('app', app.workspaceId, app.id);
  const code = (await s.runtime.sites.forApp(app)).code;
  const { chromium } = await import('playwright-core');
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu'] });
  const page = await browser.newPage();
  await page.goto(`${s.url}/chat/${code}`);
  await page.locator('#composer').waitFor();

  const http: number[] = [];
  const painted: number[] = [];
  for (let i = 0; i < WARMUP + ROUNDS; i++) {
    // HTTP level: the first `message` event of a streaming answer
    const t0 = performance.now();
    const r = await fetch(`${s.url}/v1/chat-messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ inputs: {}, query: `q${i}`, user: 'bench', response_mode: 'streaming' }),
    });
    const reader = r.body!.getReader();
    const decoder = new TextDecoder();
    let buf = '';
    let first = NaN;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      buf += decoder.decode(value, { stream: true });
      if (Number.isNaN(first) && buf.includes('"event":"message"')) first = performance.now() - t0;
    }
    // the page: Enter → the answer's first text in the DOM → the next frame
    await page.getByRole('button', { name: 'New chat' }).first().click();
    await page.locator('#composer').fill(`q${i}`);
    await page.evaluate(() => {
      const w = window as unknown as { __benchFirst: Promise<number> };
      w.__benchFirst = new Promise<number>((resolve) => {
        let t0 = 0;
        document.getElementById('composer')!.addEventListener('keydown', (e) => {
          if (e.key === 'Enter') t0 = performance.now();
        }, { once: true, capture: true });
        const obs = new MutationObserver(() => {
          if (t0 && document.querySelector('.msg.answer .answer-text')?.textContent) {
            obs.disconnect();
            requestAnimationFrame(() => resolve(performance.now() - t0));
          }
        });
        obs.observe(document.body, { subtree: true, childList: true, characterData: true });
      });
    });
    await page.locator('#composer').press('Enter');
    const ms = await page.evaluate(() => (window as unknown as { __benchFirst: Promise<number> }).__benchFirst);
    await page.getByRole('button', { name: 'Good answer' }).waitFor();
    if (i >= WARMUP) {
      http.push(first);
      painted.push(ms);
    }
  }
  const added = painted.map((p, i) => p - http[i]!);
  process.stdout.write(
    [
      `first token at the HTTP level (POST /v1/chat-messages)  p50 ${fmt(median(http), 1)} ms  p90 ${fmt(percentile(http, 90), 1)} ms`,
      `Enter → first token painted (/chat page, Chromium)      p50 ${fmt(median(painted), 1)} ms  p90 ${fmt(percentile(painted, 90), 1)} ms`,
      `added by the page: p50 ${fmt(median(added), 1)} ms (goal ≤ 30 ms), ${ROUNDS} rounds`,
    ].join('\n') + '\n',
  );
  await browser.close();
  await s.close();
  await fake.close();
}
