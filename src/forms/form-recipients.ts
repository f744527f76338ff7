import type { Kysely, Transaction } from 'kysely';
import { newId, newSecret, sha256 } from '../infra/ids.js';
import { objectOf } from '../infra/objects.js';
import type { SecretBox } from '../infra/secret-box.js';
import type { Database } from '../store/schema.js';

/** Placeholder of the recipient's personal link in an email body (Dify's `{{#url#}}`). */
export const URL_PLACEHOLDER = '{{#url#}}';

/** An email delivery's config with the run's variables rendered into subject and body (`{{#url#}}` kept). */
export interface RenderedEmail {
  readonly subject: string;
  readonly body: string;
}

/** One mail to send: the recipient's address and token, the rendered texts, and whether it is still wanted. */
export interface OutgoingMail {
  readonly recipientId: string;
  readonly deliveryId: string;
  readonly email: string;
  readonly token: string;
  readonly subject: string;
  readonly body: string;
  /** False when the recipient was already sent or the form is no longer waiting. */
  readonly wanted: boolean;
}

/** A recipient's sending state, as `dovetail run show` prints it. */
export interface RecipientState {
  readonly form_id: string;
  readonly node_id: string;
  readonly email: string;
  readonly type: string;
  readonly status: string;
  readonly attempts: number;
  readonly last_error: string | null;
}

const MAX_RECIPIENTS = 100;

function isEmail(s: string): boolean {
  return s.length <= 254 && /^[^\s@<>"',;]+@[^\s@<>"',;]+\.[^\s@<>"',;]+$/.test(s);
}

/**
 * The email recipients of a delivery, as Dify resolves them: `external` items by address, `member`
 * items (`reference_id` or legacy `user_id`) by account id or name, whole workspace = every account
 * with an address plus the external items. Duplicates are dropped by address; at most 100.
 */
export async function resolveRecipients(db: Kysely<Database> | Transaction<Database>, config: Readonly<Record<string, unknown>>): Promise<{ type: string; email: string }[]> {
  const rc = objectOf(config.recipients);
  const items = (Array.isArray(rc.items) ? rc.items : []).slice(0, MAX_RECIPIENTS).map(objectOf);
  const out = new Map<string, { type: string; email: string }>();
  const add = (type: string, email: string) => {
    const e = email.trim();
    if (isEmail(e) && !out.has(e.toLowerCase()) && out.size < MAX_RECIPIENTS) out.set(e.toLowerCase(), { type, email: e });
  };
  if (rc.whole_workspace === true || rc.include_bound_group === true) {
    const all = await db.selectFrom('accounts').select('email').where('email', 'is not', null).orderBy('created_at').limit(MAX_RECIPIENTS).execute();
    for (const a of all) add('email_member', a.email!);
  } else {
    const refs = items.filter((i) => i.type === 'member').map((i) => String(i.reference_id ?? i.user_id ?? '')).filter(Boolean);
    if (refs.length > 0) {
      const found = await db.selectFrom('accounts').select(['id', 'name', 'email']).where((eb) => eb.or([eb('id', 'in', refs), eb('name', 'in', refs)])).execute();
      for (const ref of refs) {
        const a = found.find((f) => f.id === ref) ?? found.find((f) => f.name === ref);
        if (a?.email) add('email_member', a.email);
      }
    }
  }
  for (const i of items) if (i.type === 'external' && typeof i.email === 'string') add('email_external', i.email);
  return [...out.values()];
}

/** A recipient with its personal token as it is stored: the look-up hash and a sealed copy for the mail. */
export interface TokenedRecipient {
  readonly type: string;
  readonly email: string;
  readonly tokenHash: string;
  readonly sealedToken: string;
}

/**
 * Gives each recipient its own ≥128-bit token (192 bits), kept only as its SHA-256 and sealed.
 * Done before the form's transaction: sealing may read the server key from the database.
 */
export async function withTokens(box: SecretBox, recipients: readonly { type: string; email: string }[]): Promise<TokenedRecipient[]> {
  const out: TokenedRecipient[] = [];
  for (const r of recipients) {
    const token = newSecret(24);
    out.push({ ...r, tokenHash: sha256(token), sealedToken: await box.seal(token) });
  }
  return out;
}

/** Writes the recipients of one email delivery; returns their ids. */
export async function insertRecipients(trx: Transaction<Database>, formId: string, deliveryId: string, recipients: readonly TokenedRecipient[], now: number): Promise<string[]> {
  const ids: string[] = [];
  for (const r of recipients) {
    const id = newId();
    ids.push(id);
    await trx
      .insertInto('human_input_form_recipients')
      .values({ id, form_id: formId, delivery_id: deliveryId, type: r.type, email: r.email, token_hash: r.tokenHash, token: r.sealedToken, status: 'pending', attempts: 0, last_error: null, sent_at: null, created_at: now, updated_at: now })
      .execute();
  }
  return ids;
}

/** The form id behind a recipient's personal token (looked up by its hash), if any. */
export async function formIdOfRecipientToken(db: Kysely<Database>, token: string): Promise<string | undefined> {
  const r = await db.selectFrom('human_input_form_recipients').select('form_id').where('token_hash', '=', sha256(token)).executeTakeFirst();
  return r?.form_id;
}

/** Every email recipient of a run's forms with its state (never its token). */
export async function recipientsOfRun(db: Kysely<Database>, runId: string): Promise<RecipientState[]> {
  return db
    .selectFrom('human_input_form_recipients as r')
    .innerJoin('human_input_forms as f', 'f.id', 'r.form_id')
    .select(['r.form_id', 'f.node_id', 'r.email', 'r.type', 'r.status', 'r.attempts', 'r.last_error'])
    .where('f.workflow_run_id', '=', runId)
    .orderBy('r.created_at')
    .orderBy('r.id')
    .execute();
}

/**
 * The store side of email delivery: what to send, and the outcome of each attempt. A recipient's
 * sealed token is dropped as soon as no mail will be sent any more (sent, finally failed, or the
 * form no longer waiting); its hash stays, so the link keeps leading to the form's state.
 */
export class FormRecipients {
  readonly #db: Kysely<Database>;
  readonly #box: SecretBox;

  constructor(db: Kysely<Database>, box: SecretBox) {
    this.#db = db;
    this.#box = box;
  }

  async outgoing(recipientId: string): Promise<OutgoingMail | undefined> {
    const r = await this.#db
      .selectFrom('human_input_form_recipients as r')
      .innerJoin('human_input_deliveries as d', 'd.id', 'r.delivery_id')
      .innerJoin('human_input_forms as f', 'f.id', 'r.form_id')
      .select(['r.id', 'r.delivery_id', 'r.email', 'r.token', 'r.status', 'd.config', 'f.status as form_status'])
      .where('r.id', '=', recipientId)
      .executeTakeFirst();
    if (!r) return undefined;
    const rendered = objectOf(objectOf(JSON.parse(r.config)).rendered);
    const wanted = r.status === 'pending' && r.form_status === 'waiting' && r.token !== null;
    return {
      recipientId: r.id,
      deliveryId: r.delivery_id,
      email: r.email,
      token: wanted ? await this.#box.open(r.token!) : '',
      subject: String(rendered.subject ?? ''),
      body: String(rendered.body ?? ''),
      wanted,
    };
  }

  /** Drops the sealed token of a recipient whose mail will not be sent (its form is no longer waiting). */
  async forget(recipientId: string, now: number): Promise<void> {
    await this.#db.updateTable('human_input_form_recipients').set({ token: null, updated_at: now }).where('id', '=', recipientId).where('token', 'is not', null).execute();
  }

  /** Seals the plain tokens that migration 020 kept for pending recipients (their hash is already set). */
  async sealLegacyTokens(): Promise<number> {
    const rows = await this.#db.selectFrom('human_input_form_recipients').select(['id', 'token']).where('token', 'is not', null).where('token', 'not like', 'dovetail-sealed:%').execute();
    for (const r of rows) {
      await this.#db.updateTable('human_input_form_recipients').set({ token: await this.#box.seal(r.token!) }).where('id', '=', r.id).where('token', '=', r.token).execute();
    }
    return rows.length;
  }

  /** Records one attempt's outcome; `final` failures mark the recipient and its delivery `failed`. */
  async record(recipientId: string, now: number, outcome: { ok: true } | { ok: false; error: string; final: boolean }, countAttempt = true): Promise<void> {
    await this.#db.transaction().execute(async (trx) => {
      const r = await trx.selectFrom('human_input_form_recipients').select(['delivery_id', 'attempts']).where('id', '=', recipientId).executeTakeFirst();
      if (!r) return;
      const status = outcome.ok ? 'sent' : outcome.final ? 'failed' : 'pending';
      // Once sent or finally failed, no mail needs the raw token again: only its hash is kept.
      const done = status !== 'pending';
      await trx
        .updateTable('human_input_form_recipients')
        .set({ status, attempts: r.attempts + (countAttempt ? 1 : 0), last_error: outcome.ok ? null : outcome.error, sent_at: outcome.ok ? now : null, updated_at: now, ...(done ? { token: null } : {}) })
        .where('id', '=', recipientId)
        .execute();
      if (!outcome.ok && outcome.final) {
        await trx.updateTable('human_input_deliveries').set({ status: 'failed', last_error: outcome.error }).where('id', '=', r.delivery_id).execute();
      } else if (outcome.ok) {
        const open = await trx.selectFrom('human_input_form_recipients').select('id').where('delivery_id', '=', r.delivery_id).where('status', '!=', 'sent').executeTakeFirst();
        if (!open) await trx.updateTable('human_input_deliveries').set({ status: 'delivered', last_error: null }).where('id', '=', r.delivery_id).where('status', '=', 'pending').execute();
      } else {
        await trx.updateTable('human_input_deliveries').set({ last_error: outcome.error }).where('id', '=', r.delivery_id).execute();
      }
    });
  }

  /** Every email recipient of a run's forms with its state. */
  ofRun(runId: string): Promise<RecipientState[]> {
    return recipientsOfRun(this.#db, runId);
  }
}
