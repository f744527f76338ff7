import { sql, type Kysely } from 'kysely';
import { newId } from '../infra/ids.js';
import type { Database, HumanInputFormTable } from '../store/schema.js';

export const FORM_STATUSES = ['waiting', 'submitted', 'timeout', 'expired', 'closed'] as const;
export type FormStatus = (typeof FORM_STATUSES)[number];
export const DELIVERY_STATUSES = ['pending', 'delivered', 'failed'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];
export const RECIPIENT_STATUSES = ['pending', 'sent', 'failed'] as const;
export type RecipientStatus = (typeof RECIPIENT_STATUSES)[number];

/** A Human Input form as stored, its status typed. */
export type StoredForm = Omit<HumanInputFormTable, 'status'> & { status: FormStatus };

/** A recipient with its personal token as it is stored: the look-up hash and a sealed copy for the mail. */
export interface TokenedRecipient {
  readonly type: string;
  readonly email: string;
  readonly tokenHash: string;
  readonly sealedToken: string;
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

/** What the mail sender reads of a recipient. */
export interface RecipientMailRow {
  readonly id: string;
  readonly deliveryId: string;
  readonly email: string;
  /** Sealed (or plain legacy) token; null once no mail will be sent. */
  readonly token: string | null;
  readonly status: RecipientStatus;
  /** JSON of the delivery's config. */
  readonly deliveryConfig: string;
  readonly formStatus: FormStatus;
}

export type AttemptOutcome = { ok: true } | { ok: false; error: string; final: boolean };

const toForm = (r: HumanInputFormTable): StoredForm => r as StoredForm;

/**
 * The Human Input tables: forms, their deliveries and email recipients. Writes that must commit
 * with something else take the caller's transaction (`ex`).
 */
export class FormStore {
  readonly #db: Kysely<Database>;

  constructor(db: Kysely<Database>) {
    this.#db = db;
  }

  async byRunNode(runId: string, nodeId: string): Promise<StoredForm | undefined> {
    const r = await this.#db.selectFrom('human_input_forms').selectAll().where('workflow_run_id', '=', runId).where('node_id', '=', nodeId).executeTakeFirst();
    return r && toForm(r);
  }

  /** A run's forms still waiting for a submission, in node order of creation (`run show` prints their links). */
  async waitingOfRun(runId: string): Promise<{ nodeId: string; token: string | null; expirationTime: number }[]> {
    const rows = await this.#db
      .selectFrom('human_input_forms')
      .select(['node_id', 'token', 'expiration_time'])
      .where('workflow_run_id', '=', runId)
      .where('status', '=', 'waiting')
      .orderBy('created_at')
      .execute();
    return rows.map((r) => ({ nodeId: r.node_id, token: r.token, expirationTime: r.expiration_time }));
  }

  /** Forms still waiting for a submission in any of `appIds`, the soonest deadline first (the console's "Forms waiting"). */
  async waitingOfApps(appIds: readonly string[], limit: number): Promise<{ id: string; appId: string; runId: string; nodeId: string; definition: string; token: string | null; expirationTime: number; createdAt: number }[]> {
    if (appIds.length === 0) return [];
    const rows = await this.#db
      .selectFrom('human_input_forms')
      .select(['id', 'app_id', 'workflow_run_id', 'node_id', 'definition', 'token', 'expiration_time', 'created_at'])
      .where('app_id', 'in', [...appIds])
      .where('status', '=', 'waiting')
      .orderBy('expiration_time')
      .limit(limit)
      .execute();
    return rows.map((r) => ({ id: r.id, appId: r.app_id, runId: r.workflow_run_id, nodeId: r.node_id, definition: r.definition, token: r.token, expirationTime: Number(r.expiration_time), createdAt: Number(r.created_at) }));
  }

  async byId(id: string): Promise<StoredForm | undefined> {
    const r = await this.#db.selectFrom('human_input_forms').selectAll().where('id', '=', id).executeTakeFirst();
    return r && toForm(r);
  }

  async byTokenHash(hash: string): Promise<StoredForm | undefined> {
    const r = await this.#db.selectFrom('human_input_forms').selectAll().where('token_hash', '=', hash).executeTakeFirst();
    return r && toForm(r);
  }

  /** The form id behind a recipient's personal token hash, if any. */
  async formIdOfRecipientTokenHash(hash: string): Promise<string | undefined> {
    const r = await this.#db.selectFrom('human_input_form_recipients').select('form_id').where('token_hash', '=', hash).executeTakeFirst();
    return r?.form_id;
  }

  /** Inserts the form unless its (run, node) exists; true when this call inserted it. */
  async insert(form: StoredForm, ex: Kysely<Database> = this.#db): Promise<boolean> {
    const ins = await ex.insertInto('human_input_forms').values(form).onConflict((oc) => oc.columns(['workflow_run_id', 'node_id']).doNothing()).executeTakeFirst();
    return Number(ins.numInsertedOrUpdatedRows ?? 1n) !== 0;
  }

  async insertDelivery(d: { id: string; formId: string; type: string; config: string; status: DeliveryStatus; now: number }, ex: Kysely<Database> = this.#db): Promise<void> {
    await ex.insertInto('human_input_deliveries').values({ id: d.id, form_id: d.formId, type: d.type, config: d.config, status: d.status, last_error: null, created_at: d.now }).execute();
  }

  async failDelivery(id: string, error: string, ex: Kysely<Database> = this.#db): Promise<void> {
    await ex.updateTable('human_input_deliveries').set({ status: 'failed', last_error: error }).where('id', '=', id).execute();
  }

  /** Writes the recipients of one email delivery; returns their ids. */
  async insertRecipients(formId: string, deliveryId: string, recipients: readonly TokenedRecipient[], now: number, ex: Kysely<Database> = this.#db): Promise<string[]> {
    const ids: string[] = [];
    for (const r of recipients) {
      const id = newId();
      ids.push(id);
      await ex
        .insertInto('human_input_form_recipients')
        .values({ id, form_id: formId, delivery_id: deliveryId, type: r.type, email: r.email, token_hash: r.tokenHash, token: r.sealedToken, status: 'pending', attempts: 0, last_error: null, sent_at: null, created_at: now, updated_at: now })
        .execute();
    }
    return ids;
  }

  /** Compare-and-set of a form's status; true when this caller made the change. */
  async transition(id: string, from: FormStatus, to: FormStatus, now: number, extra: Partial<HumanInputFormTable> = {}, ex: Kysely<Database> = this.#db): Promise<boolean> {
    const res = await ex.updateTable('human_input_forms').set({ ...extra, status: to, updated_at: now }).where('id', '=', id).where('status', '=', from).executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }

  async status(id: string): Promise<FormStatus> {
    const r = await this.#db.selectFrom('human_input_forms').select('status').where('id', '=', id).executeTakeFirstOrThrow();
    return r.status as FormStatus;
  }

  /** Closes a run's waiting forms. */
  async closeWaiting(runId: string, now: number): Promise<void> {
    await this.#db.updateTable('human_input_forms').set({ status: 'closed', updated_at: now }).where('workflow_run_id', '=', runId).where('status', '=', 'waiting').execute();
  }

  /** Whether a form of the run at one of the nodes was submitted or timed out. */
  async hasResolved(runId: string, nodeIds: readonly string[]): Promise<boolean> {
    if (nodeIds.length === 0) return false;
    const r = await this.#db
      .selectFrom('human_input_forms')
      .select('id')
      .where('workflow_run_id', '=', runId)
      .where('node_id', 'in', [...nodeIds])
      .where('status', 'in', ['submitted', 'timeout'])
      .executeTakeFirst();
    return r !== undefined;
  }

  /** Waiting forms past a deadline, earliest node deadline first. */
  async due(now: number, limit: number): Promise<StoredForm[]> {
    const rows = await this.#db
      .selectFrom('human_input_forms')
      .selectAll()
      .where('status', '=', 'waiting')
      .where((eb) => eb.or([eb('expiration_time', '<=', now), eb('global_deadline', '<=', now)]))
      .orderBy('expiration_time')
      .limit(limit)
      .execute();
    return rows.map(toForm);
  }

  /** Forms whose web-app token is still stored plain (rows from before migration 016). */
  async plainFormTokens(): Promise<{ id: string; token: string }[]> {
    const rows = await this.#db.selectFrom('human_input_forms').select(['id', 'token']).where('token', 'is not', null).where('token', 'not like', 'dovetail-sealed:%').execute();
    return rows.map((r) => ({ id: r.id, token: r.token! }));
  }

  async sealFormToken(id: string, plain: string, sealed: string, hash: string): Promise<void> {
    await this.#db.updateTable('human_input_forms').set({ token: sealed, token_hash: hash }).where('id', '=', id).where('token', '=', plain).execute();
  }

  /** Recipients whose token is still stored plain (rows from before migration 020). */
  async plainRecipientTokens(): Promise<{ id: string; token: string }[]> {
    const rows = await this.#db.selectFrom('human_input_form_recipients').select(['id', 'token']).where('token', 'is not', null).where('token', 'not like', 'dovetail-sealed:%').execute();
    return rows.map((r) => ({ id: r.id, token: r.token! }));
  }

  async sealRecipientToken(id: string, plain: string, sealed: string): Promise<void> {
    await this.#db.updateTable('human_input_form_recipients').set({ token: sealed }).where('id', '=', id).where('token', '=', plain).execute();
  }

  /** Every email recipient of a run's forms with its state (never its token). */
  recipientsOfRun(runId: string): Promise<RecipientState[]> {
    return this.#db
      .selectFrom('human_input_form_recipients as r')
      .innerJoin('human_input_forms as f', 'f.id', 'r.form_id')
      .select(['r.form_id', 'f.node_id', 'r.email', 'r.type', 'r.status', 'r.attempts', 'r.last_error'])
      .where('f.workflow_run_id', '=', runId)
      .orderBy('r.created_at')
      .orderBy('r.id')
      .execute();
  }

  async recipientMail(recipientId: string): Promise<RecipientMailRow | undefined> {
    const r = await this.#db
      .selectFrom('human_input_form_recipients as r')
      .innerJoin('human_input_deliveries as d', 'd.id', 'r.delivery_id')
      .innerJoin('human_input_forms as f', 'f.id', 'r.form_id')
      .select(['r.id', 'r.delivery_id', 'r.email', 'r.token', 'r.status', 'd.config', 'f.status as form_status'])
      .where('r.id', '=', recipientId)
      .executeTakeFirst();
    if (!r) return undefined;
    return { id: r.id, deliveryId: r.delivery_id, email: r.email, token: r.token, status: r.status as RecipientStatus, deliveryConfig: r.config, formStatus: r.form_status as FormStatus };
  }

  /** Drops the sealed token of a recipient. */
  async forgetRecipientToken(recipientId: string, now: number): Promise<void> {
    await this.#db.updateTable('human_input_form_recipients').set({ token: null, updated_at: now }).where('id', '=', recipientId).where('token', 'is not', null).execute();
  }

  /** Records one attempt's outcome; `final` failures mark the recipient and its delivery `failed`. */
  async recordAttempt(recipientId: string, now: number, outcome: AttemptOutcome, countAttempt: boolean): Promise<void> {
    await this.#db.transaction().execute(async (trx) => {
      const r = await trx.selectFrom('human_input_form_recipients').select(['delivery_id', 'attempts']).where('id', '=', recipientId).executeTakeFirst();
      if (!r) return;
      const status: RecipientStatus = outcome.ok ? 'sent' : outcome.final ? 'failed' : 'pending';
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

  /**
   * Uploads made through a form's web surface (by its web user, session `webUserPrefix` + form id)
   * whose form is no longer waiting and whose submission does not name them: files a person
   * uploaded and then did not submit. Read-only here; the files side deletes them. At most `limit`.
   */
  async unsubmittedUploads(webUserPrefix: string, limit: number): Promise<string[]> {
    const rows = await this.#db
      .selectFrom('upload_files as uf')
      .innerJoin('end_users as eu', (j) => j.onRef('eu.id', '=', 'uf.created_by').onRef('eu.app_id', '=', 'uf.app_id'))
      .innerJoin('human_input_forms as f', (j) => j.on(sql<string>`${webUserPrefix} || ${sql.ref('f.id')}`, '=', sql.ref('eu.session_id')))
      .select('uf.id')
      .where('eu.session_id', 'like', `${webUserPrefix}%`)
      .where('f.status', '!=', 'waiting')
      .where((eb) => eb.or([eb('f.submitted_data', 'is', null), eb('f.submitted_data', 'not like', sql<string>`'%' || ${sql.ref('uf.id')} || '%'`)]))
      .limit(limit)
      .execute();
    return rows.map((r) => r.id);
  }

  /** Deletes an app's forms with their deliveries (`app delete --purge`, in its transaction). */
  async purgeApp(appId: string): Promise<void> {
    const forms = this.#db.selectFrom('human_input_forms').select('id').where('app_id', '=', appId);
    await this.#db.deleteFrom('human_input_deliveries').where('form_id', 'in', forms).execute();
    await this.#db.deleteFrom('human_input_forms').where('app_id', '=', appId).execute();
  }
}
