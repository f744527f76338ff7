import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { PROJECT_ROOT } from '../helpers/fixtures.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { dataFrames, parseSse } from '../helpers/sse.js';
import { startSmtpPeer, smtpEnv, type SmtpPeer } from '../helpers/smtp-peer.js';
import { reviewApp } from '../helpers/form-apps.js';

/**
 * The people side of Human Input email on the command line (the compiled `dovetail` bin, as users
 * run it, on the data of an in-process server): `account create` and its errors, member and
 * whole-workspace recipients resolved against those accounts, and `run show` printing each email
 * delivery's status, attempts and last SMTP error while the queue retries.
 */
const exec = promisify(execFile);
const USER = 'mailer';
const PASS = 'pw';
const WAIT = { timeout: 60_000, interval: 100 };

let s: TestServer;
let peer: SmtpPeer;
/** RCPT TO commands the peer saw, per address. */
const rcpts = new Map<string, number>();
let releaseLater: () => void = () => undefined;
const laterHeld = new Promise<void>((resolve) => (releaseLater = resolve));

async function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const env: Record<string, string> = { ...(process.env as Record<string, string>), DOVETAIL_DATA_DIR: s.dataDir, LOG_LEVEL: 'silent', DATABASE_URL: '', REDIS_URL: '' };
  if (s.config.databaseUrl) Object.assign(env, { DATABASE_URL: s.config.databaseUrl, DATABASE_SCHEMA: s.config.databaseSchema ?? '' });
  delete env.DOVETAIL_CONFIG;
  try {
    const r = await exec(process.execPath, [path.join(PROJECT_ROOT, 'bin', 'dovetail.js'), ...args], { env, cwd: s.dataDir, timeout: 90_000 });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

function emailApp(recipients: Record<string, unknown>): string {
  return reviewApp([{ id: 'mail', type: 'email', enabled: true, config: { recipients, subject: 'Review', body: 'Open {{#url#}}' } }]);
}

async function pausedRun(yaml: string): Promise<string> {
  const { apiKey } = await s.importApp(yaml);
  const r = await fetch(`${s.api}/workflows/run`, { method: 'POST', headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ inputs: { draft: 'd' }, response_mode: 'streaming', user: 'u' }) });
  const events = dataFrames(parseSse(await r.text()));
  expect(events.at(-1)?.event).toBe('workflow_paused');
  return String(events[0]!.workflow_run_id);
}

interface Delivery {
  email: string;
  type: string;
  status: string;
  attempts: number;
  last_error: string | null;
}
const deliveries = (runId: string) => s.runtime.formRecipients.ofRun(runId);
const byEmail = (list: readonly Delivery[]) => Object.fromEntries(list.map((d) => [d.email, d]));
/** `run show`'s line for one recipient's email. */
const lineOf = (stdout: string, email: string) => stdout.split('\n').find((l) => l.startsWith(`email ${email} `));

beforeAll(async () => {
  peer = await startSmtpPeer({
    user: USER,
    pass: PASS,
    async onRecipient(address) {
      const n = (rcpts.get(address) ?? 0) + 1;
      rcpts.set(address, n);
      if (address === 'nobody@example.test') return { code: 550, message: 'No such user here' };
      if (address === 'later@example.test') {
        if (n === 1) return { code: 451, message: 'Mailbox busy, try again later' };
        // the retry waits here (mid-conversation) until the test has looked at the pending state
        await laterHeld;
      }
      return undefined;
    },
  });
  s = await startServer({ env: { ...smtpEnv(peer.port, USER, PASS), QUEUE_POLL_MS: '20', QUEUE_RETRY_DELAY_MS: '10', QUEUE_MAX_ATTEMPTS: '3', QUEUE_CONCURRENCY: '4' } });
}, 120_000);
afterAll(async () => {
  releaseLater();
  await s?.close();
  await peer?.close();
});

describe('dovetail account create and the Human Input email deliveries in run show', { timeout: 240_000 }, () => {
  const ids: Record<string, string> = {};

  it('account create --name --email prints the account; bad input is refused naming the option', async () => {
    const grace = await cli('account', 'create', '--name', 'Grace', '--email', 'grace@example.test', '--json');
    expect(grace.code).toBe(0);
    const created = JSON.parse(grace.stdout) as { id: string; name: string; email: string };
    // a new account: a console viewer in the first workspace, without a password (it cannot log in yet)
    expect(created).toEqual({ id: expect.any(String), name: 'Grace', email: 'grace@example.test', role: 'viewer', workspace_id: expect.any(String), has_password: false });
    ids.Grace = created.id;

    const ada = await cli('account', 'create', '--name', 'Ada', '--email', 'ada@example.test');
    expect(ada.code).toBe(0);
    expect(ada.stdout).toMatch(/^\S+ {2}Ada {2}<ada@example\.test> {2}viewer {2}\(no console password\)\n$/);
    ids.Ada = ada.stdout.split(' ')[0]!;
    const noMail = JSON.parse((await cli('account', 'create', '--name', 'Nomail', '--json')).stdout) as { id: string; email: string | null };
    expect(noMail.email).toBeNull();
    ids.Nomail = noMail.id;
    // the same account again is no duplicate
    const again = await cli('account', 'create', '--name', 'Grace', '--email', 'grace@example.test', '--json');
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout).id).toBe(ids.Grace);

    const duplicate = await cli('account', 'create', '--name', 'Impostor', '--email', 'GRACE@example.test');
    expect(duplicate.code).toBe(1);
    expect(duplicate.stdout).toBe('');
    expect(duplicate.stderr).toContain('error: --email "GRACE@example.test" is already used by the account "Grace"\n');
    const bad = await cli('account', 'create', '--name', 'Bad', '--email', 'not-an-address');
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('error: --email must be an email address, got "not-an-address"\n');
    const blank = await cli('account', 'create', '--name', '  ', '--email', 'blank@example.test');
    expect(blank.code).toBe(1);
    expect(blank.stderr).toContain('error: --name must be 1 to 255 characters\n');
    const missing = await cli('account', 'create', '--email', 'x@example.test');
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("required option '--name <name>' not specified");
    // none of the refused ones exists
    const names = (await s.runtime.store.db.selectFrom('accounts').select('name').orderBy('name').execute()).map((a) => a.name);
    expect(names).toEqual(['Ada', 'Grace', 'Nomail']);
  });

  it('member items are resolved against the accounts by id or name; whole workspace is every account with an address plus the external items', async () => {
    const members = await pausedRun(
      emailApp({
        whole_workspace: false,
        items: [
          { type: 'member', reference_id: ids.Grace },
          { type: 'member', user_id: 'Ada' },
          { type: 'member', reference_id: ids.Nomail },
          { type: 'member', reference_id: 'no-such-account' },
          { type: 'external', email: 'ext@example.test' },
        ],
      }),
    );
    const all = await pausedRun(
      emailApp({ whole_workspace: true, items: [{ type: 'member', reference_id: ids.Grace }, { type: 'external', email: 'ADA@example.test' }, { type: 'external', email: 'out@example.test' }] }),
    );
    for (const runId of [members, all]) await vi.waitFor(async () => expect((await deliveries(runId)).every((d) => d.status === 'sent')).toBe(true), WAIT);

    const shown = JSON.parse((await cli('run', 'show', members, '--json')).stdout) as { status: string; email_deliveries: Delivery[] };
    expect(shown.status).toBe('paused');
    expect(shown.email_deliveries.map((d) => [d.email, d.type]).sort()).toEqual([
      ['ada@example.test', 'email_member'],
      ['ext@example.test', 'email_external'],
      ['grace@example.test', 'email_member'],
    ]);
    const whole = JSON.parse((await cli('run', 'show', all, '--json')).stdout) as { email_deliveries: Delivery[] };
    expect(whole.email_deliveries.map((d) => [d.email, d.type]).sort()).toEqual([
      ['ada@example.test', 'email_member'],
      ['grace@example.test', 'email_member'],
      ['out@example.test', 'email_external'],
    ]);
    // and the mails went to exactly those addresses, once per run
    expect(peer.mails.map((m) => m.envelopeTo.join(',')).sort()).toEqual(['ada@example.test', 'ada@example.test', 'ext@example.test', 'grace@example.test', 'grace@example.test', 'out@example.test']);
  });

  it('run show prints each delivery: sent, failed with the SMTP error, pending with the error of the attempt being retried, then sent after the retry', async () => {
    const sentBefore = peer.mails.length;
    const runId = await pausedRun(emailApp({ whole_workspace: false, items: [{ type: 'member', reference_id: ids.Grace }, { type: 'external', email: 'nobody@example.test' }, { type: 'external', email: 'later@example.test' }] }));
    // Grace's mail is sent, nobody's refused for good, later's first attempt refused for now and its retry held by the peer
    await vi.waitFor(async () => {
      const d = byEmail(await deliveries(runId));
      expect([d['grace@example.test']?.status, d['nobody@example.test']?.status, d['later@example.test']?.attempts]).toEqual(['sent', 'failed', 1]);
      expect(rcpts.get('later@example.test')).toBe(2);
    }, WAIT);
    const token = /\/form\/([A-Za-z0-9_-]+)/.exec(peer.mails.slice(sentBefore).find((m) => m.envelopeTo.includes('grace@example.test'))!.text)![1]!;

    const during = await cli('run', 'show', runId);
    expect(during.code).toBe(0);
    expect(during.stdout).toMatch(/^status: +paused$/m);
    expect(lineOf(during.stdout, 'grace@example.test')).toBe('email grace@example.test (email_member, node review): sent, 1 attempt(s)');
    expect(lineOf(during.stdout, 'nobody@example.test')).toMatch(/^email nobody@example\.test \(email_external, node review\): failed, 1 attempt\(s\), last error: SMTP delivery failed \(EENVELOPE\): .*550 No such user here$/);
    expect(lineOf(during.stdout, 'later@example.test')).toMatch(/^email later@example\.test \(email_external, node review\): pending, 1 attempt\(s\), last error: SMTP delivery failed \(EENVELOPE\): .*451 Mailbox busy, try again later$/);
    // a personal link is a credential: run show never prints it
    expect(during.stdout).not.toContain(token);

    releaseLater();
    await vi.waitFor(async () => expect(byEmail(await deliveries(runId))['later@example.test']?.status).toBe('sent'), WAIT);
    const after = await cli('run', 'show', runId, '--json');
    const d = byEmail((JSON.parse(after.stdout) as { email_deliveries: Delivery[] }).email_deliveries);
    expect(d['later@example.test']).toMatchObject({ status: 'sent', attempts: 2, last_error: null });
    expect(d['nobody@example.test']).toMatchObject({ status: 'failed', attempts: 1, last_error: expect.stringContaining('550 No such user here') });
    expect(after.stdout).not.toContain(token);
    expect(lineOf((await cli('run', 'show', runId)).stdout, 'later@example.test')).toBe('email later@example.test (email_external, node review): sent, 2 attempt(s)');
  });
});
