import type { Kysely } from 'kysely';
import type { Config } from '../config.js';
import type { Database } from '../store/schema.js';
import { AccountStore } from '../accounts/account-store.js';
import { FormStore, type FormStatus, type StoredForm } from './form-store.js';
import type { Clock } from '../infra/clock.js';
import type { Logger } from '../infra/logger.js';
import { newId, newSecret, sha256 } from '../infra/ids.js';
import type { SecretBox } from '../infra/secret-box.js';
import type { EndUserService } from '../apps/end-users.js';
import type { UploadService } from '../files/upload-service.js';
import { formExpired, formNotFound, formSubmitted } from './errors.js';
import {
  buildDefinition,
  hasWebappDelivery,
  renderSubmitted,
  requiredPayload,
  timeoutMs,
  type FormDefinition,
} from './form-definition.js';
import { TIMEOUT_HANDLE, type HumanInputContext, type HumanInputDecision, type HumanInputGateway, type RunResumer } from './human-input-port.js';
import { checkActionAndPresence, resolveValues } from './submission.js';
import type { Queue } from '../infra/queue/queue.js';
import { resolveRecipients, URL_PLACEHOLDER, withTokens, type RenderedEmail, type TokenedRecipient } from './form-recipients.js';
import type { AppStore } from '../apps/app-store.js';

/** Queue kind of one Human Input email (payload `{ recipientId }`); handled by src/mail. */
export const HUMAN_INPUT_MAIL_JOB = 'human-input.mail';

export { FORM_STATUSES, type FormStatus } from './form-store.js';

/** `GET /form/human_input/{token}` body. */
export interface FormView {
  readonly form_content: string;
  readonly inputs: readonly Record<string, unknown>[];
  readonly resolved_default_values: Readonly<Record<string, string>>;
  readonly user_actions: readonly { id: string; title: string; button_style: string }[];
  readonly expiration_time: number;
}

export interface SubmitInput {
  readonly appId: string;
  readonly workspaceId: string;
  readonly token: string;
  readonly action: string;
  readonly inputs: Record<string, unknown>;
  readonly user: string;
}

/** A form reached through the web surface (`/api/form/human_input/{token}`, `/form/{token}`). */
export interface WebFormView extends FormView {
  readonly appId: string;
  readonly formId: string;
  readonly nodeTitle: string;
}

/** Where a web token leads when the form cannot be answered (for the people-facing pages). */
export type WebFormState = { readonly state: 'open'; readonly form: WebFormView } | { readonly state: 'submitted' | 'expired' | 'not_found' };

export interface WebSubmitInput {
  readonly token: string;
  readonly action: string;
  readonly inputs: Record<string, unknown>;
}

export interface FormServiceDeps {
  readonly db: Kysely<Database>;
  /** The workspace of a form's app (web submissions). */
  readonly apps: Pick<AppStore, 'workspaceOf'>;
  /** Email deliveries are queued in the transaction that creates the form. */
  readonly queue: Queue;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly config: Config;
  readonly uploads: UploadService;
  readonly endUsers: EndUserService;
  /** Seals web-app and email recipients' tokens at rest (only their hash is looked up). */
  readonly box: SecretBox;
  /** The run side; resolved lazily because runs and forms reference each other. */
  readonly resumer: () => RunResumer;
}

/** The repeatable job that times out and expires forms past their deadlines. */
export const FORM_TIMEOUT_SCAN_JOB = 'forms.timeout-scan';
/** The repeatable job that deletes files uploaded through a form's web surface and never submitted. */
export const FORM_UPLOAD_SWEEP_JOB = 'forms.upload-sweep';
/** Files deleted per sweep pass at most (the next pass goes on). */
const UPLOAD_SWEEP_BATCH = 200;

/**
 * Human Input forms: created when a run reaches the node, fetched and submitted by token, timed
 * out by a repeatable scan job. Implements the engine's HumanInputGateway. Every state change is a
 * compare-and-set on `status`, so concurrent submits, timeouts and stops have exactly one winner.
 */
export class FormService implements HumanInputGateway {
  readonly #d: FormServiceDeps;
  readonly #store: FormStore;
  /** Scans run one after another; a caller waits for the scans before its own. */
  #scans: Promise<unknown> = Promise.resolve();

  constructor(deps: FormServiceDeps) {
    this.#d = deps;
    this.#store = new FormStore(deps.db);
  }

  async decide(ctx: HumanInputContext): Promise<HumanInputDecision> {
    const row = (await this.#store.byRunNode(ctx.runId, ctx.nodeId)) ?? (await this.#create(ctx));
    const def = JSON.parse(row.definition) as FormDefinition;
    const status = row.status;
    if (status === 'submitted') {
      const values = JSON.parse(row.submitted_data ?? '{}') as Record<string, unknown>;
      const action = def.actions.find((a) => a.id === row.selected_action_id)!;
      const rendered = renderSubmitted(def.formContent, values);
      return {
        type: 'completed',
        handle: action.id,
        inputs: values,
        outputs: { ...values, __action_id: action.id, __action_value: action.title, __rendered_content: rendered },
        filled: { node_id: ctx.nodeId, node_title: def.nodeTitle, rendered_content: rendered, action_id: action.id, action_text: action.title, submitted_data: values },
      };
    }
    if (status === 'waiting' && ctx.now >= row.expiration_time) {
      await this.#transition(row.id, 'waiting', 'timeout');
      return this.#timeoutDecision(ctx.nodeId, def, row);
    }
    if (status === 'timeout') return this.#timeoutDecision(ctx.nodeId, def, row);
    if (status === 'waiting') return { type: 'pause', required: requiredPayload(row.id, row.node_id, def, row.token === null ? null : await this.#d.box.open(row.token), row.expiration_time) };
    throw new Error(`Human input form ${row.id} is ${status}; the run cannot continue at node ${ctx.nodeId}`);
  }

  #timeoutDecision(nodeId: string, def: FormDefinition, row: StoredForm): HumanInputDecision {
    const defaults: Record<string, unknown> = {};
    for (const input of def.inputs) defaults[input.output_variable_name] = def.resolvedDefaults[input.output_variable_name] ?? (input.type === 'file-list' ? [] : input.type === 'file' ? null : '');
    return {
      type: 'timeout',
      handle: TIMEOUT_HANDLE,
      outputs: { ...defaults, __action_id: '', __action_value: '', __rendered_content: def.formContent },
      timeout: { node_id: nodeId, node_title: def.nodeTitle, expiration_time: Math.floor(row.expiration_time / 1000) },
    };
  }

  async #create(ctx: HumanInputContext): Promise<StoredForm> {
    const { db, config } = this.#d;
    const def = buildDefinition(ctx);
    const now = ctx.now;
    const globalMs = config.humanInputGlobalTimeoutSeconds * 1000;
    const token = hasWebappDelivery(def) ? newSecret(24) : null;
    const row: StoredForm = {
      id: newId(),
      app_id: ctx.appId,
      workflow_run_id: ctx.runId,
      node_id: ctx.nodeId,
      end_user_id: ctx.endUserId,
      definition: JSON.stringify(def),
      status: 'waiting',
      token: token === null ? null : await this.#d.box.seal(token),
      token_hash: token === null ? null : sha256(token),
      expiration_time: now + timeoutMs(ctx.data),
      global_deadline: globalMs > 0 ? now + globalMs : null,
      selected_action_id: null,
      submitted_data: null,
      submitted_at: null,
      submission_end_user_id: null,
      created_at: now,
      updated_at: now,
    };
    // Recipients and their tokens are made before the transaction (sealing may read the server key).
    const recipientsOf = new Map<number, TokenedRecipient[]>();
    for (const [i, m] of def.deliveryMethods.entries()) {
      if (m.type === 'email') recipientsOf.set(i, await withTokens(this.#d.box, await resolveRecipients(new AccountStore(db), m.config)));
    }
    let mails = 0;
    await db.transaction().execute(async (trx) => {
      if (!(await this.#store.insert(row, trx))) return;
      for (const [i, m] of def.deliveryMethods.entries()) {
        const deliveryId = newId();
        const config = m.type === 'email' ? { ...m.config, rendered: renderEmail(ctx, m.config) } : m.config;
        await this.#store.insertDelivery({ id: deliveryId, formId: row.id, type: m.type, config: JSON.stringify(config), status: m.type === 'webapp' ? 'delivered' : 'pending', now }, trx);
        if (m.type !== 'email') continue;
        const recipients = recipientsOf.get(i) ?? [];
        if (recipients.length === 0) {
          await this.#store.failDelivery(deliveryId, 'No recipients: no external address and no member account with an email address', trx);
        }
        for (const recipientId of await this.#store.insertRecipients(row.id, deliveryId, recipients, now, trx)) {
          await this.#d.queue.enqueue(HUMAN_INPUT_MAIL_JOB, { recipientId }, { tx: trx });
          mails++;
        }
      }
    });
    if (mails > 0) this.#d.queue.notify();
    // A concurrent creator may have won the unique (run, node) key: use the stored row.
    const stored = await this.#store.byRunNode(ctx.runId, ctx.nodeId);
    if (!stored) throw new Error(`Human input form of run ${ctx.runId} at node ${ctx.nodeId} vanished after it was written`);
    return stored;
  }

  /** Compare-and-set of a form's status; true when this caller made the change. */
  #transition(id: string, from: FormStatus, to: FormStatus, extra: Partial<StoredForm> = {}, tx?: Kysely<Database>): Promise<boolean> {
    return this.#store.transition(id, from, to, this.#d.clock.now(), extra, tx);
  }

  /** The form behind a token, checked like Dify: 404 unless it is this app's web-app form, then 412s. */
  async #activeForm(appId: string, token: string): Promise<{ row: StoredForm; def: FormDefinition }> {
    const row = await this.#formByWebappToken(token);
    if (!row || row.app_id !== appId) throw formNotFound();
    const def = JSON.parse(row.definition) as FormDefinition;
    if (!hasWebappDelivery(def)) throw formNotFound();
    return this.#checkActive(row, def);
  }

  /** The form of a web-app token (the Service API's and the web surface's). */
  async #formByWebappToken(token: string): Promise<StoredForm | undefined> {
    if (token === '' || token.length > 200) return undefined;
    // looked up by hash (the table keeps no plain web-app token), so the database compares digests, not secrets
    return this.#store.byTokenHash(sha256(token));
  }

  /** The form of any token the web surface accepts: a web-app token or an email recipient's personal token. */
  async #formByWebToken(token: string): Promise<StoredForm | undefined> {
    const byWebapp = await this.#formByWebappToken(token);
    if (byWebapp) return hasWebappDelivery(JSON.parse(byWebapp.definition) as FormDefinition) ? byWebapp : undefined;
    if (token === '' || token.length > 200) return undefined;
    // by hash too: the table keeps no plain recipient token (see #formByWebappToken)
    const formId = await this.#store.formIdOfRecipientTokenHash(sha256(token));
    return formId === undefined ? undefined : this.#store.byId(formId);
  }

  #checkActive(row: StoredForm, def: FormDefinition): { row: StoredForm; def: FormDefinition } {
    const now = this.#d.clock.now();
    if (row.status === 'submitted') throw formSubmitted(row.id);
    const pastDeadline = now >= row.expiration_time || (row.global_deadline !== null && now >= row.global_deadline);
    if (row.status !== 'waiting' || pastDeadline) {
      if (row.status === 'waiting') void this.scanTimeouts();
      throw formExpired(row.id);
    }
    return { row, def };
  }

  async getForm(appId: string, token: string): Promise<FormView> {
    const { row, def } = await this.#activeForm(appId, token);
    return this.#view(row, def);
  }

  #view(row: StoredForm, def: FormDefinition): FormView {
    return {
      form_content: def.formContent,
      inputs: def.inputs,
      resolved_default_values: def.resolvedDefaults,
      user_actions: def.actions,
      expiration_time: Math.floor(row.expiration_time / 1000),
    };
  }

  /** Validates and records a submission, then resumes the run. Any rejection leaves the form open. */
  async submit(input: SubmitInput): Promise<void> {
    const { row, def } = await this.#activeForm(input.appId, input.token);
    await this.#submitRow(row, def, input);
  }

  async #submitRow(found: StoredForm, foundDef: FormDefinition, input: SubmitInput): Promise<void> {
    const { row, def } = this.#checkActive(found, foundDef);
    checkActionAndPresence(def.actions, def.inputs, input.action, input.inputs);
    const endUser = await this.#d.endUsers.getOrCreate(input.appId, input.user);
    const values = await resolveValues(def.inputs, input.inputs, {
      workspaceId: input.workspaceId,
      appId: input.appId,
      endUserId: endUser.id,
      uploads: this.#d.uploads,
      limits: this.#d.config.upload,
      allowHosts: this.#d.config.ssrfAllowHosts,
    });
    // the submission and the run's resume commit together: a crash between them loses nothing
    const won = await this.#d.db.transaction().execute(async (tx) => {
      const ok = await this.#transition(row.id, 'waiting', 'submitted', {
        selected_action_id: input.action,
        submitted_data: JSON.stringify(values),
        submitted_at: this.#d.clock.now(),
        submission_end_user_id: endUser.id,
      }, tx);
      if (ok) await this.#d.resumer().resume(row.workflow_run_id, tx);
      return ok;
    });
    if (!won) {
      throw (await this.#store.status(row.id)) === 'submitted' ? formSubmitted(row.id) : formExpired(row.id);
    }
    this.#d.queue.notify();
  }

  /**
   * Forms still waiting in the apps `appIds` (the console's "Forms waiting"), soonest deadline
   * first: the run and node, the node's title, the web token (opened; null for an email-only form)
   * and the deadline.
   */
  async waitingInApps(appIds: readonly string[], limit: number): Promise<{ id: string; appId: string; runId: string; nodeId: string; nodeTitle: string; token: string | null; expirationTime: number; createdAt: number }[]> {
    const rows = await this.#store.waitingOfApps(appIds, limit);
    return Promise.all(
      rows.map(async (r) => {
        let nodeTitle = r.nodeId;
        try {
          nodeTitle = (JSON.parse(r.definition) as FormDefinition).nodeTitle || r.nodeId;
        } catch {
          // a definition that does not parse: the node id names it
        }
        return { id: r.id, appId: r.appId, runId: r.runId, nodeId: r.nodeId, nodeTitle, token: r.token === null ? null : await this.#d.box.open(r.token), expirationTime: r.expirationTime, createdAt: r.createdAt };
      }),
    );
  }

  /** `GET /api/form/human_input/{token}`: the open form behind a web token (404 / 412 as the Service API). */
  async getWebForm(token: string): Promise<WebFormView> {
    const row = await this.#formByWebToken(token);
    if (!row) throw formNotFound();
    const { def } = this.#checkActive(row, JSON.parse(row.definition) as FormDefinition);
    return { ...this.#view(row, def), appId: row.app_id, formId: row.id, nodeTitle: def.nodeTitle };
  }

  /** The state of a web token for the people-facing pages (never throws for a missing or closed form). */
  async webFormState(token: string): Promise<WebFormState> {
    try {
      return { state: 'open', form: await this.getWebForm(token) };
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (code === 'human_input_form_submitted') return { state: 'submitted' };
      if (code === 'human_input_form_expired') return { state: 'expired' };
      if (code === 'not_found') return { state: 'not_found' };
      throw err;
    }
  }

  /**
   * The end-user session a web token acts as (uploads through the page and the submission share
   * it, so a submission may only use files uploaded through the same form).
   */
  static webUser(formId: string): string {
    return `human-input-form:${formId}`;
  }

  /** `POST /api/form/human_input/{token}` and the form page: the same checks, texts and resume as the Service API submit. */
  async submitWeb(input: WebSubmitInput): Promise<void> {
    const row = await this.#formByWebToken(input.token);
    if (!row) throw formNotFound();
    const workspaceId = await this.#d.apps.workspaceOf(row.app_id);
    if (workspaceId === undefined) throw formNotFound();
    await this.#submitRow(row, JSON.parse(row.definition) as FormDefinition, {
      appId: row.app_id,
      workspaceId,
      token: input.token,
      action: input.action,
      inputs: input.inputs,
      user: FormService.webUser(row.id),
    });
  }

  async closeForms(runId: string): Promise<void> {
    await this.#store.closeWaiting(runId, this.#d.clock.now());
  }

  /** Forms of a run that were resolved (submitted or timed out); the run side uses it to re-check after pausing. */
  async hasResolvedForms(runId: string, nodeIds: readonly string[]): Promise<boolean> {
    return this.#store.hasResolved(runId, nodeIds);
  }

  /**
   * One pass over waiting forms past a deadline: node timeout → `timeout` and resume along
   * `__timeout`; global timeout → `expired` and the run is stopped. Safe to run on every instance.
   */
  scanTimeouts(): Promise<number> {
    const next = this.#scans.then(() => this.#scanOnce());
    this.#scans = next.catch(() => undefined);
    return next;
  }

  async #scanOnce(): Promise<number> {
    const now = this.#d.clock.now();
    const due = await this.#store.due(now, 100);
    let n = 0;
    for (const row of due) {
      try {
        if (row.global_deadline !== null && row.global_deadline <= now) {
          if (await this.#transition(row.id, 'waiting', 'expired')) {
            n++;
            await this.#d.resumer().stop(row.workflow_run_id, `Human input global timeout at node ${row.node_id}`);
          }
        } else if (await this.#transition(row.id, 'waiting', 'timeout')) {
          n++;
          await this.#d.resumer().resume(row.workflow_run_id);
        }
      } catch (err) {
        this.#d.logger.error({ err, formId: row.id }, 'human input timeout handling failed');
      }
    }
    return n;
  }

  /** Seals the plain tokens of rows written before migration 016 (their hash is already set). */
  async sealLegacyTokens(): Promise<number> {
    const rows = await this.#store.plainFormTokens();
    for (const r of rows) await this.#store.sealFormToken(r.id, r.token, await this.#d.box.seal(r.token), sha256(r.token));
    return rows.length;
  }

  /**
   * Declares the deadline scan as a repeatable job (`HUMAN_INPUT_TIMEOUT_SCAN_MS`): one worker of
   * the deployment scans per tick, instead of a timer in every process.
   */
  async scheduleTimeoutScan(): Promise<void> {
    this.#d.queue.register(FORM_TIMEOUT_SCAN_JOB, { run: async () => void (await this.scanTimeouts()) });
    await this.#d.queue.repeat(FORM_TIMEOUT_SCAN_JOB, this.#d.config.humanInputScanIntervalMs);
    this.#d.queue.register(FORM_UPLOAD_SWEEP_JOB, { run: async () => void (await this.sweepUnsubmittedUploads()) });
    await this.#d.queue.repeat(FORM_UPLOAD_SWEEP_JOB, this.#d.config.humanInputUploadSweepSeconds * 1000);
  }

  /**
   * Deletes files uploaded through a form's web surface (the form page, `/api/form/human_input/
   * {token}/files/upload`) once the form is no longer waiting (submitted, timed out, expired,
   * closed) and its submission does not name them. Files a submission names stay: the run reads
   * them. Returns how many were deleted (at most one batch per pass).
   */
  async sweepUnsubmittedUploads(): Promise<number> {
    const ids = await this.#store.unsubmittedUploads(FormService.webUser(''), UPLOAD_SWEEP_BATCH);
    let n = 0;
    for (const id of ids) {
      try {
        await this.#d.uploads.remove(id);
        n++;
      } catch (err) {
        this.#d.logger.warn({ err, fileId: id }, 'unsubmitted form upload not deleted (the next sweep retries)');
      }
    }
    if (n > 0) this.#d.logger.info({ files: n }, 'deleted files uploaded to forms that ended without them');
    return n;
  }
}

/**
 * Subject and body of an email delivery with the run's variables filled in, each as the pieces of
 * the DSL's template between its `{{#url#}}` placeholders, rendered one by one: the sender joins
 * them with the recipient's link, so a `{{#url#}}` inside a run value stays text and never
 * becomes the link.
 */
function renderEmail(ctx: HumanInputContext, config: Readonly<Record<string, unknown>>): RenderedEmail {
  const render = (t: unknown) => (typeof t === 'string' ? t : '').split(URL_PLACEHOLDER).map((piece) => ctx.render(piece));
  return { subject: render(config.subject), body: render(config.body) };
}
