import type { FormRecipients } from '../forms/form-recipients.js';
import type { Clock } from '../infra/clock.js';
import type { Logger } from '../infra/logger.js';
import type { JobContext, JobHandler } from '../infra/queue/queue.js';
import { formLink, formMail } from './form-mail.js';
import { MailSendError, type MailTransport } from './smtp-transport.js';

export interface MailJobPayload {
  readonly recipientId: string;
}

export interface HumanInputMailDeps {
  readonly recipients: FormRecipients;
  /** Undefined when mail is not configured; then `notConfigured` names the settings. */
  readonly transport: MailTransport | undefined;
  readonly notConfigured: string | undefined;
  readonly appWebUrl: string;
  readonly clock: Clock;
  readonly logger: Logger;
}

/**
 * The queue handler that sends one Human Input email (Dify's `dispatch_human_input_email_task`,
 * one job per recipient). Idempotent: a recipient already sent, or a form no longer waiting, is
 * skipped. A failure that a retry can fix is recorded and thrown (the queue retries with back-off);
 * a permanent one (mail not configured, authentication refused) is recorded as final at once.
 * The run is never touched: a failed delivery leaves it paused.
 */
export function humanInputMailHandler(d: HumanInputMailDeps): JobHandler<MailJobPayload> {
  return {
    async run(p: MailJobPayload, _ctx: JobContext): Promise<void> {
      const mail = await d.recipients.outgoing(p.recipientId);
      if (!mail) return;
      if (!mail.wanted) {
        await d.recipients.forget(mail.recipientId, d.clock.now());
        return;
      }
      if (!d.transport) {
        await d.recipients.record(mail.recipientId, d.clock.now(), { ok: false, error: d.notConfigured ?? 'Mail is not configured', final: true });
        return;
      }
      const content = formMail(mail.subject, mail.body, formLink(d.appWebUrl, mail.token));
      try {
        await d.transport.send({ to: mail.email, ...content });
      } catch (err) {
        const message = err instanceof Error ? err.message : String(err);
        const final = err instanceof MailSendError && err.permanent;
        await d.recipients.record(mail.recipientId, d.clock.now(), { ok: false, error: message, final });
        d.logger.warn({ recipientId: mail.recipientId, error: message, final }, 'human input email not sent');
        if (final) return;
        throw err;
      }
      await d.recipients.record(mail.recipientId, d.clock.now(), { ok: true });
    },
    async onFailed(p: MailJobPayload, error: string): Promise<void> {
      // The last attempt was already counted (and its error recorded) by `run`.
      await d.recipients.record(p.recipientId, d.clock.now(), { ok: false, error, final: true }, false);
    },
  };
}
