import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createLogger } from '../../src/infra/logger.js';
import { restartServer, startServer, type TestServer } from '../helpers/server.js';
import { dataFrames, parseSse } from '../helpers/sse.js';
import { startSmtpPeer, smtpEnv, type SmtpPeer } from '../helpers/smtp-peer.js';
import { reviewApp } from '../helpers/form-apps.js';

const USER = 'mailer';
const PASS = 's3cret-pass';
const FAST_QUEUE = { QUEUE_POLL_MS: '20', QUEUE_RETRY_DELAY_MS: '10', QUEUE_MAX_ATTEMPTS: '3' };
const APP_WEB_URL = 'https://forms.example.test';

function emailMethod(items: unknown[], extra: Record<string, unknown> = {}) {
  return {
    id: 'mail-1',
    type: 'email',
    enabled: true,
    config: {
      recipients: { whole_workspace: false, items },
      subject: 'Review <b>{{#start.draft#}}</b>\r\nBcc: evil@example.test',
      body: 'Hello **team**,\n\nplease review {{#start.draft#}}: [open the form]({{#url#}})\n\n<script>alert(1)</script>',
      debug_mode: false,
      ...extra,
    },
  };
}

async function startPaused(s: TestServer, key: string, draft: string): Promise<{ runId: string; required: Record<string, unknown> }> {
  const r = await fetch(`${s.api}/workflows/run`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ inputs: { draft }, response_mode: 'streaming', user: 'erin' }),
  });
  const events = dataFrames(parseSse(await r.text()));
  expect(events.at(-1)?.event).toBe('workflow_paused');
  return { runId: String(events[0]!.workflow_run_id), required: events.at(-2)!.data as Record<string, unknown> };
}

const recipientsOf = (s: TestServer, runId: string) => s.runtime.formRecipients.ofRun(runId);

describe('Human Input email delivery through a real SMTP server', () => {
  let peer: SmtpPeer;
  let s: TestServer;
  let key: string;
  beforeAll(async () => {
    peer = await startSmtpPeer({ user: USER, pass: PASS, refuseFirst: 1 });
    s = await startServer({ env: { ...smtpEnv(peer.port, USER, PASS), ...FAST_QUEUE, APP_WEB_URL } });
    await s.runtime.accounts.create({ name: 'Grace', email: 'grace@example.test' });
    await s.runtime.accounts.create({ name: 'Linus', email: 'linus@example.test' });
    ({ apiKey: key } = await s.importApp(reviewApp([emailMethod([{ type: 'external', email: 'ext@example.test' }, { type: 'member', user_id: 'Grace' }])])));
  });
  afterAll(async () => {
    await s?.close();
    await peer?.close();
  });

  it('sends one personal link per recipient after a refused first connection; the link opens the form and answering resumes the run', async () => {
    const { runId, required } = await startPaused(s, key, 'Ship <it>');
    // 1. email-only: the Service API sees no token
    expect(required.form_token).toBeNull();
    // 2. both mails arrive (the SMTP server refused the first connection: the queue retried)
    await vi.waitFor(() => expect(peer.mails.length).toBe(2), { timeout: 20_000, interval: 50 });
    expect(peer.refused()).toBe(1);
    const byTo = new Map(peer.mails.map((m) => [m.envelopeTo.join(','), m]));
    expect([...byTo.keys()].sort()).toEqual(['ext@example.test', 'grace@example.test']);
    const links = new Set<string>();
    for (const m of peer.mails) {
      expect(m.from).toBe('forms@dovetail.test');
      // 3. subject: tags stripped, CR/LF folded (no injected header)
      expect(m.subject).toBe('Review Ship Bcc: evil@example.test');
      const link = /https:\/\/forms\.example\.test\/form\/([A-Za-z0-9_-]+)/.exec(m.text)?.[0];
      expect(link).toBeDefined();
      links.add(link!);
      expect(m.html).toContain('<strong>team</strong>');
      expect(m.html).toContain(`href="${link}"`);
      expect(m.html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
      expect(m.html).not.toContain('<script>');
      expect(m.text).toContain('please review Ship <it>');
    }
    // 4. personal links: one token per recipient, each ≥ 128 bits
    expect(links.size).toBe(2);
    for (const l of links) expect(l.split('/form/')[1]!.length).toBeGreaterThanOrEqual(22);
    // the peer has the mail a moment before the sender records it
    await vi.waitFor(async () => expect((await recipientsOf(s, runId)).map((r) => r.status)).toEqual(['sent', 'sent']), { timeout: 20_000, interval: 50 });
    const state = await recipientsOf(s, runId);
    expect(state.map((r) => r.attempts).sort()).toEqual([1, 2]);

    // 5. the link's page opens on this server, and the web form API answers the form
    const token = [...links][0]!.split('/form/')[1]!;
    const page = await fetch(`${s.url}/form/${token}`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('Review of Ship &lt;it&gt;');
    const form = await (await fetch(`${s.url}/api/form/human_input/${token}`)).json();
    expect(form.user_actions.map((a: { id: string }) => a.id)).toEqual(['approve', 'reject']);
    // the Service API's body plus the app's site
    expect(Object.keys(form).sort()).toEqual(['expiration_time', 'form_content', 'inputs', 'resolved_default_values', 'site', 'user_actions']);
    expect(form.site).toMatchObject({ title: expect.any(String), icon_type: 'emoji' });
    // an email token works only on the web surface: the Service API does not know it
    const viaApi = await fetch(`${s.api}/form/human_input/${token}`, { headers: { authorization: `Bearer ${key}` } });
    expect(viaApi.status).toBe(404);
    const sub = await fetch(`${s.url}/api/form/human_input/${token}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ inputs: { comment: 'fine', choice: 'ok', doc: null, docs: [] }, action: 'reject' }),
    });
    // same validation text as the Service API
    expect(sub.status).toBe(400);
    expect(await sub.json()).toEqual({ code: 'invalid_form_data', message: 'Missing required inputs: doc', status: 400 });
    const up = new FormData();
    up.append('file', new Blob(['hello'], { type: 'text/plain' }), 'notes.txt');
    const uploaded = await (await fetch(`${s.url}/api/form/human_input/${token}/files/upload`, { method: 'POST', body: up })).json();
    const ok = await fetch(`${s.url}/api/form/human_input/${token}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ inputs: { comment: 'fine', choice: 'ok', doc: { transfer_method: 'local_file', upload_file_id: uploaded.id }, docs: [] }, action: 'reject' }),
    });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({});
    await vi.waitFor(async () => expect((await s.runtime.runs.find(runId))?.status).toBe('succeeded'), { timeout: 20_000, interval: 50 });
    // the other recipient's link now shows the form as answered
    const other = [...links][1]!.split('/form/')[1]!;
    const again = await fetch(`${s.url}/api/form/human_input/${other}`);
    expect(again.status).toBe(412);
    expect((await again.json()).code).toBe('human_input_form_submitted');
  });

  it('whole workspace means every account with an address, plus the external items, without duplicates', async () => {
    const { apiKey } = await s.importApp(reviewApp([emailMethod([{ type: 'external', email: 'grace@example.test' }, { type: 'external', email: 'x@example.test' }], { recipients: { whole_workspace: true, items: [{ type: 'external', email: 'GRACE@example.test' }, { type: 'external', email: 'x@example.test' }] } })]));
    const { runId } = await startPaused(s, apiKey, 'all');
    await vi.waitFor(async () => expect((await recipientsOf(s, runId)).every((r) => r.status === 'sent')).toBe(true), { timeout: 20_000, interval: 50 });
    expect((await recipientsOf(s, runId)).map((r) => r.email).sort()).toEqual(['grace@example.test', 'linus@example.test', 'x@example.test']);
  });
});

describe('Human Input email delivery failures', () => {
  it('a wrong SMTP password fails the delivery with a named error and the run stays paused', async () => {
    const peer = await startSmtpPeer({ user: USER, pass: PASS });
    const s = await startServer({ env: { ...smtpEnv(peer.port, USER, 'wrong'), ...FAST_QUEUE } });
    try {
      const { apiKey } = await s.importApp(reviewApp([emailMethod([{ type: 'external', email: 'ext@example.test' }])]));
      const { runId } = await startPaused(s, apiKey, 'x');
      await vi.waitFor(async () => expect((await recipientsOf(s, runId))[0]?.status).toBe('failed'), { timeout: 20_000, interval: 50 });
      const [r] = await recipientsOf(s, runId);
      expect(r!.last_error).toMatch(/^SMTP authentication failed \(check SMTP_USERNAME and SMTP_PASSWORD\)/);
      // authentication is not retried: one attempt
      expect(r!.attempts).toBe(1);
      expect(peer.mails).toHaveLength(0);
      const delivery = await s.runtime.store.db.selectFrom('human_input_deliveries').selectAll().where('type', '=', 'email').executeTakeFirstOrThrow();
      expect(delivery).toMatchObject({ status: 'failed', last_error: r!.last_error });
      // no mail will be sent any more: the sealed token is dropped, only its hash stays
      const stored = await s.runtime.store.db.selectFrom('human_input_form_recipients').select(['token', 'token_hash']).executeTakeFirstOrThrow();
      expect(stored.token).toBeNull();
      expect(stored.token_hash).toMatch(/^[0-9a-f]{64}$/);
      expect((await s.runtime.runs.find(runId))?.status).toBe('paused');
    } finally {
      await s.close();
      await peer.close();
    }
  });

  it('without mail settings start-up warns once when an app sends email, and the delivery fails naming the settings', async () => {
    const lines: string[] = [];
    const sink = () =>
      new Writable({
        write(chunk, _enc, done) {
          lines.push(...String(chunk).split('\n').filter(Boolean));
          done();
        },
      });
    const mailWarnings = () => lines.map((l) => JSON.parse(l) as { level: number; msg: string; apps?: string[] }).filter((l) => l.msg.includes('Mail is not configured'));
    // no app sends email: nothing to warn about
    let s = await startServer({ env: FAST_QUEUE, logger: createLogger('warn', sink()) });
    try {
      await s.importApp(reviewApp([{ id: 'web', type: 'webapp', enabled: true, config: {} }]));
      expect(mailWarnings()).toEqual([]);
      const { apiKey, appId } = await s.importApp(reviewApp([emailMethod([{ type: 'external', email: 'ext@example.test' }])]));
      const { runId } = await startPaused(s, apiKey, 'x');
      await vi.waitFor(async () => expect((await recipientsOf(s, runId))[0]?.status).toBe('failed'), { timeout: 20_000, interval: 50 });
      const [r] = await recipientsOf(s, runId);
      expect(r!.last_error).toBe(
        'Mail is not configured (missing MAIL_TYPE=smtp, SMTP_SERVER, MAIL_DEFAULT_SEND_FROM); set MAIL_TYPE=smtp, SMTP_SERVER, SMTP_PORT, SMTP_USERNAME, SMTP_PASSWORD, SMTP_USE_TLS, SMTP_OPPORTUNISTIC_TLS and MAIL_DEFAULT_SEND_FROM',
      );
      expect((await s.runtime.runs.find(runId))?.status).toBe('paused');
      // none per failed delivery
      expect(mailWarnings()).toEqual([]);
      // the next start has an app that sends email: one warning, naming it
      s = await restartServer(s, { env: FAST_QUEUE, logger: createLogger('warn', sink()) });
      const warnings = mailWarnings();
      expect(warnings).toHaveLength(1);
      expect(warnings[0]!.apps).toEqual([appId]);
      expect(warnings[0]!.msg).toMatch(/^Mail is not configured \(missing MAIL_TYPE=smtp, SMTP_SERVER, MAIL_DEFAULT_SEND_FROM\).*The Human Input email deliveries of ".*" will fail until then\.$/);
    } finally {
      await s.close();
    }
  });
});
