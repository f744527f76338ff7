import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { sql } from 'kysely';
import { createLogger } from '../../src/infra/logger.js';
import { sha256 } from '../../src/infra/ids.js';
import { restartServer, startServer, type TestServer } from '../helpers/server.js';
import { dataFrames, parseSse } from '../helpers/sse.js';
import { startSmtpPeer, smtpEnv, type SmtpPeer } from '../helpers/smtp-peer.js';
import { reviewApp } from '../helpers/form-apps.js';

/**
 * Email recipients' personal tokens at rest: only their SHA-256 is looked up, a sealed copy is kept
 * while the mail may still be sent and dropped after, rows from before migration 020 are
 * converted, and no token reaches the log.
 */
const USER = 'mailer';
const PASS = 'pw';
const SEALED = /^dovetail-sealed:v1:/;

const logLines: string[] = [];
const sink = new Writable({
  write(chunk, _enc, done) {
    logLines.push(String(chunk));
    done();
  },
});

const emailOnly = reviewApp([
  { id: 'mail', type: 'email', enabled: true, config: { recipients: { whole_workspace: false, items: [{ type: 'external', email: 'ext@example.test' }] }, subject: 'Review', body: 'Open {{#url#}}' } },
]);

let peer: SmtpPeer;
let s: TestServer;
let key = '';

beforeAll(async () => {
  peer = await startSmtpPeer({ user: USER, pass: PASS });
  // The job worker is off at first, so the mail stays pending and its stored form can be seen.
  s = await startServer({ env: { ...smtpEnv(peer.port, USER, PASS), QUEUE_WORKER: 'false', QUEUE_POLL_MS: '20' }, logger: createLogger('debug', sink) });
  key = (await s.importApp(emailOnly)).apiKey;
});
afterAll(async () => {
  await s?.close();
  await peer?.close();
});

async function pausedRun(): Promise<string> {
  const r = await fetch(`${s.api}/workflows/run`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ inputs: { draft: 'd' }, response_mode: 'streaming', user: 'u' }) });
  const events = dataFrames(parseSse(await r.text()));
  expect(events.at(-1)?.event).toBe('workflow_paused');
  return String(events[0]!.workflow_run_id);
}

const recipientRows = (runId: string) =>
  s.runtime.store.db
    .selectFrom('human_input_form_recipients as r')
    .innerJoin('human_input_forms as f', 'f.id', 'r.form_id')
    .select(['r.id', 'r.token', 'r.token_hash', 'r.status', 'r.form_id'])
    .where('f.workflow_run_id', '=', runId)
    .execute();
const webForm = (token: string) => fetch(`${s.url}/api/form/human_input/${encodeURIComponent(token)}`);

describe("email recipients' tokens at rest", { timeout: 60_000 }, () => {
  it('are kept as a hash plus a sealed copy while the mail is pending; the copy is dropped once sent; the link works by hash only; nothing logs them', async () => {
    const runId = await pausedRun();
    const [pending] = await recipientRows(runId);
    expect(pending!.status).toBe('pending');
    expect(pending!.token_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(pending!.token).toMatch(SEALED);

    // the worker sends it: the mailed token is the one whose hash is stored, and the sealed copy goes
    s = await restartServer(s, { env: { ...smtpEnv(peer.port, USER, PASS), QUEUE_POLL_MS: '20' }, logger: createLogger('debug', sink) });
    await vi.waitFor(() => expect(peer.mails).toHaveLength(1), { timeout: 30_000, interval: 50 });
    const token = /\/form\/([A-Za-z0-9_-]+)/.exec(peer.mails[0]!.text)![1]!;
    await vi.waitFor(async () => expect((await recipientRows(runId))[0]!.status).toBe('sent'), { timeout: 30_000, interval: 50 });
    const [sent] = await recipientRows(runId);
    expect(sent!.token_hash).toBe(sha256(token));
    expect(sent!.token).toBeNull();
    expect(JSON.stringify(await s.runtime.formRecipients.ofRun(runId))).not.toContain(token);

    // the token opens the form (API and page); its stored hash is no token
    expect((await webForm(token)).status).toBe(200);
    expect((await fetch(`${s.url}/form/${token}`)).status).toBe(200);
    expect((await webForm(sent!.token_hash)).status).toBe(404);
    const up = new FormData();
    up.append('file', new Blob(['x'], { type: 'text/plain' }), 'x.txt');
    expect((await fetch(`${s.url}/api/form/human_input/${token}/files/upload`, { method: 'POST', body: up })).status).toBe(201);
    expect((await fetch(`${s.url}/api/form/human_input/${token}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"inputs":{},"action":"approve"}' })).status).toBe(400);

    const log = logLines.join('');
    expect(log).toContain('/api/form/human_input/[redacted]');
    expect(log).toContain('/form/[redacted]');
    expect(log).not.toContain(token);
  });

  it('rows from before migration 020 get their hash; pending tokens are sealed at start and still reach the mail; sent ones are dropped', async () => {
    s = await restartServer(s, { env: { ...smtpEnv(peer.port, USER, PASS), QUEUE_WORKER: 'false' } });
    const runId = await pausedRun();
    const [row] = await recipientRows(runId);
    const db = s.runtime.store.db;
    const form = await db.selectFrom('human_input_forms').select(['id']).where('workflow_run_id', '=', runId).executeTakeFirstOrThrow();
    const delivery = await db.selectFrom('human_input_deliveries').select('id').where('form_id', '=', form.id).executeTakeFirstOrThrow();
    // 1. The table as migration 018 made it: a plain, unique, required token and no hash.
    await sql`DROP TABLE human_input_form_recipients`.execute(db);
    await db.schema
      .createTable('human_input_form_recipients')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('form_id', 'text', (c) => c.notNull())
      .addColumn('delivery_id', 'text', (c) => c.notNull())
      .addColumn('type', 'text', (c) => c.notNull())
      .addColumn('email', 'text', (c) => c.notNull())
      .addColumn('token', 'text', (c) => c.notNull().unique())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('attempts', 'integer', (c) => c.notNull())
      .addColumn('last_error', 'text')
      .addColumn('sent_at', 'bigint')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('human_input_form_recipients_form').on('human_input_form_recipients').column('form_id').execute();
    const now = Date.now();
    const legacy = { form_id: form.id, delivery_id: delivery.id, type: 'email_external', attempts: 0, last_error: null, created_at: now, updated_at: now };
    await sql`INSERT INTO human_input_form_recipients (id, form_id, delivery_id, type, email, token, status, attempts, last_error, sent_at, created_at, updated_at) VALUES
      (${row!.id}, ${legacy.form_id}, ${legacy.delivery_id}, ${legacy.type}, 'ext@example.test', 'plain-pending-token-0123456789', 'pending', 0, NULL, NULL, ${now}, ${now}),
      ('00000000-0000-4000-8000-000000000001', ${legacy.form_id}, ${legacy.delivery_id}, ${legacy.type}, 'sent@example.test', 'plain-sent-token-0123456789', 'sent', 1, NULL, ${now}, ${now}, ${now + 1})`.execute(db);
    await sql`DELETE FROM kysely_migration WHERE name = '020-form-recipient-token-hash'`.execute(db);

    // 2. Restart (worker still off): the migration hashes and drops, the runtime seals.
    s = await restartServer(s, { env: { ...smtpEnv(peer.port, USER, PASS), QUEUE_WORKER: 'false' } });
    const rows = await recipientRows(runId);
    const byHash = new Map(rows.map((r) => [r.token_hash, r]));
    const wasPending = byHash.get(sha256('plain-pending-token-0123456789'))!;
    const wasSent = byHash.get(sha256('plain-sent-token-0123456789'))!;
    expect(wasPending.token).toMatch(SEALED);
    expect(wasPending.token).not.toContain('plain-pending-token');
    expect(wasSent.token).toBeNull();

    // 3. Both links handed out before the upgrade still open the form; the pending mail still gets its token.
    expect((await webForm('plain-pending-token-0123456789')).status).toBe(200);
    expect((await webForm('plain-sent-token-0123456789')).status).toBe(200);
    const outgoing = await s.runtime.formRecipients.outgoing(wasPending.id);
    expect(outgoing).toMatchObject({ token: 'plain-pending-token-0123456789', wanted: true });
    // and the migrated table keeps its unique hash
    await expect(
      s.runtime.store.db.insertInto('human_input_form_recipients').values({ id: '00000000-0000-4000-8000-000000000002', ...legacy, email: 'x@example.test', token_hash: wasSent.token_hash, token: null, status: 'sent', sent_at: now }).execute(),
    ).rejects.toThrow();
  });
});
