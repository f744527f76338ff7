import { describe, expect, it } from 'vitest';
import { chooseLang, DICTIONARIES, translator } from '../../web/lib/i18n.js';
import { renderMarkdown } from '../../web/lib/markdown.js';
import { SseParser } from '../../web/lib/sse.js';
import { gzipBase64, readUrlValues } from '../../web/lib/url-params.js';
import { foldEvent, newTurn } from '../../web/chat/turn.js';

/** The web app pages' browser-side helpers (web/lib), run in Node: they use only web platform APIs Node has too. */
describe('web app: SSE frames from a fetch body', () => {
  it('splits frames on blank lines across chunk boundaries, skips pings and non-JSON', () => {
    const p = new SseParser();
    expect(p.push('data: {"event":"message","answer":"He"}\n')).toEqual([]);
    expect(p.push('\ndata: {"event":"mess')).toEqual([{ event: 'message', answer: 'He' }]);
    expect(p.push('age","answer":"llo"}\r\n\r\nevent: ping\n\n')).toEqual([{ event: 'message', answer: 'llo' }]);
    expect(p.push('data: not json\n\ndata: {"event":"message_end"}')).toEqual([]);
    expect(p.flush()).toEqual([{ event: 'message_end' }]);
  });
});

describe('web app: languages', () => {
  it('takes the browser language among English, Chinese and Japanese, else the site default, else English', () => {
    expect(chooseLang(['ja', 'en'], 'en-US')).toBe('ja-JP');
    expect(chooseLang(['zh-CN'], 'en-US')).toBe('zh-Hans');
    expect(chooseLang(['fr-FR', 'de'], 'zh-Hans')).toBe('zh-Hans');
    expect(chooseLang(['fr-FR'], 'ja-JP')).toBe('ja-JP');
    expect(chooseLang(['fr-FR'], 'ko-KR')).toBe('en-US');
    expect(chooseLang([], null)).toBe('en-US');
  });

  it('has every word in every language, with the same placeholders', () => {
    const en = DICTIONARIES['en-US'];
    for (const lang of ['zh-Hans', 'ja-JP'] as const) {
      const words = DICTIONARIES[lang];
      expect(Object.keys(words).sort()).toEqual(Object.keys(en).sort());
      for (const [k, v] of Object.entries(en)) expect(words[k as keyof typeof en].match(/\{\w+\}/g)?.sort() ?? [], `${lang} ${k}`).toEqual(v.match(/\{\w+\}/g)?.sort() ?? []);
    }
    expect(translator('ja-JP')('batchDone', { done: 2, total: 5 })).toBe('5 件中 2 件完了');
  });
});

describe('web app: Markdown from the model', () => {
  it('escapes raw HTML and refuses script URLs', () => {
    const html = renderMarkdown('<img src=x onerror=alert(1)> [x](javascript:alert(1)) [y](JAVASCRIPT:alert(2)) <script>alert(3)</script>');
    expect(html).not.toMatch(/<img|<script|href="javascript/i);
    expect(html).toContain('&lt;img src=x onerror=alert(1)&gt;');
    expect(html).toContain('[x](javascript:alert(1))');
  });

  it('renders code blocks, tables (alignment as a class, no style attribute) and safe links', () => {
    const html = renderMarkdown('```js\nlet a = 1 < 2;\n```\n\n| a | b |\n|---|--:|\n| 1 | 2 |\n\n[docs](https://example.com)');
    expect(html).toContain('<pre tabindex="0"><code class="language-js">let a = 1 &lt; 2;');
    expect(html).toContain('<div class="table-wrap" tabindex="0"><table>');
    expect(html).toContain('<td class="align-right">2</td>');
    expect(html).not.toContain('style=');
    expect(html).toContain('<a href="https://example.com" rel="noopener noreferrer" target="_blank">docs</a>');
  });
});

describe("web app: the embed script's URL values", () => {
  it('reads inputs, sys. and user. values gzip-compressed and base64-encoded as Dify writes them', async () => {
    const q = new URLSearchParams({ name: await gzipBase64('Ada 李'), 'sys.user_id': await gzipBase64('u-1'), 'user.avatar_url': await gzipBase64('https://x/a.png'), plain: 'hello' });
    expect(await readUrlValues(`?${q}`)).toEqual({ inputs: { name: 'Ada 李', plain: 'hello' }, system: { user_id: 'u-1' }, user: { avatar_url: 'https://x/a.png' } });
  });
});

describe('web app: a chat answer folded from its events', () => {
  it('appends chunks, takes the replacement, citations at message_end, steps and a Human Input pause', () => {
    let t = newTurn('q', []);
    t = foldEvent(t, { event: 'workflow_started', workflow_run_id: 'r1', task_id: 'k1', conversation_id: 'c1', message_id: 'm1', data: {} });
    t = foldEvent(t, { event: 'node_started', data: { id: 'e1', node_id: 'llm', title: 'LLM', node_type: 'llm' } });
    t = foldEvent(t, { event: 'message', answer: 'Hel', message_id: 'm1' });
    t = foldEvent(t, { event: 'message', answer: 'lo', message_id: 'm1' });
    expect(t.answer).toBe('Hello');
    t = foldEvent(t, { event: 'node_finished', data: { id: 'e1', node_id: 'llm', title: 'LLM', node_type: 'llm', status: 'succeeded', elapsed_time: 0.5 } });
    expect(t.steps).toEqual([{ id: 'llm', title: 'LLM', type: 'llm', status: 'succeeded', elapsed: 0.5 }]);
    t = foldEvent(t, { event: 'message_replace', answer: 'Replaced' });
    t = foldEvent(t, { event: 'message_end', id: 'm1', metadata: { retriever_resources: [{ document_name: 'a.md', content: 'x' }] } });
    expect(t).toMatchObject({ id: 'm1', conversationId: 'c1', taskId: 'k1', runId: 'r1', answer: 'Replaced', status: 'done', citations: [{ document_name: 'a.md' }] });
    let p = foldEvent(newTurn('q', []), { event: 'human_input_required', workflow_run_id: 'r2', data: { form_token: 'tok', form_content: 'Check', inputs: [], actions: [{ id: 'ok', title: 'OK', button_style: 'primary' }] } });
    p = foldEvent(p, { event: 'workflow_paused', data: {} });
    expect(p.status).toBe('paused');
    expect(p.humanInput).toMatchObject({ form_token: 'tok', user_actions: [{ id: 'ok' }] });
    expect(foldEvent(p, { event: 'error', message: 'boom' })).toMatchObject({ status: 'error', error: 'boom' });
  });
});
