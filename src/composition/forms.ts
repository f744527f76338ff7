import { FormRecipients } from '../forms/form-recipients.js';
import { FormService, HUMAN_INPUT_MAIL_JOB, type FormServiceDeps } from '../forms/form-service.js';
import { mailNotConfigured } from '../mail/mail-config.js';
import { SmtpTransport } from '../mail/smtp-transport.js';
import { humanInputMailHandler, type MailJobPayload } from '../mail/human-input-mail.js';

/**
 * The Human Input side of the composition root: the form service, its email recipients and the
 * mail job that delivers them (with the start-up warning when mail is not configured).
 */
export async function createForms(d: FormServiceDeps): Promise<{ forms: FormService; formRecipients: FormRecipients; close(): Promise<void> }> {
  const { config, logger } = d;
  const forms = new FormService(d);
  await forms.sealLegacyTokens();
  await forms.scheduleTimeoutScan();
  const formRecipients = new FormRecipients(d.db, d.box);
  await formRecipients.sealLegacyTokens();
  const mailProblem = mailNotConfigured(config.mail);
  // Said once, by the processes that send (those running the job worker); one-shot CLI commands stay quiet.
  if (mailProblem && config.queue.worker) logger.warn(`${mailProblem}. Human Input email deliveries will fail until then.`);
  const transport = mailProblem ? undefined : new SmtpTransport(config.mail);
  d.queue.register<MailJobPayload>(
    HUMAN_INPUT_MAIL_JOB,
    humanInputMailHandler({ recipients: formRecipients, transport, notConfigured: mailProblem, appWebUrl: config.webForms.appWebUrl, clock: d.clock, logger }),
  );
  return { forms, formRecipients, close: async () => transport?.close() };
}
