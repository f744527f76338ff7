import type { Kysely } from 'kysely';
import { newSecret, sha256 } from '../infra/ids.js';
import { objectOf } from '../infra/objects.js';
import type { SecretBox } from '../infra/secret-box.js';
import type { Database } from '../store/schema.js';
import type { AccountStore } from '../accounts/account-store.js';
import { FormStore, type AttemptOutcome, type RecipientState, type TokenedRecipient } from './form-store.js';

export type { RecipientState, TokenedRecipient };

/** Placeholder of the recipient's personal link in an email body (Dify's `{{#url#}}`). */
export const URL_PLACEHOLDER = '{{#url#}}';

/**
 * An email delivery's subject and body with the run's variables rendered in: the pieces of the
 * DSL's template between its `{{#url#}}` placeholders (the link goes between them, and only there).
 */
export interface RenderedEmail {
  readonly subject: readonly string[];
  readonly body: readonly string[];
}

/** One mail to send: the recipient's address and token, the rendered texts, and whether it is still wanted. */
export interface OutgoingMail {
  readonly recipientId: string;
  readonly deliveryId: string;
  readonly email: string;
  readonly token: string;
  /** The pieces to join with the recipient's link (`RenderedEmail`). */
  readonly subject: readonly string[];
  readonly body: readonly string[];
  /** False when the recipient was already sent or the form is no longer waiting. */
  readonly wanted: boolean;
}

const MAX_RECIPIENTS = 100;

/**
 * The stored pieces of a rendered text; a text stored as one string (by a version before the
 * pieces) is split at its placeholders, as it was then sent.
 */
function pieces(v: unknown): string[] {
  if (Array.isArray(v)) return v.map(String);
  return String(v ?? '').split(URL_PLACEHOLDER);
}

function isEmail(s: string): boolean {
  return s.length <= 254 && /^[^\s@<>"',;]+@[^\s@<>"',;]+\.[^\s@<>"',;]+$/.test(s);
}

/**
 * The email recipients of a delivery, as Dify resolves them: `external` items by address, `member`
 * items (`reference_id` or legacy `user_id`) by account id or name, whole workspace = every account
 * with an address plus the external items. Duplicates are dropped by address; at most 100.
 */
export async function resolveRecipients(accounts: Pick<AccountStore, 'withEmail' | 'byIdsOrNames'>, config: Readonly<Record<string, unknown>>): Promise<{ type: string; email: string }[]> {
  const rc = objectOf(config.recipients);
  const items = (Array.isArray(rc.items) ? rc.items : []).slice(0, MAX_RECIPIENTS).map(objectOf);
  const out = new Map<string, { type: string; email: string }>();
  const add = (type: string, email: string) => {
    const e = email.trim();
    if (isEmail(e) && !out.has(e.toLowerCase()) && out.size < MAX_RECIPIENTS) out.set(e.toLowerCase(), { type, email: e });
  };
  if (rc.whole_workspace === true || rc.include_bound_group === true) {
    const all = await accounts.withEmail(MAX_RECIPIENTS);
    for (const a of all) add('email_member', a.email!);
  } else {
    const refs = items.filter((i) => i.type === 'member').map((i) => String(i.reference_id ?? i.user_id ?? '')).filter(Boolean);
    if (refs.length > 0) {
      const found = await accounts.byIdsOrNames(refs);
      for (const ref of refs) {
        const a = found.find((f) => f.id === ref) ?? found.find((f) => f.name === ref);
        if (a?.email) add('email_member', a.email);
      }
    }
  }
  for (const i of items) if (i.type === 'external' && typeof i.email === 'string') add('email_external', i.email);
  return [...out.values()];
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

/** The form id behind a recipient's personal token (looked up by its hash), if any. */
export function formIdOfRecipientToken(db: Kysely<Database>, token: string): Promise<string | undefined> {
  return new FormStore(db).formIdOfRecipientTokenHash(sha256(token));
}

/** Every email recipient of a run's forms with its state (never its token). */
export function recipientsOfRun(db: Kysely<Database>, runId: string): Promise<RecipientState[]> {
  return new FormStore(db).recipientsOfRun(runId);
}

/**
 * The store side of email delivery: what to send, and the outcome of each attempt. A recipient's
 * sealed token is dropped as soon as no mail will be sent any more (sent, finally failed, or the
 * form no longer waiting); its hash stays, so the link keeps leading to the form's state.
 */
export class FormRecipients {
  readonly #store: FormStore;
  readonly #box: SecretBox;

  constructor(db: Kysely<Database>, box: SecretBox) {
    this.#store = new FormStore(db);
    this.#box = box;
  }

  async outgoing(recipientId: string): Promise<OutgoingMail | undefined> {
    const r = await this.#store.recipientMail(recipientId);
    if (!r) return undefined;
    const rendered = objectOf(objectOf(JSON.parse(r.deliveryConfig)).rendered);
    const wanted = r.status === 'pending' && r.formStatus === 'waiting' && r.token !== null;
    return {
      recipientId: r.id,
      deliveryId: r.deliveryId,
      email: r.email,
      token: wanted ? await this.#box.open(r.token!) : '',
      subject: pieces(rendered.subject),
      body: pieces(rendered.body),
      wanted,
    };
  }

  /** Drops the sealed token of a recipient whose mail will not be sent (its form is no longer waiting). */
  async forget(recipientId: string, now: number): Promise<void> {
    await this.#store.forgetRecipientToken(recipientId, now);
  }

  /** Seals the plain tokens that migration 020 kept for pending recipients (their hash is already set). */
  async sealLegacyTokens(): Promise<number> {
    const rows = await this.#store.plainRecipientTokens();
    for (const r of rows) await this.#store.sealRecipientToken(r.id, r.token, await this.#box.seal(r.token));
    return rows.length;
  }

  /** Records one attempt's outcome; `final` failures mark the recipient and its delivery `failed`. */
  async record(recipientId: string, now: number, outcome: AttemptOutcome, countAttempt = true): Promise<void> {
    await this.#store.recordAttempt(recipientId, now, outcome, countAttempt);
  }

  /** Every email recipient of a run's forms with its state. */
  ofRun(runId: string): Promise<RecipientState[]> {
    return this.#store.recipientsOfRun(runId);
  }
}
